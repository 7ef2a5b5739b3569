import { afterEach, describe, expect, it } from 'vitest';
import { markdownForStream } from '../../../src/surfaces/slack/answer/mrkdwn.js';
import { answer } from '../../peers/contract-agent/contract-agent.js';
import {
  ADA,
  BINDING,
  CHANNEL,
  type SlackHarness,
  type SlackHarnessOptions,
  startSlackHarness,
} from './e2e-harness.js';

/**
 * The broker in Socket Mode end to end: the project's SlackConnection with SLACK_MODE=socket, the
 * real Bolt SocketModeReceiver and @slack/socket-mode client, against the fake Slack's
 * apps.connections.open and WebSocket; the engine, the store and the contract agent are real.
 */

const SEND = 'SendStreamingMessage';

describe('Slack in Socket Mode end to end', () => {
  const harnesses: SlackHarness[] = [];
  afterEach(async () => {
    await Promise.all(harnesses.splice(0).map((h) => h.close()));
  });
  async function harness(options: SlackHarnessOptions = {}): Promise<SlackHarness> {
    const h = await startSlackHarness({ mode: 'socket', ...options });
    harnesses.push(h);
    return h;
  }

  /** Mentions the app and waits for the agent's whole answer in the thread: the bot's messages' text. */
  async function askAndRead(h: SlackHarness, chunks: string[], turns: number): Promise<string[]> {
    return (await ask(h, chunks, turns)).texts;
  }

  async function ask(
    h: SlackHarness,
    chunks: string[],
    turns: number,
  ): Promise<{ ts: string; texts: string[] }> {
    h.agent.enqueueFor(SEND, answer({ chunks }));
    const { ts, status } = await h.mention('hello');
    expect(status).toBe(200);
    await h.settled(turns);
    const last = chunks.at(-1)?.trim() ?? '';
    await h.waitFor('the answer to be whole', () =>
      h.botMessages(ts).some((m) => m.text.includes(last) && m.streaming !== true),
    );
    return { ts, texts: h.botMessages(ts).map((m) => m.text) };
  }

  it('a mention in a channel gets the agent’s exact answer in its thread, received over the WebSocket', async () => {
    const h = await harness();
    expect(h.appUrl).toBe('');
    expect(h.fake.socketMode.connections).toHaveLength(1);
    const chunks = ['The answer ', 'is **42**, ', 'as computed.'];
    expect(await askAndRead(h, chunks, 1)).toEqual([markdownForStream(chunks.join(''))]);
    // Over the socket: one envelope, acknowledged on the one connection, nothing refused.
    expect(h.fake.socketMode.envelopes.map((e) => e.type)).toEqual(['events_api']);
    expect(h.fake.socketMode.acks).toEqual([
      expect.objectContaining({ envelopeId: h.fake.socketMode.envelopes[0]?.envelopeId, connection: 1 }),
    ]);
    expect(h.fake.socketMode.problems).toEqual([]);
    expect(h.fake.callsOf('apps.connections.open')).toHaveLength(1);
  });

  it('a button press arrives as an interactive envelope and reaches its handler', async () => {
    const counted: string[] = [];
    const h = await harness({
      feedback: { feedbackGiven: (binding: string, value: string) => counted.push(`${binding} ${value}`) },
    });
    const { ts, texts } = await ask(h, ['Done.'], 1);
    expect(texts).toEqual([markdownForStream('Done.')]);
    const answered = h.botMessages(ts)[0];
    const buttons = h.feedback(CHANNEL, answered?.ts ?? '');
    expect(buttons?.positive).toMatch(/^positive:/);
    const pressed = await h.pressFeedback({ ts: answered?.ts ?? '' }, buttons?.positive ?? '', ADA);
    expect(pressed.status).toBe(200);
    await h.waitFor('the press to be counted', () => counted.length === 1);
    expect(counted).toEqual([`${BINDING} positive`]);
    expect(h.fake.socketMode.envelopes.map((e) => e.type)).toEqual(['events_api', 'interactive']);
  });

  it('told to reconnect, and after its connection drops, the app comes back and answers the next mention', async () => {
    const h = await harness();
    expect(await askAndRead(h, ['first'], 1)).toEqual([markdownForStream('first')]);

    // Slack recycles the connection: the client closes it and opens a new one with a new ticket.
    expect(h.fake.socketMode.disconnect('refresh_requested')).toBe(1);
    await h.fake.socketMode.opened(2, 20_000);
    expect(h.fake.socketMode.connections[0]?.closedAt).toBeDefined();
    expect(await askAndRead(h, ['second'], 2)).toEqual([markdownForStream('second')]);
    expect(h.fake.socketMode.acks.at(-1)?.connection).toBe(2);

    // The network drops it without a close frame: the client notices and reconnects by itself.
    expect(h.fake.socketMode.drop()).toBe(1);
    await h.fake.socketMode.opened(3, 20_000);
    expect(await askAndRead(h, ['third'], 3)).toEqual([markdownForStream('third')]);
    expect(h.fake.socketMode.acks.at(-1)?.connection).toBe(3);
    expect(h.fake.callsOf('apps.connections.open')).toHaveLength(3);
    expect(h.fake.socketMode.problems).toEqual([]);
    // Each reconnection is in the broker's log, where an operator looks.
    const said = (msg: string): number => h.logs.filter((l) => l.msg === msg).length;
    expect(said('Slack Socket Mode connection open')).toBe(3);
    expect(said('Slack Socket Mode connection lost; opening a new one')).toBe(2);
  }, 60_000);
});
