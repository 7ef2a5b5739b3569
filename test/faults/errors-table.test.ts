import { afterEach, describe, expect, it } from 'vitest';
import type { HarnessOptions } from '../helpers/engine-harness.js';
import {
  httpStatus,
  rpcError,
  rpcErrorObject,
  script,
  type WireVersion,
} from '../peers/contract-agent/contract-agent.js';
import {
  AGENT_TEXT,
  arrange,
  type Fault,
  methods,
  outcomeOf,
  type Run,
  type Stage,
  settledTurn,
  shownText,
  stillServes,
} from './stages.js';

/**
 * Fault matrix, part 1: every row of the agent contract's Errors table, at both wire versions,
 * at each stage of a turn where the row can happen (card, send, stream, GetTask,
 * SubscribeToTask, CancelTask, ListTasks, and the send of an answer), through the session
 * engine against the contract agent. After each: what the row says must hold, no agent text in
 * the thread (E-9), no message run twice on 1.0, and the broker still answers a new thread.
 * docs/reliability.md has the table; each title names its row.
 */

interface Row {
  id: string;
  stage: Stage;
  what: string;
  only?: WireVersion;
  fault(v: WireVersion): Fault;
  harness?: Partial<HarnessOptions>;
  /** Waits for what must hold and asserts it. */
  holds(run: Run, v: WireVersion): Promise<void>;
}

const times = <T>(n: number, make: () => T): T[] => Array.from({ length: n }, make);

async function failsWith(run: Run, outcome: string | RegExp, notice: string): Promise<void> {
  await settledTurn(run.h, run.turnId);
  if (typeof outcome === 'string') expect(outcomeOf(run)).toBe(outcome);
  else expect(outcomeOf(run)).toMatch(outcome);
  expect(run.h.surface.notices(run.sessionId)).toContain(notice);
}

async function completes(run: Run): Promise<void> {
  await settledTurn(run.h, run.turnId);
  expect(outcomeOf(run)).toBe('completed');
}

async function cancelReported(run: Run, ok: boolean): Promise<void> {
  await run.h.surface.waitFor(
    () => run.events.some((e) => e.type === 'task.cancel'),
    10_000,
    'the cancel to be reported',
  );
  const cancel = run.events.find((e) => e.type === 'task.cancel');
  expect(cancel).toMatchObject({ ok });
  await run.h.surface.waitFor(
    () => run.h.surface.notices(run.sessionId).includes('question-timeout'),
    5_000,
    'the thread to be told',
  );
  if (!ok) expect(run.h.surface.notices(run.sessionId)).toContain('cancel-failed');
}

function sends(run: Run, v: WireVersion): number {
  return run.h.agent.rpc(methods(v).send).length;
}

const midStreamError = (v: WireVersion, code: number): Fault => ({
  call: [script([{ event: 'task' }, { event: 'working' }, { error: rpcErrorObject(v, code, AGENT_TEXT) }])],
});

