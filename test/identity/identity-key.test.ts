import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runIdentityKey } from '../../src/app/identity-key.js';
import { KeyRing } from '../../src/identity/index.js';
import { run } from '../../src/main.js';

/** `agentkourier identity-key`: a key file made, a key added ahead of its time, the old one retired. */

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function printed(args: string[], now: number): Promise<string> {
  const lines: string[] = [];
  expect(await runIdentityKey(args, (l) => lines.push(l), now)).toBe(0);
  return lines.join('\n');
}

describe('agentkourier identity-key', () => {
  it('makes a file, adds a key that signs later, and retires the old one once no token can name it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kourier-idkey-'));
    dirs.push(dir);
    const t0 = Date.parse('2026-12-06T12:00:00Z');
    const first = join(dir, 'first.json');
    writeFileSync(first, await printed([], t0));
    const [old] = (await KeyRing.fromFile(first)).jwks().keys;
    expect(old?.alg).toBe('ES256');

    const second = join(dir, 'second.json');
    writeFileSync(second, await printed(['--add', first, '--alg', 'EdDSA'], t0));
    const ring = await KeyRing.fromFile(second);
    expect(ring.jwks().keys.map((k) => k.alg)).toEqual(['ES256', 'EdDSA']);
    // Published now, signing in 15 minutes.
    expect(ring.signing(t0 + 14 * 60_000).kid).toBe(old?.kid);
    const fresh = ring.signing(t0 + 15 * 60_000).kid;
    expect(fresh).not.toBe(old?.kid);

    // 16 minutes on, the new key has signed for 1: an old token may still be in flight.
    const early = JSON.parse(await printed(['--retire', second], t0 + 16 * 60_000)) as {
      keys: { kid: string }[];
    };
    expect(early.keys.map((k) => k.kid)).toEqual([old?.kid, fresh]);
    // 21 minutes on, past an assertion's 5 minutes: the old key goes.
    const late = JSON.parse(await printed(['--retire', second], t0 + 21 * 60_000)) as {
      keys: { kid: string }[];
    };
    expect(late.keys.map((k) => k.kid)).toEqual([fresh]);
  });

  it('has its help, and refuses a bad option', async () => {
    const out: string[] = [];
    const io = { out: (l: string) => out.push(l), err: (l: string) => out.push(l) };
    expect(await run(['identity-key', '--help'], io)).toBe(0);
    expect(out.join('\n')).toMatch(/^Usage: agentkourier identity-key/);
    await expect(runIdentityKey(['--alg', 'RS256'], () => undefined)).rejects.toThrow(
      /--alg must be ES256 or EdDSA/,
    );
    await expect(runIdentityKey(['--add', 'a', '--retire', 'b'], () => undefined)).rejects.toThrow(
      /not both/,
    );
  });
});
