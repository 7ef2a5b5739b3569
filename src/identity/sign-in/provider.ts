import { createHash, randomBytes } from 'node:crypto';
import { createRemoteJWKSet, errors, type JWTPayload, jwtVerify } from 'jose';
import { z } from 'zod';
import { IdentityProviderUnavailableError } from '../../core/agent/errors.js';
import { KourierError } from '../../core/errors.js';
import {
  basicAuth,
  parseJson,
  providerCall,
  refusalCode,
  tokenResponse,
  unavailable,
} from '../token-endpoint.js';

/**
 * The broker as an OpenID Connect client of one provider, for people who sign in once (docs/
 * identity.md): discovery, the authorization URL with PKCE (S256), redeeming the code, refreshing
 * the person's tokens, and verifying the ID token (jose, against the provider's JWKS). The
 * provider's answers are untrusted input: parsed with zod, bounded, never followed on redirect.
 */

export interface ProviderSettings {
  /** The provider's issuer; its discovery document is at <issuer>/.well-known/openid-configuration. */
  issuer: string;
  clientId: string;
  /** A confidential client's secret (sent with HTTP Basic); none: a public client (PKCE only). */
  clientSecret?: string;
  /** Space separated; must hold openid (the ID token names the person) and offline_access. */
  scope: string;
  /** The ID token claim matched to the chat profile's email. */
  emailClaim: string;
}

/** The provider answered a token request with an OAuth error (RFC 6749 section 5.2). */
export class ProviderRefusedError extends KourierError {
  constructor(readonly providerError: string) {
    super('identity_provider_refused', `the identity provider refused (${providerError})`);
  }
}

export interface TokenSet {
  accessToken: string;
  /** Seconds, as the provider said; undefined: not said. */
  expiresInS: number | undefined;
  refreshToken: string | undefined;
  idToken: string | undefined;
}

const metadataSchema = z.object({
  issuer: z.string().min(1),
  authorization_endpoint: z.url(),
  token_endpoint: z.url(),
  jwks_uri: z.url(),
  userinfo_endpoint: z.url().optional(),
});
type Metadata = z.output<typeof metadataSchema>;

