import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { AnswerBuffer } from '../../../src/core/answer.js';
import { systemClock } from '../../../src/core/clock.js';
import { markdownForStream, markdownToMrkdwn } from '../../../src/surfaces/slack/answer/mrkdwn.js';
import { SlackSurface } from '../../../src/surfaces/slack/answer/surface.js';
import { People } from '../../../src/surfaces/slack/inbound/people.js';
import { BudgetBook } from '../../../src/surfaces/slack/web-api/budget.js';
import { createWebApiCaller, SlackApi } from '../../../src/surfaces/slack/web-api/client.js';
import { SlackPlatformError, SlackRateLimitedError } from '../../../src/surfaces/slack/web-api/errors.js';
import { type FakeSlack, type FakeSlackOptions, startFakeSlack } from '../../../testkit/slack/index.js';

/**
 * The surface against the fake Slack Web API through the WebClient, without Bolt or the
 * engine: what each call costs, and how Slack's refusals are read.
 */

const silent = pino({ level: 'silent' });

describe('the Slack surface against the fake Web API', () => {
  const open: Array<{ fake: FakeSlack; budgets: BudgetBook }> = [];
  afterEach(async () => {
    for (const { fake, budgets } of open.splice(0)) {
      budgets.close();
      await fake.close();
    }
  });

  async function setup(options: FakeSlackOptions = {}) {
    const fake = await startFakeSlack(options);
    const budgets = new BudgetBook(systemClock);
    open.push({ fake, budgets });
    const api = new SlackApi(
      createWebApiCaller({ token: fake.botToken, apiUrl: fake.url, logger: silent }),
      budgets,
    );
    const root = fake.postUserMessage({ channel: 'C1', user: 'U0ADA', text: 'hi' });
    const target = {
      sessionId: `slack:T0001:C1:${root.ts}`,
      key: { surface: 'slack', workspaceId: 'T0001', channelId: 'C1', threadId: root.ts },
    };
    return { fake, api, budgets, root, target };
  }

  function feed(buffer: AnswerBuffer, text: string, append: boolean): void {
    buffer.apply({
      kind: 'artifact-update',
      taskId: 't',
      contextId: 'c',
      artifact: { artifactId: 'answer', parts: [{ kind: 'text', text }] },
      append,
      lastChunk: false,
    });
  }

  it.each([true, false])(
    'coalesces thousands of updates into a handful of calls (native streams: %s)',
    async (streaming) => {
      const { fake, api, root, target } = await setup({ streaming });
      const surface = new SlackSurface({
        api,
        clock: systemClock,
        logger: silent,
        answers: { intervalMs: 200 },
      });
      const sink = surface.openAnswer(target, 'turn-1', null, () => undefined, {
        actorId: 'U0ADA',
        fresh: true,
      });
      const buffer = new AnswerBuffer();
      const started = Date.now();
      // 3,000 one-character updates over about a second: one page, thousands of events.
      for (let i = 0; i < 3_000; i++) {
        feed(buffer, 'a', i > 0);
        sink.update(buffer);
        if (i % 300 === 0) await new Promise((r) => setTimeout(r, 100));
      }
      await sink.finish(buffer);
      const elapsed = Date.now() - started;
      const answerCalls = fake.calls.filter((c) => c.method.startsWith('chat.'));
      // At most one call per interval, plus the start and the final ones, whatever the updates.
      expect(answerCalls.length).toBeLessThanOrEqual(Math.ceil(elapsed / 200) + 3);
      expect(answerCalls.length).toBeGreaterThanOrEqual(2);
      const messages = fake.messages('C1', root.ts).filter((m) => m.botId !== undefined);
      const full = buffer.text().trimEnd();
      const shown = messages.map((m) => m.text).join('');
      const render = streaming ? markdownForStream : markdownToMrkdwn;
      expect(shown.replace(/\s+/g, '')).toBe(render(full).replace(/\s+/g, ''));
      surface.close();
    },
  );

  /** An answer that shows `first`, then finishes as `full` before its next append is due. */
  async function shortAnswer(
    fake: FakeSlack,
    api: SlackApi,
    target: Parameters<SlackSurface['openAnswer']>[0],
  ) {
    const surface = new SlackSurface({
      api,
      clock: systemClock,
      logger: silent,
      answers: { intervalMs: 10_000 },
    });
    // The stream is open once the surface reports its message (chat.startStream answered).
    let opened: (ref: string) => void = () => undefined;
    const started = new Promise<string>((resolve) => {
      opened = resolve;
    });
    const sink = surface.openAnswer(target, 'turn-1', null, (ref) => opened(ref), {
      actorId: 'U0ADA',
      fresh: true,
    });
    const buffer = new AnswerBuffer();
    feed(buffer, 'Hello', false);
    sink.update(buffer);
    await started;
    expect(fake.callsOf('chat.startStream')).toHaveLength(1);
    return { surface, sink, buffer };
  }

  it('sends the last words of a short streamed answer with its chat.stopStream: no append of its own', async () => {
    const { fake, api, root, target } = await setup();
    const { surface, sink, buffer } = await shortAnswer(fake, api, target);
    feed(buffer, ' there, *Ada*.', true);
    await sink.finish(buffer);
    expect(fake.calls.filter((c) => c.method.startsWith('chat.')).map((c) => c.method)).toEqual([
      'chat.startStream',
      'chat.stopStream',
    ]);
    expect(fake.callsOf('chat.stopStream')[0]?.args).toMatchObject({ markdown_text: ' there, *Ada*.' });
    const [answer, ...more] = fake.messages('C1', root.ts).filter((m) => m.botId !== undefined);
    expect(more).toHaveLength(0);
    expect(answer?.text).toBe(markdownForStream('Hello there, *Ada*.'));
    expect(answer?.streamState).toBe('stopped');
    surface.close();
  });

  it('edits the last words in when Slack ended the stream before that stop', async () => {
    const { fake, api, root, target } = await setup();
    const { surface, sink, buffer } = await shortAnswer(fake, api, target);
    const [streamed] = fake.messages('C1', root.ts).filter((m) => m.botId !== undefined);
    fake.endStreamEarly('C1', streamed?.ts ?? '');
    feed(buffer, ' there, *Ada*.', true);
    await sink.finish(buffer);
    expect(fake.callsOf('chat.stopStream').map((c) => c.error)).toEqual(['message_not_in_streaming_state']);
    expect(fake.callsOf('chat.update')).toHaveLength(1);
    const [answer, ...more] = fake.messages('C1', root.ts).filter((m) => m.botId !== undefined);
    expect(more).toHaveLength(0);
    expect(answer?.text).toBe(markdownToMrkdwn('Hello there, *Ada*.'));
    surface.close();
  });

  it('reads a 429 as SlackRateLimitedError with Retry-After, and the budget waits it out', async () => {
    const { fake, api } = await setup();
    fake.rateLimitNext('reactions.add', 1);
    const root = fake.postUserMessage({ channel: 'C1', user: 'U0ADA', text: 'x' });
    const args = { channel: 'C1', timestamp: root.ts, name: 'eyes' };
    const error = await api.addReaction({ team: 'T0001' }, args).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SlackRateLimitedError);
    expect((error as SlackRateLimitedError).retryAfterMs).toBe(1_000);
    const started = Date.now();
    await api.addReaction({ team: 'T0001' }, args);
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
  });

  it("reads Slack's refusals as SlackPlatformError with Slack's error string", async () => {
    const { fake, api } = await setup();
    fake.failNext('chat.postMessage', 'is_archived');
    const error = await api
      .postMessage({ team: 'T0001' }, { channel: 'C1', text: 'x' })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SlackPlatformError);
    expect((error as SlackPlatformError).slackError).toBe('is_archived');
  });

  it('looks people up once per TTL, and degrades to the user ID when users.info fails', async () => {
    const { fake, api } = await setup();
    fake.addUser({ id: 'U0ADA', name: 'ada', realName: 'Ada Lovelace', email: 'ada@example.com' });
    const people = new People(api, systemClock, silent);
    const [a, b] = await Promise.all([people.actor('T0001', 'U0ADA'), people.actor('T0001', 'U0ADA')]);
    expect(a?.label).toBe('[Slack: ada (U0ADA) <ada@example.com>]');
    expect(b).toEqual(a);
    await people.actor('T0001', 'U0ADA');
    expect(fake.callsOf('users.info')).toHaveLength(1);
    fake.failNext('users.info', 'user_not_found');
    expect(await people.actor('T0001', 'U0NEW')).toEqual({ id: 'U0NEW', label: '[Slack: U0NEW]' });
  });

  it('does not wait at all once the users.info budget is spent: the ack goes out with the user ID, no call made', async () => {
    const { fake, api, budgets } = await setup();
    for (let i = 0; i < 5; i++) fake.addUser({ id: `U0P${i}`, name: `p${i}` });
    // Spend the budget, as a storm of events from new people does.
    while (budgets.for('users.info', 'T0001', undefined).tryTake()) {
      // Taken.
    }
    const people = new People(api, systemClock, silent);
    const started = Date.now();
    const actors = await Promise.all([0, 1, 2, 3, 4].map((i) => people.actor('T0001', `U0P${i}`)));
    expect(actors.map((a) => a.label)).toEqual([0, 1, 2, 3, 4].map((i) => `[Slack: U0P${i}]`));
    // Well under the lookup's own timeout (1.2 s): nothing waited for a token.
    expect(Date.now() - started).toBeLessThan(200);
    expect(fake.callsOf('users.info')).toHaveLength(0);
  });

  it('does not wait for a slow users.info: the turn goes on with the user ID', async () => {
    const { fake, api } = await setup();
    fake.addUser({ id: 'U0SLOW', name: 'slow' });
    // A 429 pauses the users.info budget for 3 s: the next lookup would wait that long.
    fake.rateLimitNext('users.info', 3);
    const people = new People(api, systemClock, silent, { lookupTimeoutMs: 200 });
    expect((await people.actor('T0001', 'U0FIRST')).label).toBe('[Slack: U0FIRST]');
    const started = Date.now();
    expect((await people.actor('T0001', 'U0SLOW')).label).toBe('[Slack: U0SLOW]');
    expect(Date.now() - started).toBeLessThan(1_000);
  });
});
