import { describe, expect, it } from 'vitest';
import { InvalidConfigError } from '../../../core/errors.js';
import { InstallationSealError, Keyring } from './keyring.js';

const k = (fill: number): string => Buffer.alloc(32, fill).toString('base64');

describe('Keyring', () => {
  it('seals with the newest key and opens with any key listed', () => {
    const old = Keyring.parse(`old:${k(1)}`);
    const rotated = Keyring.parse(`new:${k(2)}, old:${k(1)}`);
    const sealedOld = old.seal('xoxb-secret', 'team:T1');
    expect(sealedOld.keyId).toBe('old');
    expect(sealedOld.sealed).not.toContain('xoxb');
    expect(rotated.open(sealedOld.sealed, 'team:T1')).toBe('xoxb-secret');
    expect(rotated.stale('old')).toBe(true);
    const sealedNew = rotated.seal('xoxb-secret', 'team:T1');
    expect(sealedNew.keyId).toBe('new');
    expect(rotated.stale('new')).toBe(false);
    // A fresh nonce each time: the same text never seals the same way twice.
    expect(rotated.seal('xoxb-secret', 'team:T1').sealed).not.toBe(sealedNew.sealed);
    expect(() => old.open(sealedNew.sealed, 'team:T1')).toThrow(InstallationSealError);
  });

  it('refuses a value altered at rest, or opened under another row’s key', () => {
    const ring = Keyring.parse(`a:${k(3)}`);
    const { sealed } = ring.seal('xoxb-secret', 'team:T1');
    expect(() => ring.open(sealed, 'team:T2')).toThrow(InstallationSealError);
    const parts = sealed.split('.');
    const body = Buffer.from(parts[3] ?? '', 'base64url');
    body[0] = (body[0] ?? 0) ^ 1;
    parts[3] = body.toString('base64url');
    expect(() => ring.open(parts.join('.'), 'team:T1')).toThrow(InstallationSealError);
    expect(() => ring.open('plain text', 'team:T1')).toThrow(InstallationSealError);
  });

  it.each([
    ['', 'lists no key'],
    ['nokey', 'must be id:base64key'],
    [`a:${Buffer.alloc(16).toString('base64')}`, 'must be 32 bytes'],
    [`a:${k(1)},a:${k(2)}`, 'listed twice'],
    [`bad id:${k(1)}`, 'must be id:base64key'],
  ])('refuses the setting %j, naming what is wrong and never the key', (setting, message) => {
    let caught: unknown;
    try {
      Keyring.parse(setting);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(InvalidConfigError);
    expect((caught as Error).message).toContain(message);
    expect((caught as Error).message).not.toContain(k(1));
  });
});
