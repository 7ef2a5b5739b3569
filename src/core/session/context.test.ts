import { describe, expect, it } from 'vitest';
import { systemClock } from '../clock.js';
import type { AnswerSink, ChatSurface } from '../ports.js';
import type { Commit, SessionRecord, SessionStore, TurnRecord } from '../store.js';
import { DriverContext, type DriverDeps } from './context.js';
import { DEFAULT_TIMINGS } from './timings.js';

/**
 * The driver context's answer refs: one a surface reports is held until the event loop turns,
 * and a commit of its turn asked for meanwhile carries it (the engine tests show the writes;
 * these show the bookkeeping behind them).
 */

const session: SessionRecord = {
  id: 's1',
  key: { surface: 'test', workspaceId: 'T1', channelId: 'C1', threadId: 't1' },
  binding: 'team-a/support',
  contextId: null,
  task: null,
  question: null,
  lastQuestionKey: null,
  version: 1,
  createdAt: 0,
  updatedAt: 0,
};

const turn: TurnRecord = {
  id: 'turn-1',
  sessionId: 's1',
  seq: 1,
  kind: 'message',
  chatMessageId: '1.0',
  text: 'hello',
  label: null,
  metadata: null,
  taskId: null,
  state: 'accepted',
  outcome: null,
  attempts: 1,
  firstSentAt: 0,
  busyNoticeAt: null,
  answerRef: null,
  traceContext: null,
  createdAt: 0,
  updatedAt: 0,
};

/** A context whose surface reports `ref` at the first update, and a store that records writes. */
function rig(unsaved?: string) {
  const commits: Commit[] = [];
  const refWrites: string[] = [];
  const store = {
    commit: async (c: Commit) => {
      commits.push(c);
      return c.session === undefined ? undefined : { ...c.session, version: c.session.version + 1 };
    },
    setAnswerRef: async (_turnId: string, ref: string) => {
      refWrites.push(ref);
    },
  } as unknown as SessionStore;
  const surface = {
    openAnswer: (_t: unknown, _id: string, ref: string | null, onRef: (r: string) => void): AnswerSink => ({
      update: () => {
        if (ref === null) onRef('answer-1');
      },
      finish: async () => undefined,
    }),
  } as unknown as ChatSurface;
  const unsavedRefs = new Map<string, string>();
  if (unsaved !== undefined) unsavedRefs.set(turn.id, unsaved);
  const deps: DriverDeps = {
    store,
    surface,
    clock: systemClock,
    events: { emit: () => undefined },
    timings: DEFAULT_TIMINGS,
    maxTextLength: 40_000,
    owner: 'me',
    fenced: false,
    resolve: () => undefined,
    wakeAt: () => undefined,
    firstText: new Set(),
    storedHere: new Set([turn.id]),
    unsent: new Set(),
    closing: new Set(),
    unsavedRefs,
  };
  const ctx = new DriverContext(deps, session.id, new AbortController().signal);
  return { ctx, commits, refWrites, unsavedRefs };
}

const loopTurns = () => new Promise((resolve) => setImmediate(resolve));

describe('DriverContext: answer refs', () => {
  it('carries a held ref in the next commit of its turn, and writes nothing else for it', async () => {
    const { ctx, commits, refWrites } = rig();
    const run = ctx.runFor(session, turn);
    run.sink?.update(run.answer);
    await ctx.commit(session, [{ ...turn, state: 'settled', outcome: 'completed' }]);
    await loopTurns();
    await ctx.drained();
    expect(commits[0]?.turns?.[0]?.answerRef).toBe('answer-1');
    expect(refWrites).toEqual([]);
  });

  it('leaves a held ref alone in a commit of another turn, and writes it once the loop turns', async () => {
    const { ctx, commits, refWrites } = rig();
    const run = ctx.runFor(session, turn);
    run.sink?.update(run.answer);
    await ctx.commit(session, [{ ...turn, id: 'turn-0', seq: 0 }]);
    expect(commits[0]?.turns?.[0]?.answerRef).toBeNull();
    expect(refWrites).toEqual([]);
    await loopTurns();
    expect(refWrites).toEqual(['answer-1']);
  });

  it('forgets a ref the store could not save once a commit has carried it', async () => {
    // A ref left unsaved by a store that was down: the next driver of the turn saves it again.
    const { ctx, commits, refWrites, unsavedRefs } = rig('answer-0');
    ctx.runFor(session, turn);
    await ctx.commit(session, [{ ...turn, state: 'settled', outcome: 'completed' }]);
    await ctx.drained();
    expect(commits[0]?.turns?.[0]?.answerRef).toBe('answer-0');
    expect(refWrites).toEqual([]);
    expect(unsavedRefs.has(turn.id)).toBe(false);
  });
});
