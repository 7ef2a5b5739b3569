import { InvalidConfigError } from '../core/errors.js';
import type { Caller } from '../core/ports.js';
import type { AssertionSource, Identity, PersonIdentity } from './options.js';

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
  else if (identity.kind === 'user-id') out['x-user-id'] = identity.userId;
  // A per-person identity is the caller's, per call (personHeaders): a call for nobody in
  // particular (the card, which A2A serves to anyone) carries none.
  return out;
}

/**
 * A per-person identity's headers for one call: the assertion for the caller (a call made for
 * no person, as the broker's own, says so in its claims), and X-User-Id when asked for.
 */
export async function personHeaders(
  identity: PersonIdentity,
  assertions: AssertionSource | undefined,
  caller: Caller | undefined,
): Promise<Record<string, string>> {
  // Never sent under another identity: no signer, no call.
  if (assertions === undefined)
    throw new InvalidConfigError('a per-person identity needs the broker’s signing keys');
  const assertion = await assertions(caller, identity.audience);
  const header = identity.header.toLowerCase();
  const out: Record<string, string> = {
    [header]: header === 'authorization' ? `Bearer ${assertion.token}` : assertion.token,
  };
  if (identity.userIdHeader) out['x-user-id'] = assertion.userId;
  return out;
}
