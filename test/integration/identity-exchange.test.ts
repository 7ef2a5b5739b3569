import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRemoteJWKSet, type JWTPayload, jwtVerify } from 'jose';
import { afterEach, describe, expect, it } from 'vitest';
import type { PersonIdentity } from '../../src/a2a/options.js';
import {
  IdentityExchangeRefusedError,
  IdentityProviderUnavailableError,
} from '../../src/core/agent/errors.js';
import {
  AssertionSigner,
  type ExchangeResult,
  exchangingSource,
  KeyRing,
  TokenExchanger,
  wellKnownRoutes,
} from '../../src/identity/index.js';
import { type OidcPeer, startOidcPeer } from '../../testkit/oidc-peer.js';
import { BINDING, type Harness, startHarness } from '../helpers/engine-harness.js';

/**
 * Token exchange (RFC 8693) at a real OpenID provider: zitadel/oidc's example provider
 * (tools/oidc-peer), configured to trust the broker's JWKS. The agent verifies the provider's
 * access tokens with jose against the provider's keys, never with the broker's code.
 */

const CLIENT = { clientId: 'agentkourier', clientSecret: 'exchange-secret' };
const AGENT_AUDIENCE = 'urn:test:agent';
const BOB = { id: 'U0BOB', name: 'Bob', email: 'bob@example.com', label: '[Test: Bob (U0BOB)]' };
const CAROL = { id: 'U0CAROL', name: 'Carol', label: '[Test: Carol (U0CAROL)]' };

const servers: Server[] = [];
const peers: OidcPeer[] = [];
const harnesses: Harness[] = [];
afterEach(async () => {
  for (const h of harnesses.splice(0)) await h.close();
  for (const p of peers.splice(0)) await p.stop();
  for (const s of servers.splice(0)) await new Promise((r) => s.close(r));
});

/** The broker's signer with its JWKS served over HTTP, as the broker serves it. */
async function servedSigner(): Promise<AssertionSigner> {
  const server = createServer();
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const signer = new AssertionSigner({ issuer, keys: await KeyRing.ephemeral() });
  const routes = wellKnownRoutes(signer);
  server.on('request', (req, res) => {
    if (!routes(req, res)) res.writeHead(404).end();
  });
  return signer;
}

async function provider(signer: AssertionSigner, deny: string[] = []): Promise<OidcPeer> {
  const peer = await startOidcPeer({
    ...CLIENT,
    trustIssuer: signer.issuer,
    trustAudience: 'urn:test:idp',
    deny,
  });
  peers.push(peer);
  return peer;
}

function exchangeIdentity(peer: OidcPeer): PersonIdentity {
  return {
    kind: 'person',
    audience: 'urn:test:idp',
    header: 'Authorization',
    userIdHeader: false,
    exchange: { tokenUrl: peer.tokenUrl, ...CLIENT, audience: AGENT_AUDIENCE, agent: 'support-agent' },
  };
}

/** The provider's access tokens the agent got on its sends, verified against the provider's keys. */
async function verifiedSends(h: Harness, peer: OidcPeer): Promise<JWTPayload[]> {
  const jwks = createRemoteJWKSet(new URL(peer.jwksUrl));
  const out: JWTPayload[] = [];
  for (const r of h.agent.requests.filter((q) => q.rpcMethod === 'SendStreamingMessage')) {
    const token = String(r.headers.authorization ?? '').replace(/^Bearer /, '');
    const { payload } = await jwtVerify(token, jwks, { issuer: peer.issuer, audience: AGENT_AUDIENCE });
    out.push(payload);
  }
  return out;
}

