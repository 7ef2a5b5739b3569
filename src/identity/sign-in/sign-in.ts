import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import type { Assertion, AssertionSource } from '../../a2a/options.js';
import {
  IdentityExchangeRefusedError,
  IdentityProviderUnavailableError,
  SignInRequiredError,
} from '../../core/agent/errors.js';
import type { IdentityLinkStore } from '../../core/identity-link-store.js';
import type { Caller, SignOut } from '../../core/ports.js';
import type { Keyring } from '../../core/sealing.js';
import { personSubject, subjectOf } from '../assertions.js';
import { OidcProvider, ProviderRefusedError, type ProviderSettings, pkcePair } from './provider.js';

/**
 * "Sign in once" (docs/identity.md): for a Binding whose provider neither trusts the broker's
 * assertion nor exchanges it, each person links their account. A person's first turn is held
 * (SignInRequiredError, with a link); the link goes to the broker, which sends the browser to the
 * provider (authorization code with PKCE); the provider sends it back with a code, which the
 * broker redeems. The ID token's email must be the chat profile's; then the refresh token is kept
 * sealed in the store, the session is kicked, and the held turn goes with the person's access
 * token. Every later turn takes a fresh access token (kept in memory until shortly before it
 * expires, else refreshed); a refresh the provider refuses ends the link, and the person is asked
 * to sign in again, the message held. Never sent under another identity.
 *
 * What travels through the browser (the link, the provider's `state`) is sealed with the
 * broker's sealing keys: any replica can finish a sign-in another started, and nobody can forge
 * one or read the PKCE verifier in it.
 */

export const SIGN_IN_PATH = '/identity/sign-in';
export const CALLBACK_PATH = '/identity/callback';
/** How long a sign-in link works: the turn it holds waits as long (the engine's give-up time). */
const LINK_TTL_MS = 15 * 60_000;

/** A Binding's sign-in, its client secret already read from its Secret. */
export interface SignInBinding {
  provider: ProviderSettings;
  /** The agent the tokens are for (its AgentBackend's name), named to the person. */
  agent: string;
}

export interface SignInOptions {
  /** The store's links (read when a call needs them: local mode opens its store after its Bindings). */
  links: () => IdentityLinkStore;
  /** Seals refresh tokens at rest and what the browser carries. */
  keyring: Keyring;
  /** The URL people's browsers reach the broker at: the link and the provider's redirect go there. */
  publicUrl: () => string;
  /** A person signed in for this session's turn: drive it now. */
  onLinked: (sessionId: string) => void;
  now?: () => number;
}

/** The person the link is for, and the turn it holds (sealed into the link). */
const linkState = z.object({
  b: z.string(),
  sub: z.string(),
  pid: z.string(),
  email: z.string(),
  sid: z.string(),
  exp: z.number(),
});
/** What the provider carries back in `state`: the link's state, the PKCE verifier and the nonce. */
const flowState = linkState.extend({ v: z.string(), n: z.string() });

/** What the callback page tells the person. */
export type SignInOutcome =
  | { ok: true; agent: string; email: string }
  | { ok: false; status: number; reason: string };

interface Kept {
  token: string;
  renewAt: number;
}

export class SignIn {
  readonly #o: SignInOptions;
  readonly #now: () => number;
  readonly #bindings = new Map<string, { binding: SignInBinding; provider: OidcProvider }>();
  readonly #kept = new Map<string, Kept>();
  readonly #refreshing = new Map<string, Promise<string | undefined>>();

  constructor(options: SignInOptions) {
    this.#o = options;
    this.#now = options.now ?? Date.now;
  }

  /** The assertion source of a sign-in Binding's client: the person's access token at its provider. */
  sourceFor(ref: string, binding: SignInBinding): AssertionSource {
    this.#bindings.set(ref, { binding, provider: new OidcProvider(binding.provider) });
    return (caller) => this.#tokenFor(ref, caller);
  }

  /** The chat's "sign out": the person's links with every provider go. */
  signOut: SignOut = (person) => this.unlink(personSubject(person));

