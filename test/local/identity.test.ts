import { statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { createRemoteJWKSet } from 'jose';
import { afterEach, describe, expect, it } from 'vitest';
import { LocalRun } from './local-run.js';

/**
 * Local mode's identity keys: made once beside its SQLite file (owner-only), the same across a
 * restart, and their public half served beside the web chat for agents on the laptop.
 */

const run = new LocalRun('kourier-local-identity');
afterEach(() => run.close());

describe('local mode: per-person identity keys', () => {
  it('serves the discovery document and the JWKS beside the web chat; the keys outlive a restart', async () => {
    const first = await run.start();
    const file = join(dirname(run.db), 'identity-keys.json');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const discovery = (await (
      await fetch(new URL('/.well-known/openid-configuration', first.url))
    ).json()) as {
      issuer: string;
      jwks_uri: string;
    };
    expect(discovery.issuer).toBe(first.url.replace(/\/$/, ''));
    const set = (await (await fetch(discovery.jwks_uri)).json()) as { keys: { kid: string; d?: string }[] };
    expect(set.keys).toHaveLength(1);
    expect(set.keys[0]?.d).toBeUndefined();
    // A key set jose reads as an agent would.
    createRemoteJWKSet(new URL(discovery.jwks_uri));
    await run.stop();
    const again = await run.start();
    const after = (await (await fetch(new URL('/.well-known/jwks.json', again.url))).json()) as {
      keys: { kid: string }[];
    };
    expect(after.keys.map((k) => k.kid)).toEqual(set.keys.map((k) => k.kid));
  });
});
