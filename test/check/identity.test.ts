import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { AssertionSigner, KeyRing, newKeyEntry, wellKnownRoutes } from '../../src/identity/index.js';
import { check, checkJson, closeAgents, failed, rule, start } from './helpers.js';

/**
 * `agentkourier check --identity-keys`: the checker calls as a per-person Binding does (every
 * call signed), and sends a forged, an expired and a wrong-audience assertion, which an agent that
 * verifies (the contract agent with jose against the served JWKS) must refuse.
 */

const AUDIENCE = 'urn:test:checked-agent';
const dirs: string[] = [];
const servers: Server[] = [];
afterEach(async () => {
  await closeAgents();
  for (const s of servers.splice(0)) await new Promise((r) => s.close(r));
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A key file, and the broker's JWKS for it served at an issuer URL. */
async function brokerKeys(): Promise<{ file: string; issuer: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'kourier-check-id-'));
  dirs.push(dir);
  const file = join(dir, 'keys.json');
  writeFileSync(file, JSON.stringify({ keys: [await newKeyEntry()] }));
  const server = createServer();
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const routes = wellKnownRoutes(new AssertionSigner({ issuer, keys: await KeyRing.fromFile(file) }));
  server.on('request', (req, res) => {
    if (!routes(req, res)) res.writeHead(404).end();
  });
  return { file, issuer };
}

describe('agentkourier check: identity.verified', () => {
  it('passes an agent that verifies: every rule judged on signed calls, the three bad assertions refused', async () => {
    const { file, issuer } = await brokerKeys();
    const agent = await start({ version: '1.0', verifyIdentity: { issuer, audience: AUDIENCE } });
    const { code, report } = await checkJson([
      agent.endpoint,
      '--identity-keys',
      file,
      '--issuer',
      issuer,
      '--audience',
      AUDIENCE,
    ]);
    expect(rule(report, 'identity.verified').status).toBe('PASS');
    expect(failed(report)).toEqual([]);
    expect(code).toBe(0);
    // Exactly the three bad ones were refused.
    expect(agent.requests.filter((r) => r.identityRefused === true)).toHaveLength(3);
  });

  it('fails an agent that takes whatever it is sent', async () => {
    const { file, issuer } = await brokerKeys();
    const agent = await start({ version: '1.0' });
    const { code, report } = await checkJson([agent.endpoint, '--identity-keys', file, '--issuer', issuer]);
    const verdict = rule(report, 'identity.verified');
    expect(verdict.status).toBe('FAIL');
    expect(verdict.detail).toMatch(
      /^did not refuse an assertion signed by another key \(HTTP 200\), expired \(HTTP 200\), for another audience \(HTTP 200\)$/,
    );
    expect(code).toBe(1);
  });

  it('fails, and says why, when the agent refuses even a good assertion (another audience expected)', async () => {
    const { file, issuer } = await brokerKeys();
    const agent = await start({
      version: '1.0',
      verifyIdentity: { issuer, audience: 'urn:test:someone-else' },
    });
    const { report } = await checkJson([
      agent.endpoint,
      '--identity-keys',
      file,
      '--issuer',
      issuer,
      '--audience',
      AUDIENCE,
    ]);
    expect(rule(report, 'identity.verified')).toMatchObject({ status: 'FAIL' });
    expect(rule(report, 'identity.verified').detail).toMatch(/^refused a good assertion \(HTTP 401\)/);
  });

  it('is skipped without --identity-keys, and its options go together', async () => {
    const agent = await start({ version: '1.0' });
    const { report } = await checkJson([agent.endpoint]);
    expect(rule(report, 'identity.verified').status).toBe('SKIP');
    const { code, err } = await check([agent.endpoint, '--identity-keys', '/nonexistent']);
    expect(code).toBe(2);
    expect(err.join('\n')).toContain('--identity-keys needs --issuer <url>');
    const bad = await check([agent.endpoint, '--identity-keys', '/nonexistent', '--issuer', 'http://x.test']);
    expect(bad.code).toBe(2);
    expect(bad.err.join('\n')).toMatch(/identity key file \/nonexistent: cannot be read/);
  });
});
