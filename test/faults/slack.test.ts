import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { loadSlackConfig } from '../../src/config/slack.js';
import { SlackConnection } from '../../src/surfaces/slack/app.js';
import { SlackAuthError } from '../../src/surfaces/slack/errors.js';
import { markdownForStream, markdownToMrkdwn } from '../../src/surfaces/slack/mrkdwn.js';
import { type FakeSlack, startFakeSlack } from '../../testkit/slack/index.js';
import { answer } from '../agents/contract-agent.js';
import {
  type SlackHarness,
  type SlackHarnessOptions,
  startSlackHarness,
} from '../surfaces/slack/e2e-harness.js';
import { startTcpProxy, type TcpProxy } from './tcp-proxy.js';

/**
 * Fault matrix: Slack misbehaving end to end (the real Bolt and the surface's Web API transport against the fake Web
 * API): storms of 5xx and 429 on every method an answer uses, and Slack unreachable when the
 * broker starts. What must hold: the answer is still exactly the agent's text, in one message;
 * after a 429 nothing is called again before its Retry-After; the broker waits for Slack at
 * start rather than exiting, and still refuses a bad token at once.
 */

const SEND = 'SendStreamingMessage';
const EDITS: SlackHarnessOptions = { fake: { streaming: false } };
const silent = pino({ level: 'silent' });

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
      connectRetry: { baseMs: 100, maxMs: 300 },
    }).then((c) => {
      connected = c;
      return c;
    });
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(connected).toBeUndefined();
    expect(proxy.accepted).toBeGreaterThan(1);
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
      connectRetry: { baseMs: 50, maxMs: 100 },
    });
    closers.push(() => slack.stop());
    expect(fake.callsOf('auth.test')).toHaveLength(4);
    const refused = loadSlackConfig({
      SLACK_BOT_TOKEN: 'xoxb-not-the-right-one',
      SLACK_SIGNING_SECRET: 'signing-secret-123',
      SLACK_API_URL: fake.url,
    });
    await expect(SlackConnection.connect({ config: refused, logger: silent })).rejects.toBeInstanceOf(
      SlackAuthError,
    );
    expect(fake.callsOf('auth.test')).toHaveLength(5);
  });
});
