import { afterEach, describe, expect, it } from 'vitest';
import { A2AClient } from '../../src/a2a/client.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { STOP_REFUSED } from '../../src/surfaces/slack/agent-app/stop.js';
import { answer, type RecordedRequest, startContractAgent } from '../peers/contract-agent/contract-agent.js';
import { sendSlackEvent } from '../slack/events.js';
import {
  ADA,
  BINDING,
  CHANNEL,
  DM,
  SECRET,
  type SlackHarness,
  type SlackHarnessOptions,
  startSlackHarness,
} from '../surfaces/slack/e2e-harness.js';

/**
 * Slack as an agent app, end to end through the real Bolt: the agent session's stop button
 * cancels the running task, the session's status follows the task, and its title is the
 * thread's first message.
 */

const SEND = 'SendStreamingMessage';
const CANCEL = 'CancelTask';
const BOB = 'U0BOB';

/** The message of a recorded SendStreamingMessage call. */
function sentMessage(r: RecordedRequest): { metadata?: Record<string, unknown> } | undefined {
  return (r.body as { params?: { message?: { metadata?: Record<string, unknown> } } }).params?.message;
}

const LONG = answer({ chunks: Array.from({ length: 30 }, (_, i) => `part ${i}. `), chunkDelayMs: 200 });

