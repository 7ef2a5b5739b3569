import { existsSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import type { Browser } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { PersonIdentity } from '../../src/a2a/options.js';
import { Keyring, SealError } from '../../src/core/sealing.js';
import { SignIn, signInRoutes } from '../../src/identity/index.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { type OidcPeer, startOidcPeer } from '../../testkit/oidc-peer.js';
import { type Harness, startHarness } from '../helpers/engine-harness.js';

/**
 * "Sign in once" at a real OpenID provider (zitadel/oidc's example, tools/oidc-peer), driven
 * through the provider's own login page in Debian's Chromium: a person's first message is held
 * with a sign-in link, the sign-in completes, and the message is answered once under the
 * person's own access token (verified by the agent's side with jose against the provider's keys).
 * An email that is not the chat profile's is refused; a link the provider no longer honours asks
 * for a sign-in again, the message held; never sent under another identity.
 */

const CHROMIUM = '/usr/bin/chromium';
const playwright = await import('playwright-core').catch(() => undefined);
const skipReason =
  playwright === undefined
    ? 'playwright-core is not installed'
    : !existsSync(CHROMIUM)
      ? `${CHROMIUM} is missing (apt-get install chromium)`
      : undefined;

const CLIENT = { clientId: 'agentkourier', clientSecret: 'sign-in-secret' };
/** The provider's first example user: its login name and the email its ID token carries. */
const LOGIN = { password: 'verysecure', email: 'test-user@zitadel.ch' };
const TESTER = { id: 'U0TEST', name: 'Tess', email: 'Test-User@zitadel.ch', label: '[Test: Tess (U0TEST)]' };
const OTHER = { id: 'U0OTHER', name: 'Olga', email: 'olga@example.com', label: '[Test: Olga (U0OTHER)]' };

const cleanup: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

interface Rig {
  h: Harness;
  peer: OidcPeer;
  signIn: SignIn;
  clock: { now: number };
  store: SqliteStore;
  keyring: Keyring;
}

async function rig(): Promise<Rig> {
  // The broker's public port: only the sign-in pages.
  const server: Server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  cleanup.push(() => new Promise((r) => server.close(r)));
  const publicUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const peer = await startOidcPeer({
    ...CLIENT,
    trustIssuer: 'http://127.0.0.1:1',
    trustAudience: 'unused',
    redirect: [`${publicUrl}/identity/callback`],
  });
  cleanup.push(() => peer.stop());
  const store = new SqliteStore(':memory:');
  await store.migrate();
  cleanup.push(() => store.close());
  const clock = { now: Date.now() };
  let harness: Harness | undefined;
  const keyring = Keyring.parse(`k1:${Buffer.alloc(32, 7).toString('base64')}`, {
    setting: 'TEST_KEYS',
    what: 'a sign-in link',
    fail: (m) => new SealError('unsealable', m),
  });
  const signIn = new SignIn({
    links: () => store.identityLinks(),
    keyring,
    publicUrl: () => publicUrl,
    onLinked: (sessionId) => harness?.engine.kick(sessionId),
    now: () => clock.now,
  });
  const routes = signInRoutes(signIn);
  server.on('request', (req, res) => {
    if (!routes(req, res)) res.writeHead(404).end();
  });
  const signInSettings = {
    issuer: peer.issuer,
    ...CLIENT,
    scope: 'openid email offline_access',
    emailClaim: 'email',
    agent: 'support-agent',
  };
  const identity: PersonIdentity = {
    kind: 'person',
    audience: peer.issuer,
    header: 'Authorization',
    userIdHeader: false,
    signIn: signInSettings,
  };
  const { agent, ...provider } = signInSettings;
  harness = await startHarness({
    version: '1.0',
    client: { identity, assertions: signIn.sourceFor('team-a/support', { provider, agent }) },
    agent: { defaultAnswer: { chunks: ['answered'] } },
    timings: { giveUpAfterMs: 60_000, retryMaxMs: 2_000 },
  });
  cleanup.push(() => harness?.close() ?? Promise.resolve());
  return { h: harness, peer, signIn, clock, store, keyring };
}

/** The sign-in link the thread was given. */
function linkOf(h: Harness, sessionId: string): string {
  const notices = h.surface.of(sessionId, 'notice').filter((m) => m.noticeKind === 'sign-in-required');
  const url = notices.at(-1)?.link?.url;
  if (url === undefined) throw new Error('no sign-in link in the thread');
  return url;
}

describe.skipIf(skipReason !== undefined)(
  'sign in once at the identity provider (skipped only without Debian chromium or playwright-core)',
  () => {
    let browser: Browser;
    beforeAll(async () => {
      browser = await (playwright as typeof import('playwright-core')).chromium.launch({
        executablePath: CHROMIUM,
        args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run'],
      });
    });
    afterAll(async () => {
      await browser?.close();
    });

    /** Follows the link, signs in on the provider's own page, and returns what the broker's page says. */
    async function signInThrough(link: string, peer: OidcPeer): Promise<{ status: number; text: string }> {
      const context = await browser.newContext();
      try {
        const page = await context.newPage();
        await page.goto(link);
        await page.locator('#username').fill(`test-user@${new URL(peer.issuer).hostname}`);
        await page.locator('#password').fill(LOGIN.password);
        const landed = page.waitForResponse((r) => r.url().includes('/identity/callback'));
        await page.locator('button[type="submit"], input[type="submit"]').first().click();
        const response = await landed;
        return { status: response.status(), text: (await page.locator('#outcome').textContent()) ?? '' };
      } finally {
        await context.close();
      }
    }

    it('holds the first message, signs the person in, and answers it once under their own token', async () => {
      const { h, peer, store, keyring } = await rig();
      const { sessionId, turnId } = await h.say('t1', '1', 'restart the api', { actor: TESTER });
      await h.surface.waitFor(
        () => h.surface.notices(sessionId).includes('sign-in-required'),
        8_000,
        'the sign-in notice',
      );
      expect(h.agent.requests.filter((r) => r.rpcMethod !== undefined)).toHaveLength(0);
      const outcome = await signInThrough(linkOf(h, sessionId), peer);
      expect(outcome.status).toBe(200);
      expect(outcome.text).toContain('support-agent');
      await h.surface.waitFor(
        () =>
          h.events.some((e) => e.type === 'turn.settled' && e.turnId === turnId && e.outcome === 'completed'),
        10_000,
        'the held message answered',
      );
      const sends = h.agent.rpc('SendStreamingMessage');
      expect(sends).toHaveLength(1);
      // The provider's access token for the person who signed in, verified with the provider's keys.
      const token = String(sends[0]?.headers.authorization ?? '').replace(/^Bearer /, '');
      const { payload } = await jwtVerify(token, createRemoteJWKSet(new URL(peer.jwksUrl)), {
        issuer: peer.issuer,
      });
      expect(payload.sub).toBe('id1');
      // The refresh token is stored sealed: the row holds no token in clear, and opens only with
      // the sealing keys (the provider's refresh tokens are UUIDs).
      const subject = `test:T1:${TESTER.id}`;
      const link = await store
        .identityLinks()
        .get(subject, `${peer.issuer.replace(/\/$/, '')} ${CLIENT.clientId}`);
      const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/;
      expect(link?.email).toBe(TESTER.email);
      expect(link?.sealed).toMatch(/^v1\.k1\./);
      expect(UUID.test(JSON.stringify(link))).toBe(false);
      const opened = keyring.open(link?.sealed ?? '', `identity-link\n${subject}\n${link?.provider}`);
      expect(opened).toMatch(UUID);
      // The next message goes at once, with a token of the same person.
      const next = await h.say('t1', '2', 'and the worker', { actor: TESTER });
      await h.surface.waitFor(
        () =>
          h.events.some(
            (e) => e.type === 'turn.settled' && e.turnId === next.turnId && e.outcome === 'completed',
          ),
        8_000,
        'the next message answered',
      );
      expect(h.surface.notices(sessionId).filter((k) => k === 'sign-in-required')).toHaveLength(1);
    });

    it('refuses a sign-in whose email is not the chat profile’s, and sends nothing', async () => {
      const { h, peer } = await rig();
      const { sessionId } = await h.say('t1', '1', 'hello', { actor: OTHER });
      await h.surface.waitFor(
        () => h.surface.notices(sessionId).includes('sign-in-required'),
        8_000,
        'the sign-in notice',
      );
      const outcome = await signInThrough(linkOf(h, sessionId), peer);
      expect(outcome.status).toBe(403);
      expect(outcome.text).toContain(LOGIN.email);
      expect(outcome.text).toContain(OTHER.email);
      expect(h.agent.requests.filter((r) => r.rpcMethod !== undefined)).toHaveLength(0);
    });

    it('a link the provider no longer honours, or one the person ended, asks for a sign-in again, the message held', async () => {
      const { h, peer, signIn, clock } = await rig();
      const first = await h.say('t1', '1', 'hello', { actor: TESTER });
      await h.surface.waitFor(
        () => h.surface.notices(first.sessionId).includes('sign-in-required'),
        8_000,
        'the sign-in notice',
      );
      expect((await signInThrough(linkOf(h, first.sessionId), peer)).status).toBe(200);
      await h.surface.waitFor(
        () => h.events.some((e) => e.type === 'turn.settled' && e.turnId === first.turnId),
        10_000,
        'answered',
      );
      // The provider restarts and forgets its refresh tokens; the access token kept has expired.
      await peer.stop();
      await peer.start();
      clock.now += 10 * 60_000;
      const second = await h.say('t2', '1', 'again', { actor: TESTER });
      await h.surface.waitFor(
        () => h.surface.notices(second.sessionId).includes('sign-in-required'),
        8_000,
        'asked to sign in again',
      );
      expect(h.agent.rpc('SendStreamingMessage')).toHaveLength(1);
      const again = await signInThrough(linkOf(h, second.sessionId), peer);
      expect(again, again.text).toMatchObject({ status: 200 });
      await h.surface.waitFor(
        () =>
          h.events.some(
            (e) => e.type === 'turn.settled' && e.turnId === second.turnId && e.outcome === 'completed',
          ),
        10_000,
        'answered after the new sign-in',
      );
      // Unlinked by the person: the next message asks again.
      expect(await signIn.unlink(`test:T1:${TESTER.id}`)).toBe(1);
      const third = await h.say('t3', '1', 'once more', { actor: TESTER });
      await h.surface.waitFor(
        () => h.surface.notices(third.sessionId).includes('sign-in-required'),
        8_000,
        'asked to sign in after unlinking',
      );
      expect(h.agent.rpc('SendStreamingMessage')).toHaveLength(2);
    });
  },
);