/** A PKCE pair: the verifier stays with the broker, the S256 challenge goes to the provider. */
export function pkcePair(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

export class OidcProvider {
  readonly settings: ProviderSettings;
  readonly #timeoutMs: number;
  #metadata: Promise<Metadata> | undefined;
  #keys: ReturnType<typeof createRemoteJWKSet> | undefined;

  constructor(settings: ProviderSettings, options: { timeoutMs?: number } = {}) {
    this.settings = { ...settings, issuer: settings.issuer.replace(/\/+$/, '') };
    this.#timeoutMs = options.timeoutMs ?? 10_000;
  }

  /** The discovery document, read once (read again after a failure). */
  metadata(): Promise<Metadata> {
    this.#metadata ??= this.#discover().catch((error: unknown) => {
      this.#metadata = undefined;
      throw error;
    });
    return this.#metadata;
  }

  async authorizeUrl(p: {
    state: string;
    challenge: string;
    nonce: string;
    redirectUri: string;
  }): Promise<string> {
    const url = new URL((await this.metadata()).authorization_endpoint);
    url.searchParams.set('response_type', 'code');
    url.searchParams.set('client_id', this.settings.clientId);
    url.searchParams.set('redirect_uri', p.redirectUri);
    url.searchParams.set('scope', this.settings.scope);
    url.searchParams.set('state', p.state);
    url.searchParams.set('nonce', p.nonce);
    url.searchParams.set('code_challenge', p.challenge);
    url.searchParams.set('code_challenge_method', 'S256');
    return url.toString();
  }

  redeemCode(p: { code: string; verifier: string; redirectUri: string }): Promise<TokenSet> {
    return this.#token({
      grant_type: 'authorization_code',
      code: p.code,
      code_verifier: p.verifier,
      redirect_uri: p.redirectUri,
    });
  }

  refresh(refreshToken: string): Promise<TokenSet> {
    return this.#token({ grant_type: 'refresh_token', refresh_token: refreshToken });
  }

  /** The ID token's claims, verified: signature (the provider's keys), issuer, audience, expiry, nonce. */
  async verifyIdToken(idToken: string, nonce: string): Promise<JWTPayload> {
    const metadata = await this.metadata();
    const verify = () => {
      this.#keys ??= createRemoteJWKSet(new URL(metadata.jwks_uri));
      return jwtVerify(idToken, this.#keys, { issuer: metadata.issuer, audience: this.settings.clientId });
    };
    let verified: Awaited<ReturnType<typeof verify>>;
    try {
      verified = await verify();
    } catch (error) {
      // A key the provider began to sign with since its keys were read (jose reads them again
      // only after a cool-down): read them now, once.
      if (!(error instanceof errors.JWKSNoMatchingKey)) throw error;
      this.#keys = undefined;
      verified = await verify();
    }
    const { payload } = verified;
    if (payload.nonce !== nonce)
      throw new ProviderRefusedError('the ID token is not for this sign-in (nonce)');
    return payload;
  }

  /**
   * The person's claims from the UserInfo endpoint (a provider may keep the email out of the ID
   * token), checked to be about `subject` (the verified ID token's sub).
   */
  async userinfo(accessToken: string, subject: string): Promise<Record<string, unknown>> {
    const endpoint = (await this.metadata()).userinfo_endpoint;
    if (endpoint === undefined)
      throw new ProviderRefusedError('no UserInfo endpoint, and no email in the ID token');
    const { status, text } = await this.#fetch(endpoint, {
      method: 'GET',
      headers: { authorization: `Bearer ${accessToken}`, accept: 'application/json' },
    });
    if (unavailable(status)) throw new IdentityProviderUnavailableError(`HTTP ${status}`);
    const parsed = z.looseObject({ sub: z.string() }).safeParse(parseJson(text));
    if (status !== 200 || !parsed.success) throw new ProviderRefusedError(`UserInfo answered HTTP ${status}`);
    if (parsed.data.sub !== subject) throw new ProviderRefusedError('UserInfo is about someone else');
    return parsed.data;
  }

  async #discover(): Promise<Metadata> {
    const { status, text } = await this.#fetch(`${this.settings.issuer}/.well-known/openid-configuration`, {
      method: 'GET',
    });
    if (status !== 200) throw new IdentityProviderUnavailableError(`discovery answered HTTP ${status}`);
    const parsed = metadataSchema.safeParse(parseJson(text));
    if (!parsed.success) throw new ProviderRefusedError('its discovery document is not OpenID Connect');
    return parsed.data;
  }

  async #token(form: Record<string, string>): Promise<TokenSet> {
    const { token_endpoint: endpoint } = await this.metadata();
    const body = new URLSearchParams(form);
    const headers: Record<string, string> = {
      'content-type': 'application/x-www-form-urlencoded',
      accept: 'application/json',
    };
    const { clientId, clientSecret } = this.settings;
    if (clientSecret === undefined) body.set('client_id', clientId);
    else headers.authorization = basicAuth(clientId, clientSecret);
    const { status, text } = await this.#fetch(endpoint, { method: 'POST', headers, body });
    if (unavailable(status)) throw new IdentityProviderUnavailableError(`HTTP ${status}`);
    if (status < 200 || status >= 300) throw new ProviderRefusedError(refusalCode(status, text));
    const parsed = tokenResponse.safeParse(parseJson(text));
    if (!parsed.success) throw new ProviderRefusedError('invalid token response');
    return {
      accessToken: parsed.data.access_token,
      expiresInS: parsed.data.expires_in,
      refreshToken: parsed.data.refresh_token,
      idToken: parsed.data.id_token,
    };
  }

  #fetch(url: string, init: RequestInit): Promise<{ status: number; text: string }> {
    return providerCall(url, init, this.#timeoutMs);
  }
}
