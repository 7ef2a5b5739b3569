import type { AssertionSource, ExchangeSettings, PersonIdentity } from '../a2a/options.js';
import { IdentityExchangeRefusedError, IdentityProviderUnavailableError } from '../core/agent/errors.js';
import type { AssertionSigner } from './assertions.js';
import { subjectOf } from './assertions.js';
import type { SignIn } from './sign-in/sign-in.js';
import {
  basicAuth,
  parseJson,
  providerCall,
  refusalCode,
  tokenResponse,
  unavailable,
} from './token-endpoint.js';

/**
 * OAuth 2.0 Token Exchange (RFC 8693) at the organisation's identity provider, for a Binding whose
 * agent trusts that provider rather than the broker (docs/identity.md): before a person's call the
 * broker's signed assertion is the subject token, the provider answers with an access token for
 * the agent, and that token is what the agent gets. Kept per person until shortly before it
 * expires; concurrent calls for one person share one exchange.
 *
 * Refused (a 4xx with an OAuth error): IdentityExchangeRefusedError, the turn fails and the thread
 * hears the provider's error code. Unanswered (unreachable, a 5xx, throttled, out of time):
 * IdentityProviderUnavailableError, the turn waits. Never a fallback to the broker's assertion.
 */

export const TOKEN_EXCHANGE_GRANT = 'urn:ietf:params:oauth:grant-type:token-exchange';
const JWT_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:jwt';
const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';

export type ExchangeResult = 'ok' | 'refused' | 'unavailable';

export interface TokenExchangerOptions {
  now?: () => number;
  /** How long one exchange may take before the provider counts as not answering. */
  timeoutMs?: number;
  /** People whose tokens are kept at once; the least recently used goes first. */
  maxEntries?: number;
  /** Every exchange's result, for the metric. */
  onExchange?: (result: ExchangeResult) => void;
}

/** Shortly before it expires: a tenth of its life, at least 5 s and at most a minute. */
function renewMarginMs(lifetimeMs: number): number {
  return Math.min(60_000, Math.max(5_000, lifetimeMs / 10));
}

interface Kept {
  token: string;
  renewAt: number;
}

export class TokenExchanger {
  readonly #settings: ExchangeSettings;
  readonly #agent: string;
  readonly #now: () => number;
  readonly #timeoutMs: number;
  readonly #maxEntries: number;
  readonly #onExchange: (result: ExchangeResult) => void;
  readonly #kept = new Map<string, Kept>();
  readonly #inFlight = new Map<string, Promise<string>>();

  constructor(settings: ExchangeSettings, options: TokenExchangerOptions = {}) {
    this.#settings = settings;
    this.#agent = settings.agent;
    this.#now = options.now ?? Date.now;
    this.#timeoutMs = options.timeoutMs ?? 10_000;
    this.#maxEntries = options.maxEntries ?? 10_000;
    this.#onExchange = options.onExchange ?? (() => undefined);
  }

  /** People whose token is kept now. */
  get size(): number {
    return this.#kept.size;
  }

  /**
   * The access token for `subject`: the one kept while it has time left, else exchanged for the
   * assertion `assert` signs (called only then).
   */
  async tokenFor(subject: string, assert: () => Promise<string>): Promise<string> {
    const kept = this.#kept.get(subject);
    if (kept !== undefined && this.#now() < kept.renewAt) {
      // Most recently used last: the first entry is the one to drop.
      this.#kept.delete(subject);
      this.#kept.set(subject, kept);
      return kept.token;
    }
    const running = this.#inFlight.get(subject);
    if (running !== undefined) return running;
    const exchange = this.#exchange(subject, assert).finally(() => this.#inFlight.delete(subject));
    this.#inFlight.set(subject, exchange);
    return exchange;
  }

