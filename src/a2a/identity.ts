import type { Identity } from './options.js';

/**
 * The headers every call to an agent carries (S-8): the AgentBackend's static headers, then
 * exactly one identity header, a bearer token or the person's user id. The client and
 * `agentkourier check` both build them here, so the checker asks as the broker asks.
 */
export function identityHeaders(
  identity: Identity,
  headers: Readonly<Record<string, string>> = {},
): Record<string, string> {
  const out: Record<string, string> = { ...headers };
  if (identity.kind === 'bearer') out.authorization = `Bearer ${identity.token}`;
  else out['x-user-id'] = identity.userId;
  return out;
}
