import { randomUUID } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { exportJWK, generateKeyPair, importJWK, type JWK } from 'jose';
import { z } from 'zod';
import { InvalidConfigError } from '../core/errors.js';

/**
 * The broker's signing keys for per-person identity (docs/identity.md). A key file holds every
 * key, each with the time from which it may sign: all of them are published (JWKS) at once, and
 * the newest key whose `signFrom` has passed signs. Rotation without downtime is therefore two
 * edits of the file (a Secret): add the new key with `signFrom` later than the agents' JWKS
 * caches refresh, then, once the old key's last token has expired, remove the old key.
 *
 * The private keys stay in this module's objects: never logged, never in a status or the store.
 */

export const SIGNING_ALGORITHMS = ['ES256', 'EdDSA'] as const;
export type SigningAlgorithm = (typeof SIGNING_ALGORITHMS)[number];

const keyFileSchema = z.object({
  keys: z
    .array(
      z.object({
        kid: z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, 'must be 1-64 letters, digits, . _ -'),
        alg: z.enum(SIGNING_ALGORITHMS, 'must be ES256 or EdDSA'),
        privateJwk: z.record(z.string(), z.unknown()),
        signFrom: z.iso.datetime({ offset: true, message: 'must be an RFC 3339 time' }),
      }),
    )
    .min(1, 'must hold at least one key'),
});

type KeyFile = z.output<typeof keyFileSchema>;

export interface SigningKey {
  kid: string;
  alg: SigningAlgorithm;
  signFrom: number;
  privateKey: CryptoKey | Uint8Array;
  /** The public half as published: kty, crv, x (y), kid, alg, use. */
  publicJwk: JWK;
}

/** Thrown for a key file that cannot be used; names the file and the field, never a key. */
export class KeyFileError extends InvalidConfigError {}

async function keysOf(file: KeyFile, where: string): Promise<SigningKey[]> {
  const kids = new Set<string>();
  const out: SigningKey[] = [];
  for (const [i, k] of file.keys.entries()) {
    if (kids.has(k.kid)) throw new KeyFileError(`${where}: keys[${i}].kid "${k.kid}" is used twice`);
    kids.add(k.kid);
    const jwk = k.privateJwk as JWK;
    if (typeof jwk.d !== 'string')
      throw new KeyFileError(`${where}: keys[${i}].privateJwk is not a private key`);
    let privateKey: CryptoKey | Uint8Array;
    try {
      privateKey = await importJWK(jwk, k.alg);
    } catch {
      throw new KeyFileError(`${where}: keys[${i}].privateJwk is not a ${k.alg} key`);
    }
    const { d: _private, p: _p, q: _q, dp: _dp, dq: _dq, qi: _qi, ...publicPart } = jwk;
    out.push({
      kid: k.kid,
      alg: k.alg,
      signFrom: Date.parse(k.signFrom),
      privateKey,
      publicJwk: { ...publicPart, kid: k.kid, alg: k.alg, use: 'sig' },
    });
  }
  return out;
}

/** Reads and checks a key file; a bad one throws KeyFileError naming what is wrong. */
export async function readKeyFile(path: string): Promise<SigningKey[]> {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    const why = (error as NodeJS.ErrnoException).code ?? 'not JSON';
    throw new KeyFileError(`identity key file ${path}: cannot be read (${why})`);
  }
  const parsed = keyFileSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new KeyFileError(
      `identity key file ${path}: ${issue?.path.join('.') ?? ''} ${issue?.message ?? 'is invalid'}`,
    );
  }
  return keysOf(parsed.data, `identity key file ${path}`);
}

/** A new key entry (ES256 by default), for a key file: `agentkourier identity-key` prints one. */
export async function newKeyEntry(
  alg: SigningAlgorithm = 'ES256',
  signFrom = new Date(),
): Promise<KeyFile['keys'][number]> {
  const { privateKey } = await generateKeyPair(alg, {
    extractable: true,
    ...(alg === 'EdDSA' ? { crv: 'Ed25519' } : {}),
  });
  const privateJwk = await exportJWK(privateKey);
  return { kid: `k-${randomUUID().slice(0, 8)}`, alg, privateJwk, signFrom: signFrom.toISOString() };
}

/**
 * Local mode's key file: made once (owner-only), then read as any key file. The broker on a
 * laptop signs with it; its JWKS is served beside the web chat.
 */
export async function ensureKeyFile(path: string): Promise<void> {
  if (existsSync(path)) return;
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, `${JSON.stringify({ keys: [await newKeyEntry()] }, null, 2)}\n`, { mode: 0o600 });
  chmodSync(path, 0o600);
}

/**
 * The keys in use: read from a file and read again when it changes (a mounted Secret is
 * replaced as a whole), or made in memory when there is no file (one replica, and the keys
 * change at every start: agents fetch the JWKS again for a key id they do not know).
 */
export class KeyRing {
  #keys: SigningKey[];
  readonly #path: string | undefined;
  #mtimeMs: number;
  #checkedAt = 0;

  private constructor(keys: SigningKey[], path: string | undefined) {
    this.#keys = keys;
    this.#path = path;
    this.#mtimeMs = path === undefined ? 0 : statSync(path).mtimeMs;
  }

  static async fromFile(path: string): Promise<KeyRing> {
    return new KeyRing(await readKeyFile(path), path);
  }

  /** Keys held in memory only (the checker's forged ones). */
  static async of(entries: KeyFile['keys']): Promise<KeyRing> {
    return new KeyRing(await keysOf({ keys: entries }, 'the given keys'), undefined);
  }

  static async ephemeral(): Promise<KeyRing> {
    const entry = await newKeyEntry('ES256', new Date(0));
    return new KeyRing(await keysOf({ keys: [entry] }, 'the ephemeral key'), undefined);
  }

  /** Reads the file again when it changed (at most every `everyMs`); a bad new file keeps the old keys. */
  async refresh(now = Date.now(), everyMs = 10_000): Promise<'kept' | 'reloaded' | Error> {
    if (this.#path === undefined || now - this.#checkedAt < everyMs) return 'kept';
    this.#checkedAt = now;
    try {
      const mtime = statSync(this.#path).mtimeMs;
      if (mtime === this.#mtimeMs) return 'kept';
      this.#keys = await readKeyFile(this.#path);
      this.#mtimeMs = mtime;
      return 'reloaded';
    } catch (error) {
      return error instanceof Error ? error : new Error(String(error));
    }
  }

  /** The key that signs now: the newest whose signFrom has passed (else the oldest). */
  signing(now = Date.now()): SigningKey {
    const ready = this.#keys.filter((k) => k.signFrom <= now).sort((a, b) => b.signFrom - a.signFrom);
    const key = ready[0] ?? [...this.#keys].sort((a, b) => a.signFrom - b.signFrom)[0];
    if (key === undefined) throw new KeyFileError('no identity key');
    return key;
  }

  /** Every key's public half: published before it signs and after it stops. */
  jwks(): { keys: JWK[] } {
    return { keys: this.#keys.map((k) => k.publicJwk) };
  }
}
