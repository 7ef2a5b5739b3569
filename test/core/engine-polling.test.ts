import { afterEach, describe, expect, it } from 'vitest';
import type { PollingSettings } from '../../src/core/ports.js';
import { SessionEngine } from '../../src/core/session/engine.js';
import {
  FAST_TIMINGS,
  type Harness,
  type HarnessOptions,
  sentMessages,
  startHarness,
} from '../helpers/engine-harness.js';
import {
  answer,
  bareMessage,
  dropBeforeHeaders,
  httpStatus,
  rpcError,
} from '../peers/contract-agent/contract-agent.js';

/**
 * The P rows against the contract agent without streaming: a Binding whose backend polls sends
 * with SendMessage (message/send), follows the task with GetTask only, and shows what each read
 * reveals. The agent answers -32004 to any streaming call, so a test that reached one would fail.
 */

const POLLING: PollingSettings = { intervalMs: 40, timeoutMs: 4_000 };

describe.each(['1.0', '0.3'] as const)('polling a non-streaming contract agent at %s', (version) => {
  const harnesses: Harness[] = [];
  afterEach(async () => {
    await Promise.all(harnesses.splice(0).map((h) => h.close()));
  });

  async function harness(options: Partial<HarnessOptions> = {}): Promise<Harness> {
    const h = await startHarness({
      version,
      ...options,
      agent: { card: { streaming: false }, ...options.agent },
      settings: { polling: POLLING, ...options.settings },
    });
    harnesses.push(h);
    return h;
  }

  const send = version === '1.0' ? 'SendMessage' : 'message/send';
  const streamSend = version === '1.0' ? 'SendStreamingMessage' : 'message/stream';
  const get = version === '1.0' ? 'GetTask' : 'tasks/get';
  const subscribe = version === '1.0' ? 'SubscribeToTask' : 'tasks/resubscribe';
  const cancel = version === '1.0' ? 'CancelTask' : 'tasks/cancel';

  function settled(h: Harness, turnId: string, ms = 8_000): Promise<void> {
    return h.surface.waitFor(
      () => h.events.some((e) => e.type === 'turn.settled' && e.turnId === turnId),
      ms,
      `turn ${turnId} to settle`,
    );
  }
  const outcomeOf = (h: Harness, turnId: string) =>
    h.events.find((e) => e.type === 'turn.settled' && e.turnId === turnId);
  const noStreamingCalls = (h: Harness) => {
    expect(h.agent.rpc(streamSend)).toHaveLength(0);
    expect(h.agent.rpc(subscribe)).toHaveLength(0);
  };

  it(`[P-2][P-3] sends without a stream, asking for an immediate return, and shows the answer as polls reveal it (${version})`, async () => {
    const h = await harness();
    h.agent.enqueueFor(send, answer({ chunks: ['one ', 'two ', 'three'], chunkDelayMs: 150 }));
    const { turnId, sessionId } = await h.say('t1', '1', 'count');
    await settled(h, turnId);
    const [request] = h.agent.rpc(send);
    const params = (request?.body as { params: { configuration?: Record<string, unknown> } } | undefined)
      ?.params;
    expect(params?.configuration).toEqual(
      version === '1.0' ? { returnImmediately: true } : { blocking: false },
    );
    expect(sentMessages(h, send).map((m) => m.messageId)).toEqual([turnId]);
    const [shown] = h.surface.of(sessionId, 'answer');
    expect(shown?.text).toBe('one two three');
    expect(shown?.final).toBe(true);
    // Several reads, and the thread saw the answer grow before it was final.
    expect(h.agent.rpc(get).length).toBeGreaterThan(2);
    expect(shown?.updates ?? 0).toBeGreaterThan(2);
    expect(outcomeOf(h, turnId)).toMatchObject({ outcome: 'completed' });
    expect(h.events.filter((e) => e.type === 'task.polled').length).toBeGreaterThan(1);
    noStreamingCalls(h);
  });

  it(`[P-2] the polled send's reply is one agent.event for a sink that asks, and none for one that does not (${version})`, async () => {
    for (const agentEvents of [true, false]) {
      const h = await harness({ agentEvents });
      h.agent.enqueueFor(send, answer({ chunks: ['done'] }));
      const { turnId } = await h.say('t1', '1', 'go');
      await settled(h, turnId);
      const seen = h.events.filter((e) => e.type === 'agent.event' && e.turnId === turnId);
      expect(seen.map((e) => (e.type === 'agent.event' ? e.kind : ''))).toEqual(agentEvents ? ['task'] : []);
    }
  });

  it(`[P-2] records the task the send named before reading it (${version})`, async () => {
    const h = await harness();
    h.agent.enqueueFor(send, answer({ chunks: ['slow'], chunkDelayMs: 100 }));
    const { turnId } = await h.say('t1', '1', 'hello');
    await h.surface.waitFor(() => h.events.some((e) => e.type === 'turn.accepted'), 4_000, 'accepted');
    const types = h.events.map((e) => e.type);
    const accepted = types.indexOf('turn.accepted');
    expect(accepted).toBeGreaterThan(-1);
    expect(types.indexOf('task.polled') === -1 || types.indexOf('task.polled') > accepted).toBe(true);
    const turn = await h.store.getTurn(turnId);
    expect(turn?.state).toBe('accepted');
    expect(turn?.taskId).toBe([...h.agent.tasks.keys()][0]);
    await settled(h, turnId);
  });

  it(`[P-1] keeps streaming an agent whose card streams, even with polling on (${version})`, async () => {
    const h = await harness({ agent: { card: { streaming: true } } });
    const { turnId, sessionId } = await h.say('t1', '1', 'hi');
    await settled(h, turnId);
    expect(h.agent.rpc(streamSend)).toHaveLength(1);
    expect(h.agent.rpc(send)).toHaveLength(0);
    expect(h.surface.of(sessionId, 'answer')[0]?.text).toContain('echo:');
  });

  it(`[P-4] cancels a task that runs past the polling timeout and tells the thread (${version})`, async () => {
    const h = await harness({ settings: { polling: { intervalMs: 40, timeoutMs: 600 } } });
    h.agent.enqueueFor(send, answer({ chunks: ['started ', 'never done'], chunkDelayMs: 60_000 }));
    const { turnId, sessionId } = await h.say('t1', '1', 'forever');
    await settled(h, turnId);
    expect(h.agent.rpc(cancel)).toHaveLength(1);
    expect(outcomeOf(h, turnId)).toMatchObject({ outcome: 'canceled' });
    expect(h.surface.notices(sessionId)).toEqual(['poll-timeout']);
    // What the agent had written is kept in the thread.
    expect(h.surface.of(sessionId, 'answer')[0]?.text).toBe('started ');
    noStreamingCalls(h);
  });

  it(`[P-5] pauses on a question and sends the answer without a stream (${version})`, async () => {
    const h = await harness();
    h.agent.enqueueFor(
      send,
      answer({
        chunks: ['checking '],
        state: 'input-required',
        statusText: 'Which cluster?',
        chunkDelayMs: 50,
      }),
    );
    const { turnId, sessionId } = await h.say('t1', '1', 'restart');
    await h.surface.waitFor(() => h.surface.of(sessionId, 'question').length === 1, 4_000, 'the question');
    expect(outcomeOf(h, turnId)).toMatchObject({ outcome: 'input-required' });
    const session = await h.store.getSession(sessionId);
    expect(session?.question?.questionKey).toBeTruthy();
    const taskId = session?.task?.taskId;
    await h.say('t1', '2', 'prod');
    await h.surface.waitFor(
      () => h.events.filter((e) => e.type === 'turn.settled').length === 2,
      6_000,
      'the answer to settle',
    );
    const answerTurn = sentMessages(h, send)[1];
    expect(answerTurn?.taskId).toBe(taskId);
    const settledTurns = h.events.filter((e) => e.type === 'turn.settled');
    expect(settledTurns[1]).toMatchObject({ outcome: 'completed' });
    expect(h.agent.tasks.get(taskId ?? '')?.status.state).toBe('completed');
    noStreamingCalls(h);
  });

  it(`[P-3] tells the thread when the polled task fails (${version})`, async () => {
    const h = await harness();
    h.agent.enqueueFor(send, answer({ chunks: [], state: 'failed', chunkDelayMs: 50 }));
    const { turnId, sessionId } = await h.say('t1', '1', 'break');
    await settled(h, turnId);
    expect(outcomeOf(h, turnId)).toMatchObject({ outcome: 'failed' });
    expect(h.surface.notices(sessionId)).toEqual(['task-failed']);
  });

  it(`[P-6] shows a bare Message as the answer when polling is on (${version})`, async () => {
    const h = await harness();
    h.agent.enqueueFor(send, bareMessage('synchronous reply'));
    const { turnId, sessionId } = await h.say('t1', '1', 'quick');
    await settled(h, turnId);
    expect(h.surface.of(sessionId, 'answer')[0]).toMatchObject({ text: 'synchronous reply', final: true });
    expect(outcomeOf(h, turnId)).toMatchObject({ outcome: 'completed', taskId: null });
    expect(h.surface.notices(sessionId)).toEqual([]);
    expect(h.agent.rpc(get)).toHaveLength(0);
  });

  it(`[P-7] retries a GetTask that fails, after the agent's Retry-After, and finishes the turn (${version})`, async () => {
    const h = await harness();
    h.agent.enqueueFor(send, answer({ chunks: ['done'], chunkDelayMs: 200 }));
    h.agent.enqueueFor(get, httpStatus(503, { 'Retry-After': '1' }), rpcError(-32603, 'boom'));
    const { turnId, sessionId } = await h.say('t1', '1', 'flaky');
    const started = Date.now();
    await settled(h, turnId);
    // The 503's Retry-After of a second was waited before the next read.
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    expect(h.surface.of(sessionId, 'answer')[0]?.text).toBe('done');
    expect(outcomeOf(h, turnId)).toMatchObject({ outcome: 'completed' });
  });

  it(`[P-8][R-8] a send whose answer was lost is looked up (1.0) or replayed by messageId, and runs once (${version})`, async () => {
    const h = await harness();
    // The first turn gives the thread a context, so 1.0 can look the second up with ListTasks.
    const first = await h.say('t1', '1', 'first');
    await settled(h, first.turnId);
    h.agent.enqueueFor(send, dropBeforeHeaders({ createTask: true }));
    const second = await h.say('t1', '2', 'second');
    await settled(h, second.turnId);
    expect(h.agent.runs.get(second.turnId)).toBe(1);
    expect(outcomeOf(h, second.turnId)).toMatchObject({ outcome: 'completed' });
    const lookups = h.events.filter((e) => e.type === 'turn.lookup' && e.turnId === second.turnId);
    if (version === '1.0') {
      expect(lookups.map((e) => (e.type === 'turn.lookup' ? e.result : ''))).toEqual(['found']);
      expect(h.agent.rpc('ListTasks').length).toBeGreaterThan(0);
      expect(sentMessages(h, send).filter((m) => m.messageId === second.turnId)).toHaveLength(1);
    } else {
      // 0.3 has no ListTasks: the same messageId is sent again and the agent replays its task.
      expect(lookups.map((e) => (e.type === 'turn.lookup' ? e.result : ''))).toEqual(['unsupported']);
      expect(sentMessages(h, send).filter((m) => m.messageId === second.turnId)).toHaveLength(2);
    }
    noStreamingCalls(h);
  });

  it(`[P-9] a restarted engine resumes polling the recorded task and finishes the turn once (${version})`, async () => {
    const h = await harness();
    h.agent.enqueueFor(send, answer({ chunks: ['before ', 'after'], chunkDelayMs: 500 }));
    const { turnId, sessionId } = await h.say('t1', '1', 'long');
    await h.surface.waitFor(() => h.events.some((e) => e.type === 'task.polled'), 4_000, 'a poll');
    await h.engine.stop();
    const sendsAtStop = h.agent.rpc(send).length;
    const events: typeof h.events = [];
    const again = new SessionEngine({
      store: h.store,
      registry: h.registry,
      surface: h.surface,
      events: { emit: (e) => events.push(e) },
      timings: FAST_TIMINGS,
    });
    await again.start();
    try {
      await h.surface.waitFor(
        () => events.some((e) => e.type === 'turn.settled' && e.turnId === turnId),
        8_000,
        'the resumed turn to settle',
      );
      expect(events.some((e) => e.type === 'task.followed')).toBe(true);
      expect(h.agent.rpc(send)).toHaveLength(sendsAtStop);
      expect(h.agent.runs.get(turnId)).toBe(1);
      const answers = h.surface.of(sessionId, 'answer');
      expect(answers).toHaveLength(1);
      expect(answers[0]).toMatchObject({ text: 'before after', final: true });
      expect(events.filter((e) => e.type === 'turn.settled')).toHaveLength(1);
    } finally {
      await again.stop();
    }
  });
});
