import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRemoteJWKSet, decodeProtectedHeader, type JWTPayload, jwtVerify } from 'jose';
import { afterEach, describe, expect, it } from 'vitest';
import type { PersonIdentity } from '../../src/a2a/options.js';
import type { StructuredReply } from '../../src/core/ports.js';
import {
  AssertionSigner,
  CLAIMS_NAMESPACE,
  KeyRing,
  newKeyEntry,
  wellKnownRoutes,
} from '../../src/identity/index.js';
import { APPROVER, startKagentHarness } from '../dialects/kagent-harness.js';
import { BINDING, type Harness, startHarness } from '../helpers/engine-harness.js';
import { answer, kagentApproval } from '../peers/contract-agent/contract-agent.js';

/**
 * A per-person Binding end to end: the engine, the real A2A client and the contract agent, which
 * verifies every call's assertion with jose against the JWKS the broker serves (not with the
 * broker's code). Each person is their own subject; a trigger's turn says no person asked; an
 * approval's decision is the approver's; on kagent-v1, X-User-Id is the person.
 */

const BOB = {
  id: 'U0BOB',
  name: 'Bob',
  email: 'bob@example.com',
  label: '[Test: Bob (U0BOB) <bob@example.com>]',
};

const servers: Server[] = [];
const harnesses: Harness[] = [];
afterEach(async () => {
  for (const h of harnesses.splice(0)) await h.close();
  for (const s of servers.splice(0)) await new Promise((r) => s.close(r));
});

/** The broker's signer, its JWKS served over HTTP as the broker serves it. */
async function servedSigner(): Promise<{
  signer: AssertionSigner;
  jwks: ReturnType<typeof createRemoteJWKSet>;
  issuer: string;
}> {
  const server = createServer();
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const signer = new AssertionSigner({ issuer, keys: await KeyRing.ephemeral() });
  const routes = wellKnownRoutes(signer);
  server.on('request', (req, res) => {
    if (!routes(req, res)) res.writeHead(404).end();
  });
  return { signer, jwks: createRemoteJWKSet(new URL(`${issuer}/.well-known/jwks.json`)), issuer };
}

/** Every assertion the agent got on its JSON-RPC calls, verified; a bad one fails the test. */
async function verifiedCalls(
  h: Harness,
  jwks: ReturnType<typeof createRemoteJWKSet>,
  issuer: string,
  audience: string,
  header = 'authorization',
): Promise<{ method: string; payload: JWTPayload; userId: string | undefined }[]> {
  const out = [];
  for (const r of h.agent.requests.filter((q) => q.rpcMethod !== undefined)) {
    const raw = String(r.headers[header] ?? '');
    const token = header === 'authorization' ? raw.replace(/^Bearer /, '') : raw;
    const { payload } = await jwtVerify(token, jwks, { issuer, audience, algorithms: ['ES256'] });
    const userId = r.headers['x-user-id'];
    out.push({ method: r.rpcMethod ?? '', payload, userId: typeof userId === 'string' ? userId : undefined });
  }
  return out;
}

