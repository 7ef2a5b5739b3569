import { pino } from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { loadSlackConfig } from '../../src/config/slack.js';
import { markdownForStream, markdownToMrkdwn } from '../../src/surfaces/slack/answer/mrkdwn.js';
import { type ListenOptions, SlackConnection } from '../../src/surfaces/slack/connection.js';
import {
  SlackAuthError,
  type SlackRateLimitedError,
  SlackStoppedError,
  SlackUnavailableError,
} from '../../src/surfaces/slack/web-api/errors.js';
import { mentionEvent } from '../../testkit/slack/events.js';
import { type FakeSlack, startFakeSlack } from '../../testkit/slack/index.js';
import { IDLE_INBOUND, NO_BINDINGS } from '../helpers/idle-inbound.js';
import { quietWindow } from '../helpers/quiet-window.js';
import { answer } from '../peers/contract-agent/contract-agent.js';
import {
  type SlackHarness,
  type SlackHarnessOptions,
  startSlackHarness,
} from '../surfaces/slack/e2e-harness.js';
import { startTcpProxy, type TcpProxy } from './tcp-proxy.js';

/**
 * Fault matrix: Slack misbehaving end to end (the real Bolt and the surface's WebClient against the fake Web
 * API): storms of 5xx and 429 on every method an answer uses, and Slack unreachable when the
 * broker starts — for auth.test, and in Socket Mode for apps.connections.open and its WebSocket.
 * What must hold: the answer is still exactly the agent's text, in one message; after a 429
 * nothing is called again before its Retry-After; the broker waits for Slack at start rather than
 * exiting (and the abort signal ends that wait), still refuses a bad token at once, and a Socket
 * Mode connection lost later comes back once Slack answers again.
 */

const SEND = 'SendStreamingMessage';
const EDITS: SlackHarnessOptions = { fake: { streaming: false } };
const silent = pino({ level: 'silent' });

/** What listen needs besides Slack; these rows only watch the connection, never a turn. */
const NO_ENGINE: ListenOptions = { inbound: IDLE_INBOUND };

/** An event for the socket; Bolt acknowledges events before its listeners run. */
function ping(ts: string): Record<string, unknown> {
  return mentionEvent({ channel: 'C0SOCK', user: 'U0ADA', text: 'ping', ts });
}

/** No call of `method` came sooner than its Retry-After after a 429 (seconds → ms). */
function waitedOut(fake: FakeSlack, method: string, retryAfterMs: number): void {
  const calls = fake.callsOf(method);
  calls.forEach((call, i) => {
    if (call.status !== 429) return;
    const next = calls[i + 1];
    if (next !== undefined)
      expect(next.at - call.at, `${method} after a 429`).toBeGreaterThanOrEqual(retryAfterMs - 50);
  });
}

