import { afterEach, describe, expect, it } from 'vitest';
import type { EngineEvent } from '../../../src/core/events.js';
import { sessionIdOf } from '../../../src/core/store.js';
import { WebChatActivity, webChatThreadOf } from '../../../src/surfaces/webchat/activity.js';
import { activityText } from '../../../src/surfaces/webchat/page/activity.js';
import { ThreadBook } from '../../../src/surfaces/webchat/threads.js';
import type { ActivityView, ThreadEvent, ThreadSummary } from '../../../src/surfaces/webchat/view.js';
import { script } from '../../peers/contract-agent/contract-agent.js';
import { BINDING, startWebChatHarness, type WebChatHarness } from './harness.js';

const T0 = Date.parse('2026-03-01T10:00:00.000Z');

/** An engine event without what every event of one session shares. */
type Bare<E> = E extends unknown ? Omit<E, 'sessionId' | 'binding' | 'at'> : never;

function setup() {
  const book = new ThreadBook(() => T0);
  const thread = book.create(BINDING);
  const activity = new WebChatActivity(book);
  const seen: Array<ActivityView | null> = [];
  thread.subscribe((e) => {
    if (e.event === 'activity') seen.push(e.data.activity);
  });
  const base = { sessionId: sessionIdOf(thread.key), binding: BINDING };
  const emit = (event: Bare<EngineEvent>, atMs = 0): void =>
    activity.emit({ ...base, ...event, at: T0 + atMs } as EngineEvent);
  return { thread, emit, seen, book, activity };
}

describe('the web chat shows what the engine does for a thread (activity.ts)', () => {
  it('follows a turn from received to settled, counting from its start', () => {
    const { thread, emit, seen } = setup();
    emit({ type: 'turn.received', turnId: 't1', kind: 'message', queued: false });
    emit({ type: 'turn.sending', turnId: 't1', attempt: 1, contextId: null }, 10);
    emit({ type: 'turn.accepted', turnId: 't1', taskId: 'k1', contextId: 'c1', latencyMs: 5 }, 20);
    // Every agent event reaches the sink; it changes nothing shown.
    emit({ type: 'agent.event', turnId: 't1', kind: 'artifact-update' }, 30);
    expect(thread.activity).toEqual({
      state: 'working',
      turnId: 't1',
      startedAt: '2026-03-01T10:00:00.000Z',
      since: '2026-03-01T10:00:00.020Z',
    });
    emit(
      {
        type: 'turn.settled',
        turnId: 't1',
        outcome: 'completed',
        taskId: 'k1',
        durationMs: 40,
        answerLength: 3,
      },
      40,
    );
    expect(thread.activity).toBeNull();
    expect(seen.map((a) => a?.state ?? null)).toEqual(['queued', 'sending', 'working', null]);
    expect(thread.summary().activity).toBeNull();
  });

  it('says when a send is tried again, and why', () => {
    const { thread, emit } = setup();
    emit({ type: 'turn.sending', turnId: 't1', attempt: 1, contextId: null });
    emit({ type: 'agent.busy', turnId: 't1', code: 'rate_limited', delayMs: 4_000 }, 1_000);
    expect(thread.activity).toMatchObject({
      state: 'retrying',
      busy: true,
      retryAt: '2026-03-01T10:00:05.000Z',
    });
    expect(activityText(thread.activity as ActivityView, T0 + 2_000)).toBe(
      'The agent is busy; sending again in 3 s · 2 s',
    );
    emit({ type: 'turn.retry', turnId: 't1', reason: 'unreachable', delayMs: 1_000 }, 6_000);
    expect(activityText(thread.activity as ActivityView, T0 + 6_500)).toBe(
      'The send did not go through; trying again in 1 s · 6 s',
    );
    emit({ type: 'turn.unknown', turnId: 't1' }, 7_000);
    expect(thread.activity?.state).toBe('checking');
    emit({ type: 'stream.lost', turnId: 't1', taskId: 'k1', code: 'stream_idle' }, 8_000);
    expect(activityText(thread.activity as ActivityView, T0 + 68_000)).toBe(
      "Reconnecting to the agent's task · 1 min 8 s",
    );
  });

  it('lets a queued turn wait behind the running one, and ends on a question', () => {
    const { thread, emit } = setup();
    emit({ type: 'turn.sending', turnId: 't1', attempt: 1, contextId: null });
    emit({ type: 'turn.received', turnId: 't2', kind: 'message', queued: true }, 5);
    expect(thread.activity).toMatchObject({ state: 'sending', turnId: 't1' });
    // The end of another turn says nothing about this one.
    emit({
      type: 'turn.settled',
      turnId: 't0',
      outcome: 'completed',
      taskId: null,
      durationMs: 1,
      answerLength: 0,
    });
    expect(thread.activity?.turnId).toBe('t1');
    emit({ type: 'question.asked', taskId: 'k1', kind: 'text', approval: false }, 9);
    expect(thread.activity).toBeNull();
  });

  it("ignores other surfaces' sessions and threads it does not show", () => {
    const { emit, thread, activity, book } = setup();
    const slack = sessionIdOf({ surface: 'slack', workspaceId: 'T1', channelId: 'C1', threadId: thread.id });
    activity.emit({
      type: 'turn.sending',
      sessionId: slack,
      binding: BINDING,
      at: T0,
      turnId: 'x',
      attempt: 1,
      contextId: null,
    });
    expect(thread.activity).toBeNull();
    const unknown = sessionIdOf({
      surface: 'webchat',
      workspaceId: 'local',
      channelId: BINDING,
      threadId: 't-gone',
    });
    activity.emit({
      type: 'turn.sending',
      sessionId: unknown,
      binding: BINDING,
      at: T0,
      turnId: 'x',
      attempt: 1,
      contextId: null,
    });
    expect(book.get('t-gone')).toBeUndefined();
    emit({ type: 'turn.sending', turnId: 't1', attempt: 1, contextId: null });
    expect(thread.activity?.state).toBe('sending');
    expect(
      webChatThreadOf(
        sessionIdOf({ surface: 'webchat', workspaceId: 'local', channelId: 'a/b', threadId: 't:1' }),
      ),
    ).toBe('t:1');
    expect(webChatThreadOf('webchat:other:a%2Fb:t1')).toBeUndefined();
    expect(webChatThreadOf('webchat:local:%E0%A4%A:t1')).toBeUndefined();
  });
});

