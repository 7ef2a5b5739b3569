import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { InvalidConfigError } from '../core/errors.js';
import { MAX_TTL_SECONDS } from '../identity/assertions.js';
import { newKeyEntry, readKeyFile, SIGNING_ALGORITHMS, type SigningAlgorithm } from '../identity/keys.js';

/**
 * `agentkourier identity-key`: the key file of per-person identity (docs/identity.md), made and
 * rotated without hand-editing JSON. It prints the file to stdout (the private keys: put it in
 * a Secret, never in a log); the input file is never changed.
 */

export const IDENTITY_KEY_HELP = `Usage: agentkourier identity-key [--alg ES256|EdDSA] [--add FILE [--sign-in MINUTES] | --retire FILE]

Prints an identity key file (docs/identity.md), for the Secret the chart's identity.existingSecret
names (or AGENTKOURIER_IDENTITY_KEYS):

  (no option)       a new file with one key, signing at once
  --add FILE        FILE's keys and a new one that starts signing in --sign-in minutes (default
                    15): agents see it in the JWKS before any token is signed with it
  --retire FILE     FILE without the keys no token still in flight can name: each key superseded
                    by a newer one that has signed for longer than an assertion lives (5 minutes)
  --alg A           the new key's algorithm: ES256 (default) or EdDSA (Ed25519)
  --help, -h        print this help

Rotation: --add, update the Secret; after the new key has signed for 5 minutes, --retire,
update the Secret. The broker reads the mounted file again when it changes.`;

export async function runIdentityKey(
  args: string[],
  out: (line: string) => void,
  now = Date.now(),
): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      alg: { type: 'string' },
      add: { type: 'string' },
      retire: { type: 'string' },
      'sign-in': { type: 'string' },
    },
    strict: true,
  });
  const alg = (values.alg ?? 'ES256') as SigningAlgorithm;
  if (!SIGNING_ALGORITHMS.includes(alg)) throw new InvalidConfigError('--alg must be ES256 or EdDSA');
  if (values.add !== undefined && values.retire !== undefined)
    throw new InvalidConfigError('identity-key takes --add or --retire, not both');
  const minutes = values['sign-in'] === undefined ? 15 : Number(values['sign-in']);
  if (!Number.isInteger(minutes) || minutes < 0 || minutes > 10_080)
    throw new InvalidConfigError('--sign-in must be whole minutes, 0 to 10080');

  if (values.retire !== undefined) {
    await readKeyFile(values.retire); // checked as the broker checks it
    const file = JSON.parse(readFileSync(values.retire, 'utf8')) as { keys: { signFrom: string }[] };
    const signingSince = (k: { signFrom: string }) => Date.parse(k.signFrom);
    const kept = file.keys.filter((k) => {
      const newer = file.keys.filter((o) => signingSince(o) > signingSince(k) && signingSince(o) <= now);
      return !newer.some((o) => now - signingSince(o) > MAX_TTL_SECONDS * 1000);
    });
    out(JSON.stringify({ keys: kept }, null, 2));
    return 0;
  }
  if (values.add !== undefined) {
    await readKeyFile(values.add);
    const file = JSON.parse(readFileSync(values.add, 'utf8')) as { keys: unknown[] };
    const entry = await newKeyEntry(alg, new Date(now + minutes * 60_000));
    out(JSON.stringify({ keys: [...file.keys, entry] }, null, 2));
    return 0;
  }
  out(JSON.stringify({ keys: [await newKeyEntry(alg, new Date(now))] }, null, 2));
  return 0;
}