describe('a per-person identity exchanged at the identity provider (RFC 8693)', () => {
  it('two people in one thread: each turn carries the provider’s token for its person, one exchange per person', async () => {
    const signer = await servedSigner();
    const peer = await provider(signer);
    const results: ExchangeResult[] = [];
    const exchanger = new TokenExchanger(exchangeIdentity(peer).exchange ?? CLIENT_MISSING(), {
      onExchange: (r) => results.push(r),
    });
    const h = await startHarness({
      version: '1.0',
      client: { identity: exchangeIdentity(peer), assertions: exchangingSource(signer, BINDING, exchanger) },
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
    await settled((await h.say('t1', '3', 'Ada again')).turnId);
    await settled((await h.say('t1', '4', 'Bob again', { actor: BOB })).turnId);

    const sends = await verifiedSends(h, peer);
    expect(sends.map((p) => p.sub)).toEqual([
      'test:T1:U123',
      'test:T1:U0BOB',
      'test:T1:U123',
      'test:T1:U0BOB',
    ]);
    // The provider's token, not the broker's assertion: its issuer is the provider.
    expect(sends.every((p) => p.iss === peer.issuer)).toBe(true);
    // Kept per person until shortly before it expires: two people, two exchanges.
    expect(peer.exchanges.filter((e) => e.exchange === 'ok').map((e) => e.subject)).toEqual([
      'test:T1:U123',
      'test:T1:U0BOB',
    ]);
    expect(results).toEqual(['ok', 'ok']);
  });

  it('a person the provider refuses: the thread hears which agent and what the provider said, nothing is sent', async () => {
    const signer = await servedSigner();
    const peer = await provider(signer, ['test:T1:U0BOB']);
    const h = await startHarness({
      version: '1.0',
      client: {
        identity: exchangeIdentity(peer),
        assertions: exchangingSource(
          signer,
          BINDING,
          new TokenExchanger(exchangeIdentity(peer).exchange ?? CLIENT_MISSING()),
        ),
      },
      agent: { defaultAnswer: { chunks: ['ok'] } },
    });
    harnesses.push(h);
    const { sessionId, turnId } = await h.say('t1', '1', 'from Bob', { actor: BOB });
    await h.surface.waitFor(
      () => h.events.some((e) => e.type === 'turn.settled' && e.turnId === turnId),
      8_000,
      'the refused turn settled',
    );
    const [told] = h.surface.of(sessionId, 'notice');
    expect(told?.noticeKind).toBe('identity-exchange-refused');
    expect(told?.text).toContain('support-agent');
    expect(told?.text).toContain('(invalid_grant)');
    // Never sent under a weaker identity: the agent got no call for it.
    expect(h.agent.requests.filter((r) => r.rpcMethod !== undefined)).toHaveLength(0);
    // The message stays recorded; the next one tries again (and Ada, not refused, is answered).
    expect((await h.store.getTurn(turnId))?.text).toContain('from Bob');
    const next = await h.say('t1', '2', 'from Ada');
    await h.surface.waitFor(
      () =>
        h.events.some(
          (e) => e.type === 'turn.settled' && e.turnId === next.turnId && e.outcome === 'completed',
        ),
      8_000,
      'Ada answered',
    );
    expect(peer.exchanges.map((e) => e.exchange)).toEqual(['refused', 'ok']);
  });

  it('the provider down: the thread is told at once, the message waits, and is answered once when it is back', async () => {
    const signer = await servedSigner();
    const peer = await provider(signer);
    const h = await startHarness({
      version: '1.0',
      client: {
        identity: exchangeIdentity(peer),
        assertions: exchangingSource(
          signer,
          BINDING,
          new TokenExchanger(exchangeIdentity(peer).exchange ?? CLIENT_MISSING()),
        ),
      },
      agent: { defaultAnswer: { chunks: ['answered'] } },
      timings: { giveUpAfterMs: 60_000 },
    });
    harnesses.push(h);
    await peer.stop();
    const { sessionId, turnId } = await h.say('t1', '1', 'from Carol', { actor: CAROL });
    await h.surface.waitFor(
      () => h.surface.notices(sessionId).includes('identity-provider-unavailable'),
      8_000,
      'the provider-down notice',
    );
    expect(h.agent.requests.filter((r) => r.rpcMethod !== undefined)).toHaveLength(0);
    await peer.start();
    await h.surface.waitFor(
      () =>
        h.events.some((e) => e.type === 'turn.settled' && e.turnId === turnId && e.outcome === 'completed'),
      15_000,
      'the turn answered',
    );
    expect(h.agent.requests.filter((r) => r.rpcMethod === 'SendStreamingMessage')).toHaveLength(1);
    expect(h.surface.notices(sessionId).filter((k) => k === 'identity-provider-unavailable')).toHaveLength(1);
  });

  it('the exchanger: a token is kept until shortly before it expires, then exchanged again', async () => {
    const signer = await servedSigner();
    const peer = await provider(signer);
    let now = Date.now();
    const exchanger = new TokenExchanger(exchangeIdentity(peer).exchange ?? CLIENT_MISSING(), {
      now: () => now,
    });
    const assert = async () => (await signer.sign(undefined, 'urn:test:idp', BINDING)).token;
    const first = await exchanger.tokenFor('broker:x', assert);
    expect(await exchanger.tokenFor('broker:x', assert)).toBe(first);
    // Concurrent calls for one person share one exchange.
    await Promise.all([exchanger.tokenFor('p2', assert), exchanger.tokenFor('p2', assert)]);
    expect(peer.exchanges).toHaveLength(2);
    // The provider's tokens live 5 minutes: 4 minutes 40 s later the token is renewed.
    now += 280_000;
    const renewed = await exchanger.tokenFor('broker:x', assert);
    expect(renewed).not.toBe(first);
    expect(peer.exchanges).toHaveLength(3);
  });

  it('the provider refuses an assertion it cannot trust: another signer’s, or for another audience', async () => {
    const signer = await servedSigner();
    const peer = await provider(signer);
    const stranger = new AssertionSigner({ issuer: signer.issuer, keys: await KeyRing.ephemeral() });
    const exchanger = new TokenExchanger(exchangeIdentity(peer).exchange ?? CLIENT_MISSING());
    const unsigned = async () => (await stranger.sign(undefined, 'urn:test:idp', BINDING)).token;
    const elsewhere = async () => (await signer.sign(undefined, 'urn:test:other', BINDING)).token;
    for (const assert of [unsigned, elsewhere]) {
      const refused = await exchanger.tokenFor('s', assert).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(IdentityExchangeRefusedError);
      expect((refused as IdentityExchangeRefusedError).providerError).toBe('invalid_request');
    }
    expect(peer.exchanges.map((e) => e.why)).toEqual(['signature', 'audience']);
    // A wrong client secret is the provider's refusal too, never a fallback.
    const wrong = new TokenExchanger({
      ...(exchangeIdentity(peer).exchange ?? CLIENT_MISSING()),
      clientSecret: 'no',
    });
    const refused = await wrong
      .tokenFor('s', async () => (await signer.sign(undefined, 'urn:test:idp', BINDING)).token)
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(IdentityExchangeRefusedError);
    await peer.stop();
    const down = await exchanger.tokenFor('s2', elsewhere).catch((e: unknown) => e);
    expect(down).toBeInstanceOf(IdentityProviderUnavailableError);
  });
});

function CLIENT_MISSING(): never {
  throw new Error('the identity has no exchange');
}
