import { z } from 'zod';
import { decodeSecretData } from '../control/reconcile/secrets.js';

/**
 * The v1 Secret, as much of it as local mode reads: `data` (base64, as `kubectl get -o yaml`
 * writes it) and `stringData` (plain text, easier to write by hand). As in Kubernetes,
 * stringData wins over data for the same key. Values are trimmed like the controller trims them
 * (../control/reconcile/secrets.ts): files often end in a newline.
 */

/** A Secret key, as the API server accepts it. */
const secretKey = z
  .string()
  .min(1)
  .max(253)
  .regex(/^[-._a-zA-Z0-9]+$/, 'must be a valid Secret key');

/** Strict base64: Buffer.from would skip bad characters silently and yield a wrong value. */
const base64 = z
  .string()
  .regex(
    /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/,
    'must be base64 (use stringData for plain text)',
  );

export const secretManifest = z.object({
  apiVersion: z.literal('v1'),
  kind: z.literal('Secret'),
  type: z.string().max(253).optional(),
  immutable: z.boolean().optional(),
  data: z.record(secretKey, base64).optional(),
  stringData: z.record(secretKey, z.string()).optional(),
});

export type SecretManifest = z.output<typeof secretManifest>;

/** The Secret's keys and trimmed values. */
export function secretValues(secret: SecretManifest): Map<string, string> {
  const out = decodeSecretData(secret.data);
  for (const [key, value] of Object.entries(secret.stringData ?? {})) out.set(key, value.trim());
  return out;
}
