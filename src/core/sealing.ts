import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { InvalidConfigError, KourierError } from './errors.js';

/**
 * Keys that seal secrets at rest (Slack installations' tokens, people's sign-in links):
 * AES-256-GCM, a fresh 96-bit nonce per seal, and the row's own key as associated data, so a
 * sealed value copied onto another row does not open.
 *
 * Rotation without downtime: the setting lists several keys, newest first. The newest seals;
 * any of them opens. Roll out a new key by putting it in front (every replica can still open
 * what the others sealed with the old one), let the store re-seal, then drop the old key in a
 * later rollout.
 *
 * The setting: `id:base64key[,id:base64key…]`, each key exactly 32 bytes (`openssl rand -base64
 * 32`), ids of 1–32 letters, digits, `-` or `_`.
 */

/** A sealed value that no key opens, or that was altered (the GCM tag does not match). */
export class SealError extends KourierError {}

/** What a keyring seals, for its errors: the setting's name, the thing ("an installation"). */
export interface SealedKind {
  setting: string;
  what: string;
  /** The error a value that does not open throws. */
  fail: (message: string) => SealError;
}

export interface SealedValue {
  keyId: string;
  sealed: string;
}

const KEY_BYTES = 32;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
const FORMAT = 'v1';
const ID_RE = /^[A-Za-z0-9_-]{1,32}$/;

export class Keyring {
  readonly #kind: SealedKind;
  readonly #keys: ReadonlyMap<string, Buffer>;
  /** The id of the key that seals. */
  readonly newest: string;

  private constructor(keys: ReadonlyArray<readonly [string, Buffer]>, kind: SealedKind) {
    this.#kind = kind;
    this.#keys = new Map(keys);
    this.newest = keys[0]?.[0] ?? '';
  }

  /** Reads the setting; throws InvalidConfigError naming what is wrong, never a key. */
  static parse(setting: string, kind: SealedKind): Keyring {
    const name = kind.setting;
    const entries = setting
      .split(',')
      .map((e) => e.trim())
      .filter((e) => e !== '');
    if (entries.length === 0) throw new InvalidConfigError(`${name} lists no key`);
    const keys: Array<[string, Buffer]> = [];
    for (const [index, entry] of entries.entries()) {
      const colon = entry.indexOf(':');
      const id = colon < 0 ? '' : entry.slice(0, colon);
      if (!ID_RE.test(id))
        throw new InvalidConfigError(
          `${name}: entry ${index + 1} must be id:base64key, the id 1–32 letters, digits, - or _`,
        );
      const material = entry.slice(colon + 1);
      const key = Buffer.from(material, 'base64');
      if (!/^[A-Za-z0-9+/]+={0,2}$/.test(material) || key.length !== KEY_BYTES)
        throw new InvalidConfigError(
          `${name}: key ${id} must be ${KEY_BYTES} bytes in base64 (openssl rand -base64 32)`,
        );
      if (keys.some(([other]) => other === id))
        throw new InvalidConfigError(`${name}: key id ${id} is listed twice`);
      keys.push([id, key]);
    }
    return new Keyring(keys, kind);
  }

  /** Whether a value sealed with `keyId` should be sealed again with the newest key. */
  stale(keyId: string): boolean {
    return keyId !== this.newest;
  }

  seal(plain: string, context: string): SealedValue {
    const key = this.#keys.get(this.newest);
    if (key === undefined) throw new InvalidConfigError(`${this.#kind.setting} lists no key`);
    const nonce = randomBytes(NONCE_BYTES);
    const cipher = createCipheriv('aes-256-gcm', key, nonce);
    cipher.setAAD(Buffer.from(context, 'utf8'));
    const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    const tag = cipher.getAuthTag();
    return {
      keyId: this.newest,
      sealed: [FORMAT, this.newest, b64(nonce), b64(body), b64(tag)].join('.'),
    };
  }

  open(sealed: string, context: string): string {
    const [format, keyId, nonce, body, tag, ...rest] = sealed.split('.');
    if (
      format !== FORMAT ||
      keyId === undefined ||
      nonce === undefined ||
      body === undefined ||
      tag === undefined ||
      rest.length > 0
    )
      throw this.#kind.fail(`${this.#kind.what} is sealed in an unknown format`);
    const key = this.#keys.get(keyId);
    if (key === undefined)
      throw this.#kind.fail(
        `${this.#kind.what} is sealed with key ${keyId}, which ${this.#kind.setting} no longer lists`,
      );
    const tagBytes = Buffer.from(tag, 'base64url');
    const nonceBytes = Buffer.from(nonce, 'base64url');
    if (tagBytes.length !== TAG_BYTES || nonceBytes.length !== NONCE_BYTES)
      throw this.#kind.fail(`${this.#kind.what} was altered at rest`);
    try {
      const decipher = createDecipheriv('aes-256-gcm', key, nonceBytes);
      decipher.setAAD(Buffer.from(context, 'utf8'));
      decipher.setAuthTag(tagBytes);
      return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString(
        'utf8',
      );
    } catch {
      throw this.#kind.fail(`${this.#kind.what} was altered at rest, or belongs to another row`);
    }
  }
}

function b64(bytes: Buffer): string {
  return bytes.toString('base64url');
}