describe('Slack agent sessions: the stop button and the status', () => {
  const harnesses: SlackHarness[] = [];
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    await Promise.all(harnesses.splice(0).map((h) => h.close()));
    await Promise.all(cleanups.splice(0).map((c) => c()));
  });
  async function harness(options: SlackHarnessOptions = {}): Promise<SlackHarness> {
    const h = await startSlackHarness(options);
    harnesses.push(h);
    return h;
  }
  function statuses(h: SlackHarness, ts: string): string[] {
    return (h.fake.session(CHANNEL, ts)?.history ?? []).map((s) => s.status);
  }
  async function processing(h: SlackHarness, ts: string): Promise<void> {
    await h.waitFor('the session processing', () => h.fake.session(CHANNEL, ts)?.status === 'processing');
  }
  async function stop(h: SlackHarness, ts: string, user = ADA, eventId?: string): Promise<void> {
    const event = h.fake.pressStop(CHANNEL, ts, user);
    const sent = await sendSlackEvent(h.appUrl, SECRET, event, eventId === undefined ? {} : { eventId });
    expect(sent.status).toBe(200);
  }

  it('a stop mid-answer cancels the task once; the answer stays as shown, a notice ends the thread, the status leaves processing', async () => {
    const h = await harness();
    h.agent.enqueueFor(SEND, LONG);
    const { ts } = await h.mention('a long report');
    await h.waitFor(
      'a few appends',
      () => h.fake.callsOf('chat.appendStream').filter((c) => c.ok).length >= 2,
    );
    await processing(h, ts);
    const [streamed] = h.botMessages(ts);
    await stop(h, ts, ADA, 'EvSTOP1');
    const shown = h.fake.message(CHANNEL, streamed?.ts ?? '')?.text;
    // Slack delivers an event again when it thinks the first delivery failed.
    await stop(h, ts, ADA, 'EvSTOP1').catch(() => undefined);
    await h.settled(1);
    await h.slack.surface.statuses.idle();
    expect(h.agent.rpc(CANCEL)).toHaveLength(1);
    expect(h.events.find((e) => e.type === 'turn.settled')).toMatchObject({ outcome: 'canceled' });
    const [answerMessage, ...rest] = h.botMessages(ts);
    expect(answerMessage?.ts).toBe(streamed?.ts);
    expect(answerMessage?.text).toBe(shown);
    expect(answerMessage?.text).not.toContain('part 29');
    expect(answerMessage?.streamState).toBe('stopped');
    expect(h.fake.callsOf('chat.update')).toHaveLength(0);
    expect(rest.map((m) => m.text)).toEqual(["The agent's task was canceled."]);
    expect(statuses(h, ts).at(-1)).toBe('active');
    expect(statuses(h, ts)).not.toContain('suspended');
    expect(
      h.logs.some((l) => l.msg === 'a person pressed stop' && l.result === 'canceled' && l.user === ADA),
    ).toBe(true);
  });

  it('a stop from someone who is not in the channel cancels nothing; the answer goes on to its end', async () => {
    const h = await harness();
    h.fake.addUser({ id: BOB, name: 'bob' });
    h.agent.enqueueFor(
      SEND,
      answer({ chunks: Array.from({ length: 8 }, (_, i) => `part ${i}. `), chunkDelayMs: 200 }),
    );
    const { ts } = await h.mention('a report');
    await h.waitFor('an append', () => h.fake.callsOf('chat.appendStream').some((c) => c.ok));
    await processing(h, ts);
    await stop(h, ts, BOB);
    await h.settled(1);
    expect(h.agent.rpc(CANCEL)).toHaveLength(0);
    expect(h.fake.ephemerals).toEqual([expect.objectContaining({ user: BOB, text: STOP_REFUSED })]);
    const [answerMessage, ...rest] = h.botMessages(ts);
    // Slack stopped the stream at the press: the rest of the answer came by edits.
    expect(answerMessage?.text).toContain('part 7.');
    expect(rest).toHaveLength(0);
    expect(h.events.find((e) => e.type === 'turn.settled')).toMatchObject({ outcome: 'completed' });
  });

  it('a stop for a task that has settled is a no-op, and the status says nothing runs', async () => {
    const h = await harness();
    const { ts } = await h.mention('quick one');
    await h.settled(1);
    await h.slack.surface.statuses.idle();
    // The press raced the end of the task: Slack still showed the button.
    h.slack.surface.statuses.resend(
      h.events.find((e) => e.type === 'turn.settled')?.sessionId ?? '',
      'processing',
    );
    await processing(h, ts);
    await stop(h, ts);
    await h.waitFor('the status back to active', () => h.fake.session(CHANNEL, ts)?.status === 'active');
    expect(h.agent.rpc(CANCEL)).toHaveLength(0);
    expect(h.botMessages(ts)).toHaveLength(1);
  });

  it('a stop that reaches the broker after the task paused on a question cancels the paused task, and the status goes back to active', async () => {
    const h = await harness();
    h.agent.enqueueFor(
      SEND,
      answer({
        chunks: Array.from({ length: 4 }, (_, i) => `part ${i}. `),
        chunkDelayMs: 150,
        state: 'input-required',
        statusText: 'Which namespace?',
      }),
    );
    const { ts } = await h.mention('scale the api');
    await h.waitFor('an append', () => h.fake.callsOf('chat.appendStream').some((c) => c.ok));
    await processing(h, ts);
    // The press happened while the button showed; its event arrives after the agent paused.
    const pressed = h.fake.pressStop(CHANNEL, ts, ADA);
    await h.waitFor('suspended', () => h.fake.session(CHANNEL, ts)?.status === 'suspended');
    const sent = await sendSlackEvent(h.appUrl, SECRET, pressed);
    expect(sent.status).toBe(200);
    await h.waitFor('the cancel', () => h.agent.rpc(CANCEL).length === 1);
    await h.waitFor('the status back to active', () => h.fake.session(CHANNEL, ts)?.status === 'active');
    await h.slack.surface.statuses.idle();
    expect(statuses(h, ts)).toEqual(['processing', 'suspended', 'active']);
    expect([...h.agent.tasks.values()][0]?.status.state).toBe('canceled');
    expect(
      h.logs.some((l) => l.msg === 'a person pressed stop' && l.result === 'canceled' && l.user === ADA),
    ).toBe(true);
  });

  it('statuses follow the task through a question: processing, suspended, processing, active; titled from the first message', async () => {
    const h = await harness();
    h.agent.enqueueFor(
      SEND,
      answer({ chunks: ['checking'], state: 'input-required', statusText: 'Which namespace?' }),
    );
    const { ts } = await h.mention('scale the api\nto three replicas please');
    await h.waitFor('the question', () => h.botMessages(ts).some((m) => m.text.includes('The agent asks')));
    await h.waitFor('suspended', () => h.fake.session(CHANNEL, ts)?.status === 'suspended');
    await h.reply(ts, 'payments');
    await h.settled(2);
    await h.slack.surface.statuses.idle();
    expect(statuses(h, ts)).toEqual(['processing', 'suspended', 'processing', 'active']);
    const first = h.fake.callsOf('agents.sessions.setStatus')[0];
    expect(first?.args).toMatchObject({
      channel_id: CHANNEL,
      thread_ts: ts,
      status: 'processing',
      title: 'scale the api',
    });
    expect(h.fake.session(CHANNEL, ts)?.title).toBe('scale the api');
    expect(h.fake.callsOf('agents.sessions.setStatus').every((c) => c.ok)).toBe(true);
  });

  it('a turn whose answer ends on a stream sets active with its last chat.stopStream: one setStatus call a turn', async () => {
    const h = await harness();
    const { ts } = await h.mention('hello there');
    await h.settled(1);
    await h.slack.surface.statuses.idle();
    const session = h.fake.session(CHANNEL, ts);
    expect(session?.history.map((s) => [s.status, s.via])).toEqual([
      ['processing', 'agents.sessions.setStatus'],
      ['active', 'chat.stopStream'],
    ]);
    expect(session?.title).toBe('hello there');
    expect(h.fake.callsOf('agents.sessions.setStatus')).toHaveLength(1);
    expect(h.fake.callsOf('chat.stopStream').at(-1)).toMatchObject({
      ok: true,
      args: { session_status: 'active' },
    });
  });

  it('a turn with another queued behind it leaves the status to the last one: processing stays, no blink of active', async () => {
    const h = await harness();
    h.agent.enqueueFor(SEND, answer({ chunks: ['one ', 'two ', 'three'], chunkDelayMs: 300 }));
    const { ts } = await h.mention('first');
    await h.waitFor('the first send', () => h.agent.rpc(SEND).length === 1);
    await h.mention('second', { threadTs: ts });
    await h.settled(2);
    await h.slack.surface.statuses.idle();
    expect(statuses(h, ts)).toEqual(['processing', 'active']);
    const stops = h.fake.callsOf('chat.stopStream');
    expect(stops.map((c) => c.args.session_status)).toEqual([undefined, 'active']);
  });

  it('a workspace whose app is not an agent answers without statuses, asked once, and no turn fails', async () => {
    const h = await harness({ fake: { agentApp: false } });
    const { ts } = await h.mention('hello');
    await h.settled(1);
    const second = await h.mention('again');
    await h.settled(2);
    await h.slack.surface.statuses.idle();
    expect(h.fake.callsOf('agents.sessions.setStatus').map((c) => c.error)).toEqual(['not_agent_app']);
    // Nor does a stream's stop try to set one.
    expect(h.fake.callsOf('chat.stopStream').map((c) => c.args.session_status)).toEqual([
      undefined,
      undefined,
    ]);
    expect(h.botMessages(ts)).toHaveLength(1);
    expect(h.botMessages(second.ts)).toHaveLength(1);
    expect(h.events.filter((e) => e.type === 'turn.settled').map((e) => e.outcome)).toEqual([
      'completed',
      'completed',
    ]);
  });

  it('a failed status call never fails the turn', async () => {
    const h = await harness();
    h.fake.serverErrorNext('agents.sessions.setStatus', 503, 10);
    const { ts } = await h.mention('hello');
    await h.settled(1);
    expect(h.botMessages(ts)).toHaveLength(1);
    expect(h.events.find((e) => e.type === 'turn.settled')).toMatchObject({ outcome: 'completed' });
  });

  it('feedback buttons under a finished answer: the last press of a person wins, a change counted once under the new value, logged with the turn and task, never a turn', async () => {
    const store = new SqliteStore(':memory:');
    const counted: string[] = [];
    const feedback = {
      feedbackGiven: (binding: string, value: string) => counted.push(`${binding} ${value}`),
    };
    const a = await startSlackHarness({ store, feedback });
    a.fake.addUser({ id: BOB, name: 'bob' });
    const { ts } = await a.mention('hello');
    await a.settled(1);
    const [answered] = a.botMessages(ts);
    const buttons = a.feedback(CHANNEL, answered?.ts ?? '');
    expect(buttons?.positive).toMatch(/^positive:/);
    const stop = a.fake.callsOf('chat.stopStream')[0];
    expect(stop?.args.blocks).toEqual([expect.objectContaining({ type: 'context_actions' })]);
    const message = { ts: answered?.ts ?? '' };
    const presses = (): Array<Record<string, unknown>> =>
      a.logs.filter((l) => l.msg === 'feedback on an answer');
    const press = async (value: string, user: string, count: number): Promise<void> => {
      expect((await a.pressFeedback(message, value, user)).status).toBe(200);
      await a.waitFor(`${count} logged presses`, () => presses().length === count);
    };
    await press(buttons?.positive ?? '', ADA, 1);
    await press(buttons?.positive ?? '', ADA, 2);
    await press(buttons?.negative ?? '', ADA, 3);
    await press(buttons?.positive ?? '', BOB, 4);
    await press(buttons?.positive ?? '', ADA, 5);
    // Ada: positive, (the same again: nothing), negative, positive — each change counted once
    // under its new value; Bob's first press.
    expect(counted).toEqual([
      'team-a/support positive',
      'team-a/support negative',
      'team-a/support positive',
      'team-a/support positive',
    ]);
    const turnId = a.events.find((e) => e.type === 'turn.settled');
    const task = [...a.agent.tasks.values()][0];
    expect(presses()[0]).toMatchObject({
      turnId: turnId?.type === 'turn.settled' ? turnId.turnId : '',
      taskId: task?.id,
      value: 'positive',
      latest: 'positive',
      change: 'first',
      counted: true,
      user: ADA,
    });
    expect(presses()[1]).toMatchObject({ change: 'unchanged', counted: false, latest: 'positive' });
    expect(presses()[2]).toMatchObject({ change: 'changed', previous: 'positive', latest: 'negative' });
    expect(presses()[4]).toMatchObject({
      user: ADA,
      change: 'changed',
      previous: 'negative',
      latest: 'positive',
    });
    // After a restart the latest press again is still not counted twice.
    await a.close({ keepAgent: true, keepStore: true, keepFake: true });
    const b = await harness({ store, agent: a.agent, fakeSlack: a.fake, feedback });
    await b.pressFeedback(message, buttons?.positive ?? '', ADA);
    await b.waitFor('the press logged', () => b.logs.some((l) => l.msg === 'feedback on an answer'));
    expect(b.logs.find((l) => l.msg === 'feedback on an answer')).toMatchObject({ change: 'unchanged' });
    expect(counted).toHaveLength(4);
    expect(b.agent.rpc(SEND)).toHaveLength(1);
  });

  it('[S-5] spec.slack.feedback.toAgent: the next turn carries each person’s latest feedback on the previous answer as metadata, once, after a restart too; never a turn by itself', async () => {
    const store = new SqliteStore(':memory:');
    const a = await startSlackHarness({ store, feedbackToAgent: true });
    a.fake.addUser({ id: BOB, name: 'bob' });
    const { ts } = await a.mention('hello');
    await a.settled(1);
    const [answered] = a.botMessages(ts);
    const buttons = a.feedback(CHANNEL, answered?.ts ?? '');
    const message = { ts: answered?.ts ?? '' };
    let logged = 0;
    for (const [value, user] of [
      [buttons?.negative, ADA],
      [buttons?.positive, ADA],
      [buttons?.negative, BOB],
    ] as const) {
      await a.pressFeedback(message, value ?? '', user);
      logged++;
      await a.waitFor(
        'the press logged',
        () => a.logs.filter((l) => l.msg === 'feedback on an answer').length === logged,
      );
    }
    // The presses alone send nothing; the note waits for the next turn, across a restart.
    expect(a.agent.rpc(SEND)).toHaveLength(1);
    await a.close({ keepAgent: true, keepStore: true, keepFake: true });
    const b = await harness({ store, agent: a.agent, fakeSlack: a.fake, feedbackToAgent: true });
    await b.mention('and the logs?', { threadTs: ts });
    await b.settled(1);
    await b.mention('thanks', { threadTs: ts });
    await b.settled(2);
    const task = [...b.agent.tasks.values()][0];
    const metadata = b.agent.rpc(SEND).map((r) => sentMessage(r)?.metadata);
    expect(metadata).toHaveLength(3);
    expect(metadata[0]).not.toHaveProperty(['agentkourier.dev/feedback']);
    expect(metadata[1]).toEqual({
      'agentkourier.dev/actor': { id: ADA, name: 'ada', email: 'ada@example.com' },
      'agentkourier.dev/feedback': {
        taskId: task?.id,
        presses: [
          { actorId: BOB, value: 'negative' },
          { actorId: ADA, value: 'positive' },
        ],
      },
    });
    // Told once: the turn after it carries no note.
    expect(metadata[2]).toEqual({
      'agentkourier.dev/actor': { id: ADA, name: 'ada', email: 'ada@example.com' },
    });
  });

  it('without spec.slack.feedback.toAgent the feedback is recorded but never sent to the agent', async () => {
    const h = await harness();
    const { ts } = await h.mention('hello');
    await h.settled(1);
    const [answered] = h.botMessages(ts);
    const buttons = h.feedback(CHANNEL, answered?.ts ?? '');
    await h.pressFeedback({ ts: answered?.ts ?? '' }, buttons?.negative ?? '', ADA);
    await h.waitFor('the press logged', () => h.logs.some((l) => l.msg === 'feedback on an answer'));
    expect(h.logs.find((l) => l.msg === 'feedback on an answer')).toMatchObject({
      change: 'first',
      counted: true,
    });
    await h.mention('and the logs?', { threadTs: ts });
    await h.settled(2);
    const sent = h.agent.rpc(SEND).map((r) => sentMessage(r)?.metadata);
    expect(sent).toHaveLength(2);
    expect(sent[1]).toEqual({ 'agentkourier.dev/actor': { id: ADA, name: 'ada', email: 'ada@example.com' } });
  });

  it('opening the Messages tab sets suggested prompts from the card’s skill examples (at most 4), again when the card changes', async () => {
    const skills = [
      {
        id: 'k8s',
        name: 'Kubernetes',
        description: 'Runs kubectl',
        tags: [],
        examples: ['list pods', 'restart api'],
      },
      { id: 'none', name: 'Without examples', description: 'x', tags: [] },
      {
        id: 'logs',
        name: 'Logs',
        description: 'Reads logs',
        tags: [],
        examples: ['errors today', 'tail web', 'more'],
      },
    ];
    const h = await harness({ agentOptions: { card: { skills } } });
    const open = (tab: string) =>
      sendSlackEvent(h.appUrl, SECRET, {
        type: 'app_home_opened',
        user: ADA,
        channel: DM,
        tab,
        event_ts: '1.000001',
      });
    await open('home');
    await open('messages');
    await h.waitFor('the prompts', () => h.fake.suggestedPrompts.length === 1);
    expect(h.fake.suggestedPrompts[0]).toEqual({
      channel: DM,
      title: 'Try asking Contract Agent',
      prompts: [
        { title: 'Kubernetes', message: 'list pods' },
        { title: 'Kubernetes', message: 'restart api' },
        { title: 'Logs', message: 'errors today' },
        { title: 'Logs', message: 'tail web' },
      ],
    });
    // The same card: not set again so soon.
    await open('messages');
    // The control plane replaced the Binding's client after its card changed.
    const other = await startContractAgent({
      version: '1.0',
      card: { skills: [{ id: 'n', name: 'New', description: '', tags: [], examples: ['hello'] }] },
    });
    cleanups.push(() => other.close());
    const binding = h.registry.get(BINDING);
    if (binding === undefined) throw new Error('no binding');
    h.registry.upsert({
      ...binding,
      client: new A2AClient({ endpoint: other.endpoint, identity: { kind: 'bearer', token: 't' } }),
    });
    await open('messages');
    await h.waitFor('the new prompts', () => h.fake.suggestedPrompts.length === 2);
    expect(h.fake.suggestedPrompts[1]?.prompts).toEqual([{ title: 'New', message: 'hello' }]);
    expect(
      h.fake.callsOf('assistant.threads.setSuggestedPrompts').every((c) => c.args.thread_ts === undefined),
    ).toBe(true);
    expect(h.agent.rpc(SEND)).toHaveLength(0);
  });

  it('a stop for a task the restarted broker follows still cancels it', async () => {
    const store = new SqliteStore(':memory:');
    const a = await startSlackHarness({ store, agentOptions: { workOn: true } });
    a.agent.enqueueFor(SEND, LONG);
    const { ts } = await a.mention('a long report');
    await a.waitFor('an append', () => a.fake.callsOf('chat.appendStream').some((c) => c.ok));
    await a.close({ keepAgent: true, keepStore: true, keepFake: true });
    const b = await harness({ store, agent: a.agent, fakeSlack: a.fake });
    await b.waitFor('the task followed', () => b.events.some((e) => e.type === 'task.followed'));
    await processing(b, ts);
    await stop(b, ts);
    await b.settled(1, 20_000);
    expect(b.agent.rpc(CANCEL)).toHaveLength(1);
    expect([...b.agent.tasks.values()][0]?.status.state).toBe('canceled');
    expect(b.events.find((e) => e.type === 'turn.settled')).toMatchObject({ outcome: 'canceled' });
    await b.slack.surface.statuses.idle();
    expect(b.fake.session(CHANNEL, ts)?.status).toBe('active');
  });
});
