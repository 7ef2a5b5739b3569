import { createServer as createHttpServer } from 'node:http';
import { createServer } from 'node:net';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import {
  SlackMalformedResponseError,
  SlackPlatformError,
  SlackRateLimitedError,
  SlackUnavailableError,
} from '../../../src/surfaces/slack/web-api/errors.js';
import { WebClientCaller } from '../../../src/surfaces/slack/web-api/web-client.js';
import { type FakeSlack, startFakeSlack } from '../../../testkit/slack/index.js';

/**
 * The surface's WebClient (web-client.ts) against the fake Slack Web API over real HTTP: what it
 * sends, and how each of Slack's answers — and each way of not answering — becomes our error.
 */

const silent = pino({ level: 'silent' });

function recordingLogger(): { logger: pino.Logger; lines: string[] } {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(chunk.toString('utf8'));
      done();
    },
  });
  return { logger: pino({ level: 'debug' }, sink), lines };
}

describe("the surface's WebClient", () => {
  const closing: Array<() => Promise<void>> = [];
  afterEach(async () => {
    await Promise.all(closing.splice(0).map((close) => close()));
  });

  async function setUp(
    options: { timeoutMs?: number; logger?: pino.Logger } = {},
  ): Promise<{ fake: FakeSlack; caller: WebClientCaller }> {
    const fake = await startFakeSlack();
    closing.push(() => fake.close());
    const caller = new WebClientCaller({
      apiUrl: fake.url,
      token: fake.botToken,
      logger: options.logger ?? silent,
      ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
    });
    return { fake, caller };
  }

  it('sends a form with objects JSON-encoded, the token only in the Authorization header, and returns the answer', async () => {
    const { fake, caller } = await setUp();
    const answer = await caller.call('chat.postMessage', {
      channel: 'C1',
      text: 'hello & welcome',
      blocks: [{ type: 'section', text: { type: 'mrkdwn', text: 'hi' } }],
      thread_ts: undefined,
      metadata: null,
    });
    expect(answer).toMatchObject({ ok: true, channel: 'C1', ts: expect.any(String) });
    const [call] = fake.callsOf('chat.postMessage');
    expect(call).toMatchObject({
      ok: true,
      tokenIn: 'header',
      contentType: 'application/x-www-form-urlencoded',
      team: fake.teamId,
      args: { channel: 'C1', text: 'hello & welcome', blocks: [{ type: 'section' }] },
    });
    expect(call?.args).not.toHaveProperty('thread_ts');
    expect(call?.args).not.toHaveProperty('metadata');
    expect(fake.messages('C1')[0]?.text).toBe('hello & welcome');
  });

  it("uses a call's own token (a workspace's, in OAuth mode) over the default one, and never puts it in the body", async () => {
    const { fake, caller } = await setUp();
    const refused = await caller
      .call('auth.test', { token: fake.botToken }, 'xoxb-another-workspace')
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(SlackPlatformError);
    expect((refused as SlackPlatformError).slackError).toBe('invalid_auth');
    expect(fake.callsOf('auth.test')[0]).toMatchObject({ tokenIn: 'header', ok: false });
    // A call without a token of its own still goes with the default one.
    await expect(caller.call('auth.test', {})).resolves.toMatchObject({ ok: true, team_id: fake.teamId });
  });

  it("turns Slack's refusal into SlackPlatformError with Slack's error string", async () => {
    const { fake, caller } = await setUp();
    fake.failNext('reactions.add', 'already_reacted');
    const error = await caller
      .call('reactions.add', { channel: 'C1', timestamp: '1.1', name: 'x' })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SlackPlatformError);
    expect(error).toMatchObject({ code: 'slack_platform_error', slackError: 'already_reacted' });
  });

  it('turns a 429 into SlackRateLimitedError with its Retry-After, and a zero one into a second, without retrying', async () => {
    const { fake, caller } = await setUp();
    fake.rateLimitNext('chat.update', 7);
    const error = await caller.call('chat.update', { channel: 'C1', ts: '1.1', text: 'x' }).catch((e) => e);
    expect(error).toBeInstanceOf(SlackRateLimitedError);
    expect(error).toMatchObject({ code: 'slack_rate_limited', retryAfterMs: 7_000 });
    fake.rateLimitNext('chat.update', 0);
    const zero = await caller.call('chat.update', { channel: 'C1', ts: '1.1', text: 'x' }).catch((e) => e);
    expect(zero).toMatchObject({ code: 'slack_rate_limited', retryAfterMs: 1_000 });
    expect(fake.callsOf('chat.update').map((c) => c.status)).toEqual([429, 429]);
  });

  it("turns a 429 without a readable Retry-After (a proxy's) into SlackRateLimitedError of a second", async () => {
    let calls = 0;
    const server = createHttpServer((req, res) => {
      calls++;
      req.resume();
      res.writeHead(429, calls === 1 ? {} : { 'retry-after': 'Wed, 21 Oct 2015 07:28:00 GMT' });
      res.end('slow down');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    closing.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const { port } = server.address() as { port: number };
    const caller = new WebClientCaller({
      apiUrl: `http://127.0.0.1:${port}/api/`,
      token: 'xoxb-1',
      logger: silent,
    });
    for (const _ of [1, 2]) {
      const error = await caller.call('chat.update', { channel: 'C1', ts: '1.1', text: 'x' }).catch((e) => e);
      expect(error).toBeInstanceOf(SlackRateLimitedError);
      expect(error).toMatchObject({ retryAfterMs: 1_000 });
    }
    expect(calls).toBe(2);
  });

  it('turns an HTTP 5xx into SlackUnavailableError naming the status, after one attempt', async () => {
    const { fake, caller } = await setUp();
    fake.serverErrorNext('chat.postMessage', 503, 2);
    const error = await caller.call('chat.postMessage', { channel: 'C1', text: 'x' }).catch((e) => e);
    expect(error).toBeInstanceOf(SlackUnavailableError);
    expect(error).toMatchObject({ code: 'slack_unavailable' });
    expect((error as Error).message).toBe('Slack answered chat.postMessage with HTTP 503');
    // No retry of its own: the caller decides (a retried post could show twice).
    expect(fake.callsOf('chat.postMessage')).toHaveLength(1);
  });

  it('gives up on a call Slack does not answer within its bound: SlackUnavailableError, once', async () => {
    const { fake, caller } = await setUp({ timeoutMs: 200 });
    fake.delayNext('chat.postMessage', 2_000);
    const started = performance.now();
    const error = await caller.call('chat.postMessage', { channel: 'C1', text: 'x' }).catch((e) => e);
    const took = performance.now() - started;
    expect(error).toBeInstanceOf(SlackUnavailableError);
    expect((error as Error).message).toBe('Slack did not answer chat.postMessage');
    expect(((error as Error).cause as Error).name).toBe('TimeoutError');
    expect(took).toBeGreaterThanOrEqual(150);
    expect(took).toBeLessThan(1_500);
    // The next call goes through on a fresh connection.
    await expect(caller.call('chat.postMessage', { channel: 'C1', text: 'y' })).resolves.toMatchObject({
      ok: true,
    });
  });

  it('turns an answer that is not JSON (a page from a proxy in the way) into SlackMalformedResponseError', async () => {
    const { fake, caller } = await setUp();
    fake.htmlNext('chat.startStream');
    const error = await caller
      .call('chat.startStream', { channel: 'D1', thread_ts: '1.1', markdown_text: 'x' })
      .catch((e) => e);
    expect(error).toBeInstanceOf(SlackMalformedResponseError);
    expect(error).toMatchObject({ code: 'slack_malformed_response', method: 'chat.startStream' });
  });

  it('turns an unreachable Slack into SlackUnavailableError', async () => {
    // A port that was free a moment ago: nothing listens there now.
    const port = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const { port: free } = probe.address() as { port: number };
        probe.close(() => resolve(free));
      });
    });
    const caller = new WebClientCaller({
      apiUrl: `http://127.0.0.1:${port}/api/`,
      token: 'xoxb-1',
      logger: silent,
    });
    const error = await caller.call('auth.test', {}).catch((e) => e);
    expect(error).toBeInstanceOf(SlackUnavailableError);
    expect(error).toMatchObject({ code: 'slack_unavailable' });
  });

  it('calls nothing but a method under the API base: a name that is not one is refused unsent', async () => {
    const { fake, caller } = await setUp();
    for (const name of ['../oauth.v2.access', 'https://example.com/x', 'chat.postMessage?x=1', '']) {
      const error = await caller.call(name, {}).catch((e) => e);
      expect(error).toBeInstanceOf(SlackPlatformError);
      expect(error).toMatchObject({ slackError: 'unknown_method' });
    }
    expect(fake.calls).toHaveLength(0);
  });

  it("logs Slack's argument notes and warnings, never the token", async () => {
    const { logger, lines } = recordingLogger();
    const { fake, caller } = await setUp({ logger });
    const error = await caller
      .call('chat.startStream', { channel: 'D1', markdown_text: 'x' })
      .catch((e) => e);
    expect(error).toMatchObject({ slackError: 'invalid_arguments' });
    const noted = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(noted).toContainEqual(
      expect.objectContaining({
        level: 50,
        component: 'slack-web-api',
        msg: 'missing required field: thread_ts',
      }),
    );
    // The debug lines hold the request's headers and body: the token is in neither.
    expect(noted.some((l) => l.level === 20 && String(l.msg).includes('http request headers'))).toBe(true);
    expect(lines.join('\n')).not.toContain(fake.botToken);
  });
});
