import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLocalJWKSet, createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import { afterEach, describe, expect, it } from 'vitest';
import type { Caller } from '../../src/core/ports.js';
import {
  AssertionSigner,
  CLAIMS_NAMESPACE,
  ensureKeyFile,
  KeyFileError,
  KeyRing,
  newKeyEntry,
  wellKnownRoutes,
} from '../../src/identity/index.js';

/**
 * The broker's assertions, verified with jose as an agent would (never with the broker's own
 * code): the claims, the audience, the key set served at /.well-known, rotation by the key
 * file, and key files that cannot be used.
 */

const ISSUER = 'http://broker.test:8080';
const AUDIENCE = 'http://agent.test/agents/team/support';
const ADA: Caller = {
  kind: 'person',
  id: 'U0ADA',
  name: 'Ada',
  email: 'ada@example.com',
  surface: 'slack',
  workspaceId: 'T01',
  channelId: 'C01',
  sessionId: 'slack:T01:C01:1.0',
  binding: 'team-a/support',
};
const BOB: Caller = { ...ADA, id: 'U0BOB', name: 'Bob', email: 'bob@example.com' };
const ALERT: Caller = {
  kind: 'trigger',
  surface: 'slack',
  workspaceId: 'T01',
  channelId: 'C01',
  sessionId: 's',
  binding: 'team-a/support',
};

const dirs: string[] = [];
const servers: Server[] = [];
afterEach(async () => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  for (const s of servers.splice(0)) await new Promise((r) => s.close(r));
});

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'kourier-identity-'));
  dirs.push(d);
  return d;
}

