import type { SecretKeyRef } from '../crds/common.js';
import { Reasons } from '../status.js';

/**
 * Reading a Secret key for reconcile, without I/O: the controller hands in what its Secret
 * watches hold. Lookups are by name in the resource's own namespace; there is no way to name
 * another (docs/architecture.md, "Security model"). Messages name the Secret and key, never a value.
 */

export type SecretView =
  | { kind: 'found'; data: ReadonlyMap<string, string> }
  | { kind: 'missing' }
  | { kind: 'unreadable'; message: string }
  /** The control plane may not read it (RBAC): `message` says what to grant, and where. */
  | { kind: 'forbidden'; message: string };

/** A Secret in the namespace being reconciled, by name. */
export type SecretLookup = (name: string) => SecretView;

export type KeyResolution =
  | { ok: true; value: string }
  | {
      ok: false;
      reason: typeof Reasons.SecretNotFound | typeof Reasons.SecretForbidden | typeof Reasons.InvalidSpec;
      message: string;
    };

/** Decodes a Secret's `data` (base64 values) into strings, trimmed: files often end in a newline. */
export function decodeSecretData(data: Readonly<Record<string, string>> | undefined): Map<string, string> {
  const out = new Map<string, string>();
  for (const [key, encoded] of Object.entries(data ?? {})) {
    out.set(key, Buffer.from(encoded, 'base64').toString('utf8').trim());
  }
  return out;
}

export function resolveSecretKey(lookup: SecretLookup, ref: SecretKeyRef, field: string): KeyResolution {
  const view = lookup(ref.name);
  if (view.kind === 'missing') {
    return { ok: false, reason: Reasons.SecretNotFound, message: `${field}: Secret "${ref.name}" not found` };
  }
  if (view.kind === 'forbidden') {
    return {
      ok: false,
      reason: Reasons.SecretForbidden,
      message: `${field}: Secret "${ref.name}" cannot be read: ${view.message}`,
    };
  }
  if (view.kind === 'unreadable') {
    return {
      ok: false,
      reason: Reasons.SecretNotFound,
      message: `${field}: Secret "${ref.name}" cannot be read: ${view.message}`,
    };
  }
  const value = view.data.get(ref.key);
  if (value === undefined) {
    return {
      ok: false,
      reason: Reasons.SecretNotFound,
      message: `${field}: Secret "${ref.name}" has no key "${ref.key}"`,
    };
  }
  if (value === '') {
    return {
      ok: false,
      reason: Reasons.InvalidSpec,
      message: `${field}: key "${ref.key}" of Secret "${ref.name}" is empty`,
    };
  }
  return { ok: true, value };
}