describe('Slack faults end to end', () => {
  const harnesses: SlackHarness[] = [];
  const closers: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    await Promise.all(harnesses.splice(0).map((h) => h.close()));
    for (const c of closers.splice(0)) await c();
  });
  async function harness(options: SlackHarnessOptions = {}): Promise<SlackHarness> {
    const h = await startSlackHarness(options);
    harnesses.push(h);
    return h;
  }

  for (const [mode, options, methods] of [
    ['edits', EDITS, ['chat.postMessage', 'chat.update']],
    ['a native stream', {}, ['chat.startStream', 'chat.appendStream', 'chat.stopStream']],
  ] as const) {
    it(`a storm of 5xx on every answer call (${mode}): the answer is still exact, in one message`, async () => {
      const h = await harness(options);
      const chunks = Array.from({ length: 10 }, (_, i) => `part ${i}. `);
      h.agent.enqueueFor(SEND, answer({ chunks, chunkDelayMs: 150 }));
      for (const method of methods) h.fake.serverErrorNext(method, 503, 3);
      const { ts } = await h.mention('go');
      await h.settled(1, 30_000);
      await h.waitFor('the answer to be whole', () =>
        h.botMessages(ts).some((m) => m.text.includes('part 9.') && m.streaming !== true),
      );
      const text = chunks.join('').trimEnd();
      const shown = h.botMessages(ts).map((m) => m.text);
      expect(shown).toEqual([mode === 'edits' ? markdownToMrkdwn(text) : markdownForStream(text)]);
      expect(h.fake.calls.filter((c) => c.status === 503).length).toBeGreaterThan(0);
    });

    it(`a storm of 429s on every answer call (${mode}): each waited out, the answer still exact`, async () => {
      const h = await harness(options);
      const chunks = Array.from({ length: 10 }, (_, i) => `word${i} `);
      h.agent.enqueueFor(SEND, answer({ chunks, chunkDelayMs: 150 }));
      for (const method of methods) h.fake.rateLimitNext(method, 1, 2);
      const { ts } = await h.mention('go');
      await h.settled(1, 30_000);
      await h.waitFor('the answer to be whole', () =>
        h.botMessages(ts).some((m) => m.text.includes('word9') && m.streaming !== true),
      );
      const text = chunks.join('').trimEnd();
      expect(h.botMessages(ts).map((m) => m.text)).toEqual([
        mode === 'edits' ? markdownToMrkdwn(text) : markdownForStream(text),
      ]);
      for (const method of methods) waitedOut(h.fake, method, 1_000);
      expect(h.fake.calls.filter((c) => c.status === 429).length).toBeGreaterThan(0);
    });
  }

  it('Slack unreachable at start: the broker waits for it and connects once it answers', async () => {
    const fake = await startFakeSlack();
    closers.push(() => fake.close());
    const port = Number(new URL(fake.url).port);
    const proxy: TcpProxy = await startTcpProxy({ host: '127.0.0.1', port }, 'http');
    closers.push(() => proxy.close());
    proxy.mode('refuse');
    const config = loadSlackConfig({
      SLACK_BOT_TOKEN: fake.botToken,
      SLACK_SIGNING_SECRET: 'signing-secret-123',
      SLACK_API_URL: proxy.url(new URL(fake.url).pathname),
    });
    let connected: SlackConnection | undefined;
    const connecting = SlackConnection.connect({
      config,
      logger: silent,
      bindings: NO_BINDINGS,
      connectRetry: { baseMs: 100, maxMs: 300 },
    }).then((c) => {
      connected = c;
      return c;
    });
    // Tried again and again while Slack cannot be reached, and still waiting.
    await vi.waitFor(() => expect(proxy.accepted).toBeGreaterThan(2), { timeout: 10_000 });
    expect(connected).toBeUndefined();
    proxy.mode('pass');
    const slack = await connecting;
    closers.push(() => slack.stop());
    expect(slack.teamId).toBe(fake.teamId);
  });

  it('Slack answering 5xx at start: waited out; a refused token still fails at once', async () => {
    const fake = await startFakeSlack();
    closers.push(() => fake.close());
    fake.serverErrorNext('auth.test', 503, 3);
    const config = loadSlackConfig({
      SLACK_BOT_TOKEN: fake.botToken,
      SLACK_SIGNING_SECRET: 'signing-secret-123',
      SLACK_API_URL: fake.url,
    });
    const slack = await SlackConnection.connect({
      config,
      logger: silent,
      bindings: NO_BINDINGS,
      connectRetry: { baseMs: 50, maxMs: 100 },
    });
    closers.push(() => slack.stop());
    expect(fake.callsOf('auth.test')).toHaveLength(4);
    const refused = loadSlackConfig({
      SLACK_BOT_TOKEN: 'xoxb-not-the-right-one',
      SLACK_SIGNING_SECRET: 'signing-secret-123',
      SLACK_API_URL: fake.url,
    });
    await expect(
      SlackConnection.connect({ config: refused, logger: silent, bindings: NO_BINDINGS }),
    ).rejects.toBeInstanceOf(SlackAuthError);
    expect(fake.callsOf('auth.test')).toHaveLength(5);
  });
  /** Socket Mode through a proxy the test controls: auth.test passes, then what listen meets is up to the row. */
  async function socketBehindProxy(): Promise<{ fake: FakeSlack; proxy: TcpProxy; slack: SlackConnection }> {
    const fake = await startFakeSlack();
    closers.push(() => fake.close());
    const proxy = await startTcpProxy({ host: '127.0.0.1', port: Number(new URL(fake.url).port) }, 'http');
    closers.push(() => proxy.close());
    const config = loadSlackConfig({
      SLACK_BOT_TOKEN: fake.botToken,
      SLACK_APP_TOKEN: fake.appToken,
      SLACK_API_URL: proxy.url(new URL(fake.url).pathname),
    });
    const slack = await SlackConnection.connect({
      config,
      logger: silent,
      bindings: NO_BINDINGS,
      connectRetry: { baseMs: 100, maxMs: 300 },
    });
    closers.push(() => slack.stop());
    return { fake, proxy, slack };
  }

  it('Socket Mode, Slack unreachable at start: listen waits for apps.connections.open, tells each miss, connects once it answers', async () => {
    const { fake, proxy, slack } = await socketBehindProxy();
    proxy.mode('refuse');
    const misses: Array<SlackUnavailableError | SlackRateLimitedError> = [];
    let listening = false;
    const listen = slack.listen({ ...NO_ENGINE, onUnreachable: (e) => misses.push(e) }).then(() => {
      listening = true;
    });
    await vi.waitFor(() => expect(misses.length).toBeGreaterThanOrEqual(3), { timeout: 10_000 });
    expect(listening).toBe(false);
    expect(misses[0]).toBeInstanceOf(SlackUnavailableError);
    expect(misses[0]?.method).toBe('apps.connections.open');
    expect(fake.callsOf('apps.connections.open')).toHaveLength(0);
    proxy.mode('pass');
    await listen;
    // The WebSocket went through the proxy too: the URL named the address the broker used.
    expect(fake.socketMode.connections).toEqual([expect.objectContaining({ id: 1 })]);
    expect((await fake.socketMode.sendEvent(ping('1700000000.000100'))).connection).toBe(1);
  });

  it('Socket Mode, Slack answering 5xx and 429 at start: waited out (Retry-After honoured); a refused app token fails at once', async () => {
    const fake = await startFakeSlack();
    closers.push(() => fake.close());
    fake.serverErrorNext('apps.connections.open', 503, 2);
    fake.rateLimitNext('apps.connections.open', 1, 1);
    const config = loadSlackConfig({
      SLACK_BOT_TOKEN: fake.botToken,
      SLACK_APP_TOKEN: fake.appToken,
      SLACK_API_URL: fake.url,
    });
    const slack = await SlackConnection.connect({
      config,
      logger: silent,
      bindings: NO_BINDINGS,
      connectRetry: { baseMs: 50, maxMs: 100 },
    });
    closers.push(() => slack.stop());
    const misses: string[] = [];
    await slack.listen({ ...NO_ENGINE, onUnreachable: (e) => misses.push(e.code) });
    expect(fake.callsOf('apps.connections.open').map((c) => c.status)).toEqual([503, 503, 429, 200]);
    expect(misses).toEqual(['slack_unavailable', 'slack_unavailable', 'slack_rate_limited']);
    waitedOut(fake, 'apps.connections.open', 1_000);
    expect(fake.socketMode.openCount).toBe(1);

    const refused = await SlackConnection.connect({
      bindings: NO_BINDINGS,
      config: loadSlackConfig({
        SLACK_BOT_TOKEN: fake.botToken,
        SLACK_APP_TOKEN: 'xapp-1-not-this-app',
        SLACK_API_URL: fake.url,
      }),
      logger: silent,
    });
    closers.push(() => refused.stop());
    const error = await refused.listen(NO_ENGINE).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SlackAuthError);
    expect((error as SlackAuthError).setting).toBe('SLACK_APP_TOKEN');
    expect(fake.callsOf('apps.connections.open')).toHaveLength(5);

    // A refusal @slack/socket-mode would retry every few seconds for ever (a token without
    // connections:write, say) fails at once too.
    fake.failNext('apps.connections.open', 'missing_scope');
    const unscoped = await SlackConnection.connect({ config, logger: silent, bindings: NO_BINDINGS });
    closers.push(() => unscoped.stop());
    const scopeError = await unscoped.listen(NO_ENGINE).catch((e: unknown) => e);
    expect(scopeError).toBeInstanceOf(SlackAuthError);
    expect((scopeError as SlackAuthError).message).toBe(
      'SLACK_APP_TOKEN was refused by Slack (missing_scope)',
    );
    expect(fake.callsOf('apps.connections.open')).toHaveLength(6);
  });

  it('Socket Mode, the wait for Slack ends on the signal: listen rejects with its reason, nothing connects afterwards', async () => {
    const { fake, proxy, slack } = await socketBehindProxy();
    proxy.mode('refuse');
    const stopping = new AbortController();
    const misses: unknown[] = [];
    const listen = slack
      .listen({ ...NO_ENGINE, signal: stopping.signal, onUnreachable: (e) => misses.push(e) })
      .catch((e: unknown) => e);
    await vi.waitFor(() => expect(misses.length).toBeGreaterThanOrEqual(1), { timeout: 10_000 });
    const reason = new Error('SIGTERM');
    stopping.abort(reason);
    expect(await listen).toBe(reason);
    const triedBefore = proxy.accepted;
    proxy.mode('pass');
    await quietWindow(
      1_000,
      'longer than the longest backoff (300 ms): a retry still pending would have come',
    );
    expect(proxy.accepted).toBe(triedBefore);
    expect(fake.callsOf('apps.connections.open')).toHaveLength(0);
    expect(fake.socketMode.connections).toHaveLength(0);
  });

  it('Socket Mode, stop() during the wait for Slack: listen rejects with SlackStoppedError, nothing connects afterwards', async () => {
    const { fake, proxy, slack } = await socketBehindProxy();
    proxy.mode('refuse');
    const misses: unknown[] = [];
    const listen = slack
      .listen({ ...NO_ENGINE, onUnreachable: (e) => misses.push(e) })
      .catch((e: unknown) => e);
    await vi.waitFor(() => expect(misses.length).toBeGreaterThanOrEqual(1), { timeout: 10_000 });
    await slack.stop();
    expect(await listen).toBeInstanceOf(SlackStoppedError);
    const triedBefore = proxy.accepted;
    proxy.mode('pass');
    await quietWindow(
      1_000,
      'longer than the longest backoff (300 ms): a retry still pending would have come',
    );
    expect(proxy.accepted).toBe(triedBefore);
    expect(fake.socketMode.connections).toHaveLength(0);
  });

  it('Socket Mode, the connection drops while Slack cannot be reached: the client waits and reconnects once it can', async () => {
    const { fake, proxy, slack } = await socketBehindProxy();
    await slack.listen(NO_ENGINE);
    expect((await fake.socketMode.sendEvent(ping('1700000000.000200'))).connection).toBe(1);
    // 'refuse' cuts the open WebSocket (no close frame) and refuses the reconnection's calls.
    proxy.mode('refuse');
    await vi.waitFor(() => expect(fake.socketMode.openCount).toBe(0), { timeout: 10_000 });
    const refusedBefore = proxy.accepted;
    await vi.waitFor(() => expect(proxy.accepted).toBeGreaterThan(refusedBefore + 2), { timeout: 20_000 });
    proxy.mode('pass');
    await fake.socketMode.opened(2, 20_000);
    expect((await fake.socketMode.sendEvent(ping('1700000000.000300'))).connection).toBe(2);
  });
});