describe('the agent at work, over the API with the real engine', () => {
  let h: WebChatHarness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  it('streams the activity before the first text of the answer, and its end', async () => {
    h = await startWebChatHarness({ answerIntervalMs: 20 });
    h.agent.enqueueFor(
      'SendStreamingMessage',
      script([
        { event: 'task' },
        { event: 'working' },
        { waitMs: 300 },
        { event: 'chunk', text: 'Here.' },
        { event: 'completed' },
      ]),
    );
    const created = await h.api('POST', '/api/threads', { binding: BINDING, text: 'hello' });
    const { thread } = created.json as { thread: ThreadSummary };
    const stream = await h.follow(thread.id);
    await h.waitForThread(
      thread.id,
      (t) => t.messages.some((m) => m.final === true) && t.activity === null,
      'the answer',
    );
    stream.close();
    await stream.done;
    const shown = stream.events.flatMap((e: ThreadEvent) => {
      if (e.event === 'activity') return [e.data.activity?.state ?? 'idle'];
      if (e.event === 'snapshot') return [`snapshot:${e.data.activity?.state ?? 'idle'}`];
      if (e.event === 'append' || (e.event === 'message' && e.data.kind === 'answer')) return ['text'];
      return [];
    });
    // Working is said before any text; idle comes after the answer.
    const working = shown.findIndex((s) => s === 'working' || s === 'snapshot:working');
    const text = shown.indexOf('text');
    expect(working, shown.join(' ')).toBeGreaterThanOrEqual(0);
    expect(working).toBeLessThan(text);
    expect(shown.at(-1)).toBe('idle');
    const list = await h.api('GET', '/api/threads');
    expect((list.json as { threads: ThreadSummary[] }).threads[0]?.activity).toBeNull();
  });
});
