import type { AuthConfiguration, AuthProvider } from '@microsoft/agents-hosting';
import { z } from 'zod';
import type { AppCredential } from './app-credential.js';
import { TeamsTokenError, TeamsTokenKindError } from './errors.js';

/**
 * The app's own tokens for the Bot Connector (and Graph), as the Agents SDK asks for them
 * through its AuthProvider port: OAuth 2.0 client credentials with the app's secret or
 * certificate (app-credential.ts) at the configured authority's token endpoint, one cached token per scope until five minutes before
 * it expires, one request in flight per scope.
 *
 * Why not the SDK's MSAL provider: MSAL resolves an authority it does not know through Entra's
 * cloud discovery at login.microsoftonline.com and wants HTTPS, so it cannot reach a sovereign
 * or private authority without the internet, nor the tests' fake Entra. This is the same grant
 * (one form POST); what the SDK checks of inbound tokens is untouched.
 */

const tokenResponse = z.object({
  access_token: z.string().min(1).max(16_384),
  expires_in: z.coerce.number().int().positive().max(86_400),
});

/** Renewed this long before it expires, so no call carries a token about to lapse. */
const RENEW_BEFORE_MS = 5 * 60_000;
const REQUEST_TIMEOUT_MS = 30_000;

export interface AppTokenSettings {
  clientId: string;
  credential: AppCredential;
  tenantId: string;
  /** The authority's origin, no trailing slash. */
  authority: string;
  fetch?: typeof fetch;
  now?: () => number;
}

export class AppTokens implements AuthProvider {
  readonly connectionSettings: AuthConfiguration;
  readonly #s: AppTokenSettings;
  readonly #cache = new Map<string, { token: string; renewAt: number }>();
  readonly #pending = new Map<string, Promise<string>>();

  constructor(settings: AppTokenSettings) {
    this.#s = settings;
    this.connectionSettings = {
      clientId: settings.clientId,
      tenantId: settings.tenantId,
      authorityEndpoint: settings.authority,
    };
  }

  getAccessToken(authConfigOrScope: AuthConfiguration | string, scope?: string): Promise<string> {
    const resource = typeof authConfigOrScope === 'string' ? authConfigOrScope : (scope ?? '');
    const now = (this.#s.now ?? Date.now)();
    const cached = this.#cache.get(resource);
    if (cached !== undefined && cached.renewAt > now) return Promise.resolve(cached.token);
    let pending = this.#pending.get(resource);
    if (pending === undefined) {
      pending = this.#request(resource).finally(() => this.#pending.delete(resource));
      this.#pending.set(resource, pending);
    }
    return pending;
  }

  async #request(resource: string): Promise<string> {
    const url = `${this.#s.authority}/${this.#s.tenantId}/oauth2/v2.0/token`;
    const scope = resource.endsWith('/.default') ? resource : `${resource.replace(/\/+$/, '')}/.default`;
    const proof = await this.#s.credential.form(url);
    let res: Response;
    try {
      res = await (this.#s.fetch ?? fetch)(url, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'client_credentials',
          client_id: this.#s.clientId,
          ...proof,
          scope,
        }).toString(),
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
    } catch (error) {
      throw new TeamsTokenError(undefined, error instanceof Error ? error.name : 'unreachable');
    }
    const body: unknown = await res.json().catch(() => undefined);
    if (!res.ok) {
      const code = z.object({ error: z.string().max(64) }).safeParse(body);
      throw new TeamsTokenError(res.status, code.success ? code.data.error : `HTTP ${res.status}`);
    }
    const parsed = tokenResponse.safeParse(body);
    if (!parsed.success) throw new TeamsTokenError(res.status, 'malformed token response');
    const now = (this.#s.now ?? Date.now)();
    const lifetime = parsed.data.expires_in * 1000;
    this.#cache.set(resource, {
      token: parsed.data.access_token,
      renewAt: now + Math.max(lifetime - RENEW_BEFORE_MS, lifetime / 2),
    });
    return parsed.data.access_token;
  }

  acquireTokenOnBehalfOf(): Promise<string> {
    return Promise.reject(new TeamsTokenKindError('on-behalf-of'));
  }

  getAgenticApplicationToken = (): Promise<string> => Promise.reject(new TeamsTokenKindError('agentic'));
  getAgenticInstanceToken = (): Promise<string> => Promise.reject(new TeamsTokenKindError('agentic'));
  getAgenticUserToken = (): Promise<string> => Promise.reject(new TeamsTokenKindError('agentic'));
}