const ROWS: Row[] = [
  // E-1: HTTP 401 or 403 at any call: the turn fails without a retry.
  ...(['card', 'send', 'get', 'subscribe', 'list', 'answer'] as const).map(
    (stage): Row => ({
      id: 'E-1',
      stage,
      what: 'HTTP 401/403: the turn fails without a retry, and the rejection is counted',
      fault: () =>
        stage === 'card' ? { card: { status: 401 } } : { call: [httpStatus(403, {}, AGENT_TEXT)] },
      async holds(run, v) {
        await failsWith(run, 'error:credentials_rejected', 'credentials-rejected');
        expect(run.events.some((e) => e.type === 'credentials.rejected')).toBe(true);
        if (stage === 'card') expect(sends(run, v)).toBe(0);
        if (stage === 'send') expect(sends(run, v)).toBe(1);
      },
    }),
  ),
  {
    id: 'E-1',
    stage: 'cancel',
    what: 'HTTP 401 to a cancel: not retried, reported as failed',
    fault: () => ({ call: [httpStatus(401, {}, AGENT_TEXT)] }),
    async holds(run, v) {
      await cancelReported(run, false);
      expect(run.h.agent.rpc(methods(v).cancel)).toHaveLength(1);
    },
  },
  // E-2: JSON-RPC -31403: the identity is refused for this session; the turn fails.
  ...(['send', 'stream', 'get', 'subscribe', 'list', 'answer'] as const).map(
    (stage): Row => ({
      id: 'E-2',
      stage,
      what: 'JSON-RPC -31403: the identity is refused, the turn fails',
      fault: (v) =>
        stage === 'stream' ? midStreamError(v, -31403) : { call: [rpcError(-31403, AGENT_TEXT)] },
      holds: (run) => failsWith(run, 'error:identity_refused', 'identity-refused'),
    }),
  ),
  // E-3: -32004 to a send: busy; sent again after a backoff, the thread told after a while.
  ...(['send', 'answer'] as const).map(
    (stage): Row => ({
      id: 'E-3',
      stage,
      what: '-32004 to a send: the same message again after a backoff, the thread told once',
      fault: () => ({ call: times(8, () => rpcError(-32004, AGENT_TEXT)) }),
      async holds(run, v) {
        await settledTurn(run.h, run.turnId);
        const ids = run.h.agent
          .rpc(methods(v).send)
          .map((r) => (r.body as { params: { message: { messageId: string } } }).params.message.messageId)
          .filter((id) => id === run.turnId);
        expect(ids).toHaveLength(9);
        expect(run.h.surface.notices(run.sessionId).filter((n) => n === 'agent-busy')).toHaveLength(1);
      },
    }),
  ),
  // E-4: -32603 to an answer: rejected; the paused task is cancelled and the thread told.
  {
    id: 'E-4',
    stage: 'answer',
    what: '-32603 to an answer: the paused task is cancelled and the thread told',
    fault: () => ({ call: [rpcError(-32603, AGENT_TEXT)] }),
    async holds(run, v) {
      await failsWith(run, 'error:answer_rejected', 'answer-rejected');
      expect(run.h.agent.rpc(methods(v).cancel)).toHaveLength(1);
    },
  },
  // E-5: -32001 while a task is followed: the session is gone; the next turn starts anew.
  ...(['stream', 'get', 'subscribe'] as const).map(
    (stage): Row => ({
      id: 'E-5',
      stage,
      what: '-32001 while the task is followed: the thread told, the next turn in a new context',
      fault: (v) =>
        stage === 'stream' ? midStreamError(v, -32001) : { call: [rpcError(-32001, AGENT_TEXT)] },
      async holds(run, v) {
        await failsWith(run, 'error:task_not_found', 'session-gone');
        const next = await run.h.say('fault-thread', '99.0', 'again');
        await settledTurn(run.h, next.turnId);
        const last = run.h.agent.rpc(methods(v).send).at(-1)?.body as
          | { params: { message: { contextId?: string } } }
          | undefined;
        expect(last?.params.message).toBeDefined();
        expect(last?.params.message.contextId).toBeUndefined();
      },
    }),
  ),
  {
    id: 'E-5',
    stage: 'cancel',
    what: '-32001 to a cancel: the task is gone; the thread is told its question timed out',
    fault: () => ({ call: [rpcError(-32001, AGENT_TEXT)] }),
    async holds(run) {
      await run.h.surface.waitFor(
        () => run.events.some((e) => e.type === 'task.cancel'),
        10_000,
        'the cancel',
      );
      await run.h.surface.waitFor(
        () => run.h.surface.notices(run.sessionId).includes('question-timeout'),
        5_000,
        'the thread to be told',
      );
      expect(run.events.find((e) => e.type === 'task.cancel')).toMatchObject({ ok: true });
    },
  },
  // E-6: another 4xx before any event: not sent; retried, then failed after the give-up.
  ...(['card', 'send', 'list', 'answer'] as const).map(
    (stage): Row => ({
      id: 'E-6',
      stage,
      what: 'HTTP 4xx before any event: retried, then the turn fails after the give-up time',
      fault: () =>
        stage === 'card'
          ? { card: { status: 404 } }
          : { call: times(200, () => httpStatus(400, {}, AGENT_TEXT)) },
      async holds(run, v) {
        await failsWith(run, /^error:/, 'agent-unreachable');
        if (stage === 'send') expect(sends(run, v)).toBeGreaterThan(1);
        // The answer is sent again to the task that asked; the question is not read as asked anew.
        if (stage === 'answer') {
          expect(run.h.surface.notices(run.sessionId)).toEqual(['agent-unreachable']);
          expect(run.events.find((e) => e.type === 'task.cancel')).toMatchObject({
            reason: 'answer-not-delivered',
          });
        }
      },
    }),
  ),
  ...(['get', 'subscribe'] as const).map(
    (stage): Row => ({
      id: 'E-6',
      stage,
      what: 'HTTP 4xx to a read: retried (or polled), and the turn completes once the agent answers',
      fault: () => ({ call: times(3, () => httpStatus(400, {}, AGENT_TEXT)) }),
      holds: completes,
    }),
  ),
  {
    id: 'E-6',
    stage: 'cancel',
    what: 'HTTP 4xx to every cancel: tried a few times, then reported as failed',
    fault: () => ({ call: times(3, () => httpStatus(400, {}, AGENT_TEXT)) }),
    async holds(run, v) {
      await cancelReported(run, false);
      expect(run.h.agent.rpc(methods(v).cancel)).toHaveLength(3);
    },
  },
  // E-7: 5xx or a dropped connection before any event: outcome unknown, looked up, sent again.
  {
    id: 'E-7',
    stage: 'send',
    what: 'HTTP 5xx to a first turn: sent again with the same messageId, answered once',
    fault: () => ({ call: [httpStatus(503, {}, AGENT_TEXT)] }),
    async holds(run, v) {
      await completes(run);
      expect(sends(run, v)).toBe(2);
    },
  },
  {
    id: 'E-7',
    stage: 'list',
    only: '1.0',
    what: 'a dropped send in a context: found with ListTasks, not sent again to an agent that would run it twice',
    harness: { agent: { dedupe: false } },
    fault: () => ({ call: [] }),
    async holds(run) {
      await completes(run);
      expect(run.h.agent.runs.get(run.turnId)).toBe(1);
    },
  },
  {
    id: 'E-7',
    stage: 'list',
    only: '1.0',
    what: 'HTTP 5xx to every ListTasks: retried, then the turn fails after the give-up time',
    fault: () => ({ call: times(200, () => httpStatus(503, {}, AGENT_TEXT)) }),
    holds: (run) => failsWith(run, /^error:/, 'agent-unreachable'),
  },
  ...(['get', 'subscribe'] as const).map(
    (stage): Row => ({
      id: 'E-7',
      stage,
      what: 'HTTP 5xx to a read: retried (or polled), and the turn completes',
      fault: () => ({ call: times(3, () => httpStatus(503, {}, AGENT_TEXT)) }),
      holds: completes,
    }),
  ),
  {
    id: 'E-7',
    stage: 'cancel',
    what: 'HTTP 5xx to a cancel: retried, and the cancel goes through',
    fault: () => ({ call: [httpStatus(503, {}, AGENT_TEXT)] }),
    holds: (run) => cancelReported(run, true),
  },
  {
    id: 'E-7',
    stage: 'card',
    what: 'HTTP 5xx to the card, for ever: retried, then the turn fails after the give-up time',
    fault: () => ({ card: { status: 503 } }),
    holds: (run) => failsWith(run, /^error:/, 'agent-unreachable'),
  },
  // E-8: Retry-After is honoured on reconnects.
  ...(['send', 'get'] as const).map(
    (stage): Row => ({
      id: 'E-8',
      stage,
      what: 'Retry-After: the next call waits at least that long',
      fault: () => ({ call: [httpStatus(stage === 'send' ? 429 : 503, { 'Retry-After': '1' }, AGENT_TEXT)] }),
      async holds(run, v) {
        await completes(run);
        const m = methods(v);
        const calls = run.h.agent.requests.filter((r) => r.rpcMethod === (stage === 'send' ? m.send : m.get));
        expect(calls.length).toBeGreaterThanOrEqual(2);
        if (stage === 'send') {
          const sending = run.events.filter((e) => e.type === 'turn.sending' && e.turnId === run.turnId);
          expect(sending.length).toBe(2);
          expect((sending[1]?.at ?? 0) - (sending[0]?.at ?? 0)).toBeGreaterThanOrEqual(1_000);
        }
      },
    }),
  ),
  // E-9 and E-10: a failed task's text is read only to pick a category, never shown.
  {
    id: 'E-10',
    stage: 'stream',
    what: 'a failed task: "The agent’s task failed." with the category its code names, its text never shown',
    fault: () => ({
      call: [
        script([
          { event: 'task' },
          { event: 'failed', text: `${AGENT_TEXT}: rate limit exceeded`, metadata: { code: 'rate_limit' } },
          { event: 'task' },
        ]),
      ],
    }),
    async holds(run) {
      await failsWith(run, 'failed', 'task-failed');
      expect(run.h.surface.of(run.sessionId, 'notice').map((n) => n.text)).toContain(
        "The agent's task failed (rate limit).",
      );
    },
  },
  {
    id: 'E-10',
    stage: 'get',
    what: 'a failed task whose stream ends early: GetTask reads it, the category from its text',
    fault: () => ({
      call: [],
      send: [
        script(
          [{ event: 'task' }, { event: 'failed', text: `${AGENT_TEXT}: the context length was exceeded` }],
          'destroy',
        ),
      ],
    }),
    async holds(run) {
      await failsWith(run, 'failed', 'task-failed');
      expect(run.h.surface.of(run.sessionId, 'notice').map((n) => n.text)).toContain(
        "The agent's task failed (context limit).",
      );
    },
  },
];

describe.each(['1.0', '0.3'] as const)('fault matrix: the Errors table at A2A %s', (version) => {
  const runs: Run[] = [];
  afterEach(async () => {
    await Promise.all(runs.splice(0).map((r) => r.h.close()));
  });

  for (const row of ROWS) {
    if (row.only !== undefined && row.only !== version) continue;
    if (row.stage === 'list' && version === '0.3') continue;
    it(`[E-9][${row.id}] at ${row.stage}: ${row.what} (${version})`, async () => {
      const run = await arrange(version, row.stage, row.fault(version), row.harness);
      runs.push(run);
      await row.holds(run, version);
      expect(shownText(run)).not.toContain(AGENT_TEXT);
      if (version === '1.0' && row.harness?.agent?.dedupe !== false) {
        for (const [, n] of run.h.agent.runs) expect(n).toBeLessThanOrEqual(1);
      }
      await stillServes(run);
    });
  }
});
