import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { buildPageScript } from '../../scripts/build-webchat.js';
import { type RunningLocal, startLocal } from '../../src/app/local.js';
import { type OidcPeer, startOidcPeer } from '../../testkit/oidc-peer.js';
import { type ContractAgent, startContractAgent } from '../peers/contract-agent/contract-agent.js';

/**
 * What must never be written in clear: the broker's private keys, the identity provider's client
 * secret and the tokens it exchanged for people. Local mode runs a per-person Binding that
 * exchanges at a real OpenID provider (tools/oidc-peer), logging everything (level trace) and
 * exporting every span to a collector of the test's; after a turn, the logs, the spans and the
 * SQLite files are searched for each secret.
 */

const CLIENT_SECRET = 'leak-test-client-secret-7f3a9c';

const cleanup: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  await new Promise((r) => server.close(r));
  return port;
}

/** An OTLP/HTTP JSON collector that keeps every body it is sent. */
async function collector(): Promise<{ url: string; bodies: string[] }> {
  const bodies: string[] = [];
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => {
      body += d.toString();
    });
    req.on('end', () => {
      bodies.push(body);
      res.setHeader('content-type', 'application/json');
      res.end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  cleanup.push(() => new Promise((r) => server.close(r)));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, bodies };
}

function manifest(agent: ContractAgent, peer: OidcPeer): string {
  return `---
apiVersion: agentkourier.dev/v1alpha1
kind: AgentBackend
metadata: { name: agent }
spec: { dialect: a2a, url: "${agent.endpoint}" }
---
apiVersion: v1
kind: Secret
metadata: { name: idp-client }
stringData: { secret: "${CLIENT_SECRET}" }
---
apiVersion: agentkourier.dev/v1alpha1
kind: Binding
metadata: { name: exchanged }
spec:
  backendRef: { name: agent }
  identity:
    perPerson:
      audience: urn:test:idp
      exchange:
        tokenUrl: "${peer.tokenUrl}"
        clientId: agentkourier
        clientSecretRef: { name: idp-client, key: secret }
        audience: urn:test:agent
`;
}

describe('no secret of the identity layer is written in clear', () => {
  it('after an exchanged turn, the logs, the spans and the database hold no private key, client secret or token', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'ak-identity-leaks-'));
    cleanup.push(() => rm(dir, { recursive: true, force: true }));
    const port = await freePort();
    const issuer = `http://127.0.0.1:${port}`;
    const peer = await startOidcPeer({
      clientId: 'agentkourier',
      clientSecret: CLIENT_SECRET,
      trustIssuer: issuer,
      trustAudience: 'urn:test:idp',
    });
    cleanup.push(() => peer.stop());
    const agent = await startContractAgent({ version: '1.0', defaultAnswer: { chunks: ['all ', 'good'] } });
    cleanup.push(() => agent.close());
    const config = join(dir, 'local.yaml');
    await writeFile(config, manifest(agent, peer));
    const spans = await collector();
    let logs = '';
    const logger = pino(
      { level: 'trace' },
      new Writable({
        write(chunk: Buffer, _encoding, done) {
          logs += chunk.toString();
          done();
        },
      }),
    );
    const running: RunningLocal = await startLocal({
      config,
      host: '127.0.0.1',
      port,
      demo: false,
      env: {
        AGENTKOURIER_STORE: `sqlite:${join(dir, 'state.db')}`,
        OTEL_EXPORTER_OTLP_ENDPOINT: spans.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_TRACES_SAMPLER: 'always_on',
      },
      out: () => undefined,
      pageScript: buildPageScript,
      logger,
    });
    cleanup.push(() => running.stop());

    const origin = running.url.replace(/\/$/, '');
    const created = await fetch(`${origin}/api/threads`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin },
      body: JSON.stringify({ binding: 'default/exchanged', text: 'who am I?' }),
    });
    expect(created.status).toBe(201);
    const { thread } = (await created.json()) as { thread: { id: string } };
    const deadline = Date.now() + 20_000;
    let answered = false;
    while (!answered && Date.now() < deadline) {
      const read = (await (await fetch(`${origin}/api/threads/${thread.id}`)).json()) as {
        messages: { kind: string; final?: boolean }[];
      };
      answered = read.messages.some((m) => m.kind === 'answer' && m.final === true);
      if (!answered) await new Promise((r) => setTimeout(r, 100));
    }
    expect(answered).toBe(true);
    await running.stop();
    cleanup.pop();

    // What must not appear: the provider's token the agent got, the client's secret, the keys.
    const send = agent.rpc('SendStreamingMessage')[0];
    const token = String(send?.headers.authorization ?? '').replace(/^Bearer /, '');
    expect(peer.exchanges.filter((e) => e.exchange === 'ok')).toHaveLength(1);
    expect(token.split('.')).toHaveLength(3);
    const keyFile = JSON.parse(await readFile(join(dir, 'identity-keys.json'), 'utf8')) as {
      keys: { privateJwk: { d: string } }[];
    };
    const privateParts = keyFile.keys.map((k) => k.privateJwk.d);
    expect(privateParts.length).toBeGreaterThan(0);
    const secrets = [token, token.split('.')[2] ?? '', CLIENT_SECRET, ...privateParts];

    // The places searched hold what was done: the turn is in the logs, the spans and the store.
    expect(logs).toContain('default/exchanged');
    await expect.poll(() => spans.bodies.join('\n'), { timeout: 10_000 }).toContain('SendStreamingMessage');
    const stored = await Promise.all(
      (await readdir(dir)).filter((f) => f.startsWith('state.db')).map((f) => readFile(join(dir, f))),
    );
    const database = Buffer.concat(stored).toString('latin1');
    expect(database).toContain('who am I?');
    for (const secret of secrets) {
      expect(secret.length).toBeGreaterThan(8);
      expect(logs.includes(secret), 'a secret in the logs').toBe(false);
      expect(
        spans.bodies.some((b) => b.includes(secret)),
        'a secret in the spans',
      ).toBe(false);
      expect(database.includes(secret), 'a secret in the database').toBe(false);
    }
  });
});
