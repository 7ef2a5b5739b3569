import { isIP } from 'node:net';
import { z } from 'zod';
import { InvalidConfigError } from '../core/errors.js';

/**
 * The controller's web chat (docs/webchat.md, "In a cluster"): off unless a port is set, and
 * then only behind a token. Validated once at start; an error names the variable, never a value
 * (the token is a credential).
 *
 *   AGENTKOURIER_WEBCHAT_PORT   the port; unset or empty: no web chat
 *   AGENTKOURIER_WEBCHAT_TOKEN  the bearer token every API call needs (at least 16 characters);
 *                               required with the port
 *   AGENTKOURIER_WEBCHAT_HOST   the address it listens on (default 127.0.0.1): loopback is what
 *                               kubectl port-forward reaches (the runtime dials localhost inside
 *                               the pod's network namespace), and nothing else in the cluster does
 */

export const DEFAULT_WEBCHAT_HOST = '127.0.0.1';
export const WEBCHAT_TOKEN_MIN_CHARS = 16;

export interface WebChatSettings {
  port: number;
  host: string;
  /** Never logged or printed. */
  token: string;
}

const port = z
  .string()
  .regex(/^\d{1,5}$/, 'must be a port number')
  .transform(Number)
  .refine((n) => n > 0 && n < 65_536, 'must be a port number');

const host = z.string().refine((h) => isIP(h) !== 0, 'must be an IP address (127.0.0.1, ::1, 0.0.0.0 or ::)');

const token = z
  .string()
  .min(WEBCHAT_TOKEN_MIN_CHARS, `must be at least ${WEBCHAT_TOKEN_MIN_CHARS} characters`)
  .refine((t) => !/\s/.test(t), 'must not contain whitespace (it is sent as a bearer token)');

function parse<T>(setting: string, schema: z.ZodType<T>, value: string): T {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  throw new InvalidConfigError(`${setting} ${parsed.error.issues[0]?.message ?? 'is invalid'}`);
}

/** The web chat's settings, or undefined when it is off (no port). */
export function loadWebChatSettings(
  env: Readonly<Record<string, string | undefined>>,
): WebChatSettings | undefined {
  const rawPort = env.AGENTKOURIER_WEBCHAT_PORT?.trim() ?? '';
  if (rawPort === '') return undefined;
  const rawToken = env.AGENTKOURIER_WEBCHAT_TOKEN ?? '';
  if (rawToken.trim() === '') {
    throw new InvalidConfigError(
      'AGENTKOURIER_WEBCHAT_TOKEN is required when AGENTKOURIER_WEBCHAT_PORT is set: every call to the web chat needs it (at least 16 characters, e.g. openssl rand -hex 24)',
    );
  }
  const rawHost = env.AGENTKOURIER_WEBCHAT_HOST?.trim() ?? '';
  return {
    port: parse('AGENTKOURIER_WEBCHAT_PORT', port, rawPort),
    host: rawHost === '' ? DEFAULT_WEBCHAT_HOST : parse('AGENTKOURIER_WEBCHAT_HOST', host, rawHost),
    // A Secret's value read from a file often ends in a newline; the rest must be the token.
    token: parse('AGENTKOURIER_WEBCHAT_TOKEN', token, rawToken.trim()),
  };
}
