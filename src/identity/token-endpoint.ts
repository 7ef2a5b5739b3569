import { z } from 'zod';
import { IdentityProviderUnavailableError } from '../core/agent/errors.js';

/**
 * What the token exchange (exchange.ts) and the sign-in (sign-in/provider.ts) share when they
 * talk to an identity provider: one bounded HTTP call that never follows a redirect (it would
 * carry the client's secret elsewhere), the client's Basic credentials, the token response's
 * fields and an OAuth error's code. The provider's answers are untrusted: parsed, bounded, and
 * its free text never repeated.
 */

const MAX_BODY = 65_536;
/** An OAuth error code is a short token (RFC 6749 section 5.2); anything else is not repeated. */
const ERROR_CODE = /^[\x21-\x7e]{1,64}$/;

export const tokenResponse = z.object({
  access_token: z.string().min(1).max(16_384),
  token_type: z.string().max(64).optional(),
  expires_in: z
    .number()
    .positive()
    .max(366 * 86_400)
    .optional(),
  refresh_token: z.string().min(1).max(16_384).optional(),
  id_token: z.string().min(1).max(16_384).optional(),
});

/** One call; unreachable or out of time is IdentityProviderUnavailableError. */
export async function providerCall(
  url: string,
  init: RequestInit,
  timeoutMs: number,
): Promise<{ status: number; text: string }> {
  try {
    const res = await fetch(url, { ...init, redirect: 'manual', signal: AbortSignal.timeout(timeoutMs) });
    return { status: res.status, text: (await res.text()).slice(0, MAX_BODY) };
  } catch (error) {
    const why = error instanceof Error && error.name === 'TimeoutError' ? 'no answer in time' : 'unreachable';
    throw new IdentityProviderUnavailableError(why, { cause: error });
  }
}

/** A status that says the provider is not answering now (try again), not that it refused. */
export function unavailable(status: number): boolean {
  return status === 408 || status === 429 || status >= 500;
}

/** client_secret_basic: each part form-encoded, then Base64 (RFC 6749 section 2.3.1). */
export function basicAuth(clientId: string, clientSecret: string): string {
  return `Basic ${Buffer.from(`${encodeURIComponent(clientId)}:${encodeURIComponent(clientSecret)}`).toString('base64')}`;
}

/** The provider's OAuth error code from a refusal's body, else the HTTP status. */
export function refusalCode(status: number, text: string): string {
  const said = z.object({ error: z.string() }).safeParse(parseJson(text));
  return said.success && ERROR_CODE.test(said.data.error) ? said.data.error : `HTTP ${status}`;
}

export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