  async #exchange(subject: string, assert: () => Promise<string>): Promise<string> {
    const subjectToken = await assert();
    const askedAt = this.#now();
    let answer: { token: string; expiresInS: number | undefined };
    try {
      answer = await this.#post(subjectToken);
    } catch (error) {
      this.#onExchange(error instanceof IdentityExchangeRefusedError ? 'refused' : 'unavailable');
      this.#kept.delete(subject);
      throw error;
    }
    this.#onExchange('ok');
    this.#kept.delete(subject);
    // Without an expiry the provider gives no time to keep it: every call exchanges again.
    if (answer.expiresInS !== undefined) {
      const lifetimeMs = answer.expiresInS * 1000;
      this.#kept.set(subject, {
        token: answer.token,
        renewAt: askedAt + lifetimeMs - renewMarginMs(lifetimeMs),
      });
      if (this.#kept.size > this.#maxEntries) {
        const oldest = this.#kept.keys().next().value;
        if (oldest !== undefined) this.#kept.delete(oldest);
      }
    }
    return answer.token;
  }

  async #post(subjectToken: string): Promise<{ token: string; expiresInS: number | undefined }> {
    const s = this.#settings;
    const form = new URLSearchParams({
      grant_type: TOKEN_EXCHANGE_GRANT,
      subject_token: subjectToken,
      subject_token_type: JWT_TOKEN_TYPE,
      requested_token_type: ACCESS_TOKEN_TYPE,
    });
    if (s.audience !== undefined) form.set('audience', s.audience);
    if (s.scope !== undefined) form.set('scope', s.scope);
    const { status, text } = await providerCall(
      s.tokenUrl,
      {
        method: 'POST',
        headers: {
          authorization: basicAuth(s.clientId, s.clientSecret),
          'content-type': 'application/x-www-form-urlencoded',
          accept: 'application/json',
        },
        body: form,
      },
      this.#timeoutMs,
    );
    if (unavailable(status)) throw new IdentityProviderUnavailableError(`HTTP ${status}`);
    if (status < 200 || status >= 300)
      throw new IdentityExchangeRefusedError(refusalCode(status, text), this.#agent);
    const body = tokenResponse.safeParse(parseJson(text));
    if (!body.success) throw new IdentityExchangeRefusedError('invalid token response', this.#agent);
    if (body.data.token_type !== undefined && body.data.token_type.toLowerCase() !== 'bearer')
      throw new IdentityExchangeRefusedError(`token type ${body.data.token_type.slice(0, 32)}`, this.#agent);
    return { token: body.data.access_token, expiresInS: body.data.expires_in };
  }
}

/**
 * A Binding's per-person source when its identity is exchanged: the person's access token from
 * the provider where the assertion would go (X-User-Id still names the person).
 */
export function exchangingSource(
  signer: AssertionSigner,
  binding: string,
  exchanger: TokenExchanger,
): AssertionSource {
  return async (caller, audience) => {
    const subject = subjectOf(caller, binding);
    const token = await exchanger.tokenFor(
      subject,
      async () => (await signer.sign(caller, audience, binding)).token,
    );
    const email = caller?.kind === 'person' ? caller.email : undefined;
    return { token, subject, userId: email ?? subject };
  };
}

/**
 * The source of a per-person Binding's identity: the broker's assertions, with an exchange the
 * person's tokens from the provider (one exchanger per client, so a changed Binding starts
 * afresh), with a sign-in the person's own tokens from their link (sign-in/).
 */
export function personSource(
  signer: AssertionSigner,
  binding: string,
  identity: PersonIdentity,
  onExchange?: (result: ExchangeResult) => void,
  signIn?: SignIn,
): AssertionSource {
  if (identity.signIn !== undefined) {
    const { agent, ...provider } = identity.signIn;
    // Never the broker's own assertion in its place: without the sign-in service, no call.
    if (signIn === undefined)
      return async () => {
        throw new IdentityExchangeRefusedError('sign-in is not set up on this broker', agent);
      };
    return signIn.sourceFor(binding, { provider, agent });
  }
  if (identity.exchange === undefined) return signer.sourceFor(binding);
  return exchangingSource(
    signer,
    binding,
    new TokenExchanger(identity.exchange, onExchange === undefined ? {} : { onExchange }),
  );
}