  /** The person's links with every provider go. */
  async unlink(subject: string): Promise<number> {
    for (const key of [...this.#kept.keys()]) if (key.startsWith(`${subject}\n`)) this.#kept.delete(key);
    return this.#o.links().remove(subject);
  }

  async #tokenFor(ref: string, caller: Caller | undefined): Promise<Assertion> {
    const entry = this.#bindings.get(ref);
    if (entry === undefined) throw new IdentityExchangeRefusedError('no sign-in for this Binding', ref);
    const { binding, provider } = entry;
    // A trigger's turn, or the broker's own call, has nobody to sign in: never sent as anyone.
    if (caller?.kind !== 'person')
      throw new IdentityExchangeRefusedError(
        'no person asked, and this agent takes only signed-in people',
        binding.agent,
      );
    const subject = subjectOf(caller, ref);
    const providerKey = providerKeyOf(binding.provider);
    const cacheKey = `${subject}\n${providerKey}`;
    const userId = caller.email ?? subject;
    const kept = this.#kept.get(cacheKey);
    if (kept !== undefined && this.#now() < kept.renewAt) return { token: kept.token, subject, userId };
    // One refresh at a time per person: a provider that rotates refresh tokens refuses the second.
    let refreshing = this.#refreshing.get(cacheKey);
    if (refreshing === undefined) {
      refreshing = this.#refresh(provider, subject, providerKey, cacheKey).finally(() =>
        this.#refreshing.delete(cacheKey),
      );
      this.#refreshing.set(cacheKey, refreshing);
    }
    const token = await refreshing;
    if (token !== undefined) return { token, subject, userId };
    if (caller.email === undefined)
      throw new IdentityExchangeRefusedError(
        'the chat gives no email for you, so a sign-in cannot be matched to you',
        binding.agent,
      );
    throw new SignInRequiredError(
      this.#linkUrl({
        b: ref,
        sub: subject,
        pid: caller.id,
        email: caller.email,
        sid: caller.sessionId,
        exp: this.#now() + LINK_TTL_MS,
      }),
      binding.agent,
    );
  }

  /**
   * A fresh access token from the person's link, or undefined when there is none (any more). A
   * refusal after another replica rotated the refresh token is tried once with the new one.
   */
  async #refresh(
    provider: OidcProvider,
    subject: string,
    providerKey: string,
    cacheKey: string,
  ): Promise<string | undefined> {
    const context = linkContext(subject, providerKey);
    for (let attempt = 0; attempt < 2; attempt++) {
      const link = await this.#o.links().get(subject, providerKey);
      if (link === undefined) return undefined;
      let refreshToken: string;
      try {
        refreshToken = this.#o.keyring.open(link.sealed, context);
      } catch {
        // Sealed with a key no longer listed: as good as no link.
        break;
      }
      try {
        const tokens = await provider.refresh(refreshToken);
        this.#keep(cacheKey, tokens.accessToken, tokens.expiresInS);
        if (tokens.refreshToken !== undefined && tokens.refreshToken !== refreshToken) {
          const sealed = this.#o.keyring.seal(tokens.refreshToken, context);
          await this.#o.links().put({
            ...link,
            keyId: sealed.keyId,
            sealed: sealed.sealed,
            updatedAt: this.#now(),
          });
        }
        return tokens.accessToken;
      } catch (error) {
        if (!(error instanceof ProviderRefusedError)) throw error;
        const now = await this.#o.links().get(subject, providerKey);
        if (now === undefined || now.sealed === link.sealed) break;
      }
    }
    // Expired or revoked at the provider: the link is over; the person signs in again.
    await this.#o.links().remove(subject, providerKey);
    return undefined;
  }

  /** The link in the thread: the broker's sign-in route with the person sealed in it. */
  #linkUrl(state: z.output<typeof linkState>): string {
    const sealed = this.#o.keyring.seal(JSON.stringify(state), 'sign-in-link').sealed;
    return `${this.#publicUrl()}${SIGN_IN_PATH}?s=${encodeURIComponent(sealed)}`;
  }

  /** GET the link: where to send the browser (the provider's authorization URL). */
  async begin(
    sealedLink: string,
  ): Promise<{ ok: true; location: string } | { ok: false; status: number; reason: string }> {
    const state = this.#open(sealedLink, 'sign-in-link', linkState);
    if (state === undefined) return { ok: false, status: 400, reason: 'This sign-in link is not valid.' };
    if (state.exp < this.#now())
      return {
        ok: false,
        status: 410,
        reason: 'This sign-in link has expired. Write to the agent again for a new one.',
      };
    const entry = this.#bindings.get(state.b);
    if (entry === undefined)
      return { ok: false, status: 410, reason: 'This agent no longer asks for a sign-in.' };
    const { verifier, challenge } = pkcePair();
    const nonce = randomBytes(16).toString('base64url');
    const carried = this.#o.keyring.seal(
      JSON.stringify({ ...state, v: verifier, n: nonce }),
      'sign-in-flow',
    ).sealed;
    return {
      ok: true,
      location: await entry.provider.authorizeUrl({
        state: carried,
        challenge,
        nonce,
        redirectUri: this.#redirectUri(),
      }),
    };
  }

  /** The provider's redirect: redeem the code, match the email, keep the link, send the held turn. */
  async complete(code: string, sealedFlow: string): Promise<SignInOutcome> {
    const state = this.#open(sealedFlow, 'sign-in-flow', flowState);
    if (state === undefined)
      return { ok: false, status: 400, reason: 'This sign-in is not one the broker started.' };
    if (state.exp < this.#now())
      return {
        ok: false,
        status: 410,
        reason: 'This sign-in took too long. Write to the agent again for a new link.',
      };
    const entry = this.#bindings.get(state.b);
    if (entry === undefined)
      return { ok: false, status: 410, reason: 'This agent no longer asks for a sign-in.' };
    const { binding, provider } = entry;
    let email: unknown;
    let tokens: Awaited<ReturnType<OidcProvider['redeemCode']>>;
    try {
      tokens = await provider.redeemCode({ code, verifier: state.v, redirectUri: this.#redirectUri() });
      if (tokens.idToken === undefined)
        return {
          ok: false,
          status: 502,
          reason: 'The identity provider sent no ID token (is the openid scope allowed?).',
        };
      const claims = await provider.verifyIdToken(tokens.idToken, state.n);
      email = claims[binding.provider.emailClaim];
      // Not in the ID token: the provider's UserInfo about the same subject.
      if (email === undefined && typeof claims.sub === 'string')
        email = (await provider.userinfo(tokens.accessToken, claims.sub))[binding.provider.emailClaim];
    } catch (error) {
      const said =
        error instanceof ProviderRefusedError
          ? error.providerError
          : error instanceof IdentityProviderUnavailableError
            ? 'no answer'
            : 'its ID token did not verify';
      return {
        ok: false,
        status: 502,
        reason: `The identity provider did not complete the sign-in (${said}).`,
      };
    }
    if (typeof email !== 'string' || email.toLowerCase() !== state.email.toLowerCase())
      return {
        ok: false,
        status: 403,
        reason:
          `The identity provider signed you in as ${typeof email === 'string' ? email : 'someone without an email'}, ` +
          `but your chat profile's email is ${state.email}. Sign in with that account, or ask the operator to map your accounts ` +
          `(the Binding's signIn.emailClaim).`,
      };
    if (tokens.refreshToken === undefined)
      return {
        ok: false,
        status: 502,
        reason:
          'The identity provider gave no refresh token (is the offline_access scope allowed for this client?).',
      };
    const providerKey = providerKeyOf(binding.provider);
    const sealed = this.#o.keyring.seal(tokens.refreshToken, linkContext(state.sub, providerKey));
    const now = this.#now();
    await this.#o.links().put({
      subject: state.sub,
      provider: providerKey,
      personId: state.pid,
      email: state.email,
      keyId: sealed.keyId,
      sealed: sealed.sealed,
      linkedAt: now,
      updatedAt: now,
    });
    this.#keep(`${state.sub}\n${providerKey}`, tokens.accessToken, tokens.expiresInS);
    this.#o.onLinked(state.sid);
    return { ok: true, agent: binding.agent, email: state.email };
  }

  #keep(key: string, token: string, expiresInS: number | undefined): void {
    if (expiresInS === undefined) return;
    const lifetime = expiresInS * 1000;
    this.#kept.set(key, {
      token,
      renewAt: this.#now() + lifetime - Math.min(60_000, Math.max(5_000, lifetime / 10)),
    });
    if (this.#kept.size > 10_000) {
      const oldest = this.#kept.keys().next().value;
      if (oldest !== undefined) this.#kept.delete(oldest);
    }
  }

  #open<T>(sealed: string, context: string, schema: z.ZodType<T>): T | undefined {
    try {
      const parsed = schema.safeParse(JSON.parse(this.#o.keyring.open(sealed, context)));
      return parsed.success ? parsed.data : undefined;
    } catch {
      return undefined;
    }
  }

  #publicUrl(): string {
    return this.#o.publicUrl().replace(/\/+$/, '');
  }

  #redirectUri(): string {
    return `${this.#publicUrl()}${CALLBACK_PATH}`;
  }
}

function providerKeyOf(p: ProviderSettings): string {
  return `${p.issuer.replace(/\/+$/, '')} ${p.clientId}`;
}

/** A link's sealed token opens only on its own row. */
function linkContext(subject: string, provider: string): string {
  return `identity-link\n${subject}\n${provider}`;
}