describe('assertions', () => {
  it('names the person, the audience and the thread; lives 5 minutes; verified with jose', async () => {
    const signer = new AssertionSigner({ issuer: `${ISSUER}/`, keys: await KeyRing.ephemeral() });
    const keys = createLocalJWKSet(signer.jwks() as Parameters<typeof createLocalJWKSet>[0]);
    const a = await signer.sign(ADA, AUDIENCE, 'team-a/support');
    const { payload, protectedHeader } = await jwtVerify(a.token, keys, {
      issuer: ISSUER,
      audience: AUDIENCE,
      algorithms: ['ES256', 'EdDSA'],
      typ: 'JWT',
    });
    expect(protectedHeader.alg).toBe('ES256');
    expect(payload.sub).toBe('slack:T01:U0ADA');
    expect(a.subject).toBe(payload.sub);
    expect(a.userId).toBe('ada@example.com');
    expect(payload.name).toBe('Ada');
    expect(payload.email).toBe('ada@example.com');
    expect((payload.exp ?? 0) - (payload.iat ?? 0)).toBe(300);
    expect(payload.jti).toMatch(/^[0-9a-f-]{36}$/);
    expect(payload[CLAIMS_NAMESPACE]).toEqual({
      person: true,
      binding: 'team-a/support',
      surface: 'slack',
      workspace: 'T01',
      channel: 'C01',
      session: 'slack:T01:C01:1.0',
    });
    // Two people in one thread: two subjects, two token ids.
    const b = await signer.sign(BOB, AUDIENCE, 'team-a/support');
    const other = await jwtVerify(b.token, keys, { issuer: ISSUER, audience: AUDIENCE });
    expect(other.payload.sub).toBe('slack:T01:U0BOB');
    expect(other.payload.jti).not.toBe(payload.jti);
  });

  it('is refused by another agent (audience), and once expired', async () => {
    let now = Date.parse('2026-12-06T12:00:00Z');
    const signer = new AssertionSigner({ issuer: ISSUER, keys: await KeyRing.ephemeral(), now: () => now });
    const keys = createLocalJWKSet(signer.jwks() as Parameters<typeof createLocalJWKSet>[0]);
    const { token } = await signer.sign(ADA, AUDIENCE, 'team-a/support');
    await expect(
      jwtVerify(token, keys, { issuer: ISSUER, audience: 'http://agent.test/agents/team/other' }),
    ).rejects.toThrow(/aud/);
    const at = new Date(now + 301_000);
    await expect(
      jwtVerify(token, keys, { issuer: ISSUER, audience: AUDIENCE, currentDate: at }),
    ).rejects.toThrow(/exp/);
    now += 1;
  });

  it('says no person asked for a trigger’s turn, and for the broker’s own calls', async () => {
    const signer = new AssertionSigner({ issuer: ISSUER, keys: await KeyRing.ephemeral() });
    const keys = createLocalJWKSet(signer.jwks() as Parameters<typeof createLocalJWKSet>[0]);
    const alert = await jwtVerify((await signer.sign(ALERT, AUDIENCE, 'team-a/support')).token, keys);
    expect(alert.payload.sub).toBe('trigger:team-a/support');
    expect((alert.payload[CLAIMS_NAMESPACE] as { person: boolean }).person).toBe(false);
    expect(alert.payload.email).toBeUndefined();
    const broker = await jwtVerify((await signer.sign(undefined, AUDIENCE, 'team-a/support')).token, keys);
    expect(broker.payload.sub).toBe('broker:team-a/support');
    expect((broker.payload[CLAIMS_NAMESPACE] as { person: boolean }).person).toBe(false);
  });

  it('serves the discovery document and the key set; jose verifies through them', async () => {
    const server = createServer();
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const signer = new AssertionSigner({ issuer: () => url, keys: await KeyRing.ephemeral() });
    const routes = wellKnownRoutes(signer);
    server.on('request', (req, res) => {
      if (!routes(req, res)) res.writeHead(404).end();
    });
    const discovery = (await (await fetch(`${url}/.well-known/openid-configuration`)).json()) as {
      issuer: string;
      jwks_uri: string;
    };
    expect(discovery.issuer).toBe(url);
    const jwksResponse = await fetch(discovery.jwks_uri);
    expect(jwksResponse.headers.get('content-type')).toBe('application/jwk-set+json');
    const set = (await jwksResponse.json()) as { keys: Record<string, unknown>[] };
    for (const key of set.keys) expect(key).not.toHaveProperty('d');
    const { token } = await signer.sign(ADA, AUDIENCE, 'team-a/support');
    const verified = await jwtVerify(token, createRemoteJWKSet(new URL(discovery.jwks_uri)), {
      issuer: discovery.issuer,
      audience: AUDIENCE,
    });
    expect(verified.payload.sub).toBe('slack:T01:U0ADA');
  });

  it('rotates by the key file: the new key is published first, signs from its time, the old stays published', async () => {
    const file = join(tempDir(), 'keys.json');
    const t0 = Date.parse('2026-12-06T12:00:00Z');
    const old = await newKeyEntry('ES256', new Date(t0 - 86_400_000));
    writeFileSync(file, JSON.stringify({ keys: [old] }));
    let now = t0;
    const ring = await KeyRing.fromFile(file);
    const signer = new AssertionSigner({ issuer: ISSUER, keys: ring, now: () => now });
    const before = await signer.sign(ADA, AUDIENCE, 'b');
    expect(decodeProtectedHeader(before.token).kid).toBe(old.kid);
    // The new key arrives, to sign from ten minutes on: published now, not signing yet.
    const fresh = await newKeyEntry('EdDSA', new Date(t0 + 600_000));
    writeFileSync(file, JSON.stringify({ keys: [old, fresh] }));
    now += 20_000;
    expect(await ring.refresh(now)).toBe('reloaded');
    expect(ring.jwks().keys.map((k) => k.kid)).toEqual([old.kid, fresh.kid]);
    expect(decodeProtectedHeader((await signer.sign(ADA, AUDIENCE, 'b')).token).kid).toBe(old.kid);
    now = t0 + 600_001;
    const after = await signer.sign(ADA, AUDIENCE, 'b');
    expect(decodeProtectedHeader(after.token)).toMatchObject({ kid: fresh.kid, alg: 'EdDSA' });
    // Both verify against the published set: a token of the old key still in flight is good.
    const keys = createLocalJWKSet(ring.jwks() as Parameters<typeof createLocalJWKSet>[0]);
    const at = new Date(now);
    await jwtVerify(before.token, keys, { currentDate: new Date(t0 + 100_000) });
    await jwtVerify(after.token, keys, { currentDate: at });
  });

  it('refuses a key file it cannot use, naming what is wrong and never a key; a bad reload keeps the keys', async () => {
    const dir = tempDir();
    const file = join(dir, 'keys.json');
    const entry = await newKeyEntry();
    const secret = String((entry.privateJwk as { d: string }).d);
    const cases: [unknown, RegExp][] = [
      [{ keys: [] }, /keys must hold at least one key/],
      [{ keys: [{ ...entry, alg: 'HS256' }] }, /keys\.0\.alg must be ES256 or EdDSA/],
      [{ keys: [{ ...entry, privateJwk: { ...entry.privateJwk, d: undefined } }] }, /is not a private key/],
      [{ keys: [entry, entry] }, /is used twice/],
      [{ keys: [{ ...entry, signFrom: 'soon' }] }, /signFrom must be an RFC 3339 time/],
    ];
    for (const [content, message] of cases) {
      writeFileSync(file, JSON.stringify(content));
      const error = await KeyRing.fromFile(file).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(KeyFileError);
      expect((error as Error).message).toMatch(message);
      expect((error as Error).message).not.toContain(secret);
    }
    writeFileSync(file, JSON.stringify({ keys: [entry] }));
    const ring = await KeyRing.fromFile(file);
    writeFileSync(file, '{ not json');
    const reloaded = await ring.refresh(Date.now() + 60_000);
    expect(reloaded).toBeInstanceOf(KeyFileError);
    expect(ring.signing().kid).toBe(entry.kid);
  });

  it("local mode's key file is made once, owner-only", async () => {
    const file = join(tempDir(), 'sub', 'identity-keys.json');
    await ensureKeyFile(file);
    const first = readFileSync(file, 'utf8');
    await ensureKeyFile(file);
    expect(readFileSync(file, 'utf8')).toBe(first);
    const { statSync } = await import('node:fs');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect((await KeyRing.fromFile(file)).jwks().keys).toHaveLength(1);
  });
});