describe('a per-person identity, verified by the agent', () => {
  it('gives two people in one thread two subjects, each verified, and a trigger’s turn no person', async () => {
    const { signer, jwks, issuer } = await servedSigner();
    const identity: PersonIdentity = {
      kind: 'person',
      audience: 'urn:test:agent',
      header: 'Authorization',
      userIdHeader: false,
    };
    const h = await startHarness({
      version: '1.0',
      client: { identity, assertions: signer.sourceFor(BINDING) },
      agent: { defaultAnswer: { chunks: ['ok'] } },
    });
    harnesses.push(h);
    const settled = (turnId: string) =>
      h.surface.waitFor(
        () => h.events.some((e) => e.type === 'turn.settled' && e.turnId === turnId),
        8_000,
        'settled',
      );
    await settled((await h.say('t1', '1', 'from Ada')).turnId);
    await settled((await h.say('t1', '2', 'from Bob', { actor: BOB })).turnId);
    await h.engine.receive({
      kind: 'trigger',
      key: h.key('t2'),
      binding: BINDING,
      chatMessageId: 'alert-1',
      instruction: 'look at the alert',
      fields: {},
    } as Parameters<typeof h.engine.receive>[0]);
    await h.surface.waitFor(
      () => h.events.filter((e) => e.type === 'turn.settled').length === 3,
      8_000,
      'three turns',
    );

    const sends = (await verifiedCalls(h, jwks, issuer, 'urn:test:agent')).filter(
      (c) => c.method === 'SendStreamingMessage',
    );
    expect(sends.map((c) => c.payload.sub)).toEqual([
      'test:T1:U123',
      'test:T1:U0BOB',
      'trigger:team-a/support',
    ]);
    expect(sends.map((c) => c.payload.email)).toEqual(['ada@example.com', 'bob@example.com', undefined]);
    expect(sends.map((c) => (c.payload[CLAIMS_NAMESPACE] as { person: boolean }).person)).toEqual([
      true,
      true,
      false,
    ]);
    // Nothing else identifies the call: no X-User-Id when the Binding does not ask for it.
    expect(sends.every((c) => c.userId === undefined)).toBe(true);
    // The card, which A2A serves to anyone, is read without an assertion.
    const card = h.agent.requests.find((r) => r.rpcMethod === undefined);
    expect(card?.headers.authorization).toBeUndefined();
  });

  it('an assertion for one agent is refused by another (its audience)', async () => {
    const { signer, jwks, issuer } = await servedSigner();
    const { token } = await signer.sign(undefined, 'urn:test:agent-a', BINDING);
    await expect(jwtVerify(token, jwks, { issuer, audience: 'urn:test:agent-b' })).rejects.toThrow(/aud/);
  });

  it('on kagent-v1: X-User-Id is the person (their email), and an approval’s decision carries the approver', async () => {
    const { signer, jwks, issuer } = await servedSigner();
    const identity: PersonIdentity = {
      kind: 'person',
      audience: 'urn:test:kagent',
      header: 'X-Agent-Identity',
      userIdHeader: true,
    };
    const h = await startKagentHarness({ version: '1.0', identity, assertions: signer.sourceFor(BINDING) });
    harnesses.push(h);
    h.agent.enqueueFor(
      'SendStreamingMessage',
      kagentApproval([{ id: 'adk-conf-1', callId: 'call_a', name: 'add_numbers', args: { a: 2, b: 3 } }], {
        results: { add_numbers: { result: 5 } },
      }),
    );
    const { sessionId } = await h.say('t1', 't1-1', 'add two and three');
    await h.surface.waitFor(() => h.surface.of(sessionId, 'question').length === 1, 5_000, 'the question');
    const questionKey = (await h.store.getSession(sessionId))?.question?.questionKey ?? '';
    const reply: StructuredReply = {
      type: 'tool_approval',
      decisions: [{ id: 'adk-conf-1', approved: true }],
    };
    expect((await h.answer('t1', questionKey, reply)).status).toBe('accepted');
    await h.surface.waitFor(
      () => h.surface.of(sessionId, 'answer').some((m) => m.final === true),
      5_000,
      'the answer',
    );

    const sends = (await verifiedCalls(h, jwks, issuer, 'urn:test:kagent', 'x-agent-identity')).filter(
      (c) => c.method === 'SendStreamingMessage',
    );
    expect(sends).toHaveLength(2);
    expect(sends[0]?.payload.sub).toBe('test:T1:U123');
    expect(sends[0]?.userId).toBe('ada@example.com');
    expect(sends[1]?.payload.sub).toBe(`test:T1:${APPROVER.id}`);
    expect(sends[1]?.userId).toBe(APPROVER.email);
    // The assertion went in the header the Binding named; Authorization carries nothing.
    expect(h.agent.requests.every((r) => r.headers.authorization === undefined)).toBe(true);
  });

  it("a person's Stop is their own call: the CancelTask carries their assertion", async () => {
    const { signer, jwks, issuer } = await servedSigner();
    const identity: PersonIdentity = {
      kind: 'person',
      audience: 'urn:test:agent',
      header: 'Authorization',
      userIdHeader: false,
    };
    const h = await startHarness({
      version: '1.0',
      client: { identity, assertions: signer.sourceFor(BINDING) },
    });
    harnesses.push(h);
    h.agent.enqueueFor(
      'SendStreamingMessage',
      answer({ chunks: Array.from({ length: 40 }, (_, i) => `part ${i} `), chunkDelayMs: 100 }),
    );
    const { turnId } = await h.say('t1', '1', 'a long job');
    await h.surface.waitFor(
      () => h.events.some((e) => e.type === 'turn.accepted'),
      5_000,
      'the task accepted',
    );
    expect((await h.engine.cancel(h.key('t1'), { actor: { id: BOB.id }, turnId })).status).toBe('canceled');
    await h.engine.idle();
    const calls = await verifiedCalls(h, jwks, issuer, 'urn:test:agent');
    expect(calls.find((c) => c.method === 'SendStreamingMessage')?.payload.sub).toBe('test:T1:U123');
    expect(calls.find((c) => c.method === 'CancelTask')?.payload.sub).toBe('test:T1:U0BOB');
  });

  it('a key rotated mid-conversation loses no turn: the agent, verifying, takes turns signed by either key', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ak-rotation-'));
    try {
      const file = join(dir, 'keys.json');
      const old = await newKeyEntry('ES256', new Date(Date.now() - 86_400_000));
      writeFileSync(file, JSON.stringify({ keys: [old] }));
      const server = createServer();
      servers.push(server);
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const signer = new AssertionSigner({ issuer, keys: await KeyRing.fromFile(file) });
      const routes = wellKnownRoutes(signer);
      server.on('request', (req, res) => {
        if (!routes(req, res)) res.writeHead(404).end();
      });
      const identity: PersonIdentity = {
        kind: 'person',
        audience: 'urn:test:agent',
        header: 'Authorization',
        userIdHeader: false,
      };
      const h = await startHarness({
        version: '1.0',
        client: { identity, assertions: signer.sourceFor(BINDING) },
        agent: { defaultAnswer: { chunks: ['ok'] }, verifyIdentity: { issuer, audience: 'urn:test:agent' } },
      });
      harnesses.push(h);
      const completed = (turnId: string) =>
        h.surface.waitFor(
          () =>
            h.events.some(
              (e) => e.type === 'turn.settled' && e.turnId === turnId && e.outcome === 'completed',
            ),
          8_000,
          'the turn completed',
        );
      // The new key is published first, to sign a moment later, as docs/identity.md rotates.
      const fresh = await newKeyEntry('EdDSA', new Date(Date.now() + 1_500));
      writeFileSync(file, JSON.stringify({ keys: [old, fresh] }));
      await completed((await h.say('t1', '1', 'before the rotation')).turnId);
      await h.surface.waitFor(
        () => {
          void signer.keyRing.refresh(Date.now());
          return signer.signingKid() === fresh.kid;
        },
        10_000,
        'the new key signing',
      );
      await completed((await h.say('t1', '2', 'after the rotation')).turnId);
      const kids = h.agent
        .rpc('SendStreamingMessage')
        .map((r) => decodeProtectedHeader(String(r.headers.authorization).replace(/^Bearer /, '')).kid);
      expect(kids).toEqual([old.kid, fresh.kid]);
      expect(h.agent.requests.some((r) => r.identityRefused === true)).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
