import { afterEach, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from '../helpers/engine-harness.js';
import {
  oversizedBody,
  oversizedEvent,
  script,
  stall,
  trickle,
} from '../peers/contract-agent/contract-agent.js';
import {
  arrange,
  type Fault,
  methods,
  outcomeOf,
  type Run,
  type Stage,
  settledTurn,
  stillServes,
} from './stages.js';

/**
 * Fault matrix, part 2: the transport. Trickled, stalled and oversized bodies at each call, a
 * connection reset in the middle of an event, a name that does not resolve. Every call is
 * bounded (idle, total, size), so each fault ends the call; what must hold is what the contract
 * says of a call that failed that way: the turn completes once the agent behaves (nothing lost,
 * nothing run twice on 1.0), or fails cleanly with a notice when it never does; the broker
 * keeps serving.
 */

const LIMITS = { maxCardBytes: 16 * 1024, maxEventBytes: 16 * 1024, maxResponseBytes: 16 * 1024 };
const times = <T>(n: number, make: () => T): T[] => Array.from({ length: n }, make);

interface Row {
  stage: Stage;
  what: string;
  fault: Fault;
  /** 'completes': the agent behaves after the fault; 'fails': it never does. */
  ends: 'completes' | 'fails';
}

const bodyFaults = [
  ['a body trickling one byte at a time', (as: 'json' | 'sse') => trickle(60, as)],
  ['a stalled body', (as: 'json' | 'sse') => stall(as)],
] as const;

const ROWS: Row[] = [
  // The card: every read of it fails the same way, so the turn fails after the give-up time.
  { stage: 'card', what: 'a card trickling in', fault: { card: { trickleMs: 60 } }, ends: 'fails' },
  { stage: 'card', what: 'a card whose body stalls', fault: { card: { trickleMs: 60_000 } }, ends: 'fails' },
  {
    stage: 'card',
    what: 'an oversized card',
    fault: { card: { raw: JSON.stringify({ name: 'x'.repeat(64 * 1024) }) } },
    ends: 'fails',
  },
  // Each call, twice, then the agent behaves.
  ...(['send', 'get', 'subscribe', 'cancel', 'list', 'answer'] as const).flatMap((stage) =>
    bodyFaults.map(
      ([what, make]): Row => ({
        stage,
        what,
        fault: {
          call: times(2, () =>
            make(stage === 'send' || stage === 'subscribe' || stage === 'answer' ? 'sse' : 'json'),
          ),
        },
        ends: 'completes',
      }),
    ),
  ),
  ...(['send', 'answer'] as const).map(
    (stage): Row => ({
      stage,
      what: 'a send answered with a JSON body that trickles',
      fault: { call: times(2, () => trickle(60, 'json')) },
      ends: 'completes',
    }),
  ),
  {
    stage: 'send',
    what: 'a JSON body that trickles, for ever',
    fault: { call: times(200, () => trickle(60, 'json')) },
    ends: 'fails',
  },
  {
    stage: 'send',
    what: 'an oversized event mid-stream',
    fault: { call: [oversizedEvent(32 * 1024)] },
    ends: 'completes',
  },
  {
    stage: 'subscribe',
    what: 'an oversized event',
    fault: { call: [oversizedEvent(32 * 1024)] },
    ends: 'completes',
  },
  ...(['get', 'cancel', 'list'] as const).map(
    (stage): Row => ({
      stage,
      what: 'an oversized response body',
      fault: { call: times(2, () => oversizedBody(32 * 1024)) },
      ends: 'completes',
    }),
  ),
  {
    stage: 'send',
    what: 'the connection reset in the middle of an event',
    fault: {
      call: [
        script([{ event: 'task' }, { event: 'working' }, { raw: 'data: {"jsonrpc":"2.0","res' }], 'destroy'),
      ],
    },
    ends: 'completes',
  },
  {
    stage: 'subscribe',
    what: 'the connection reset in the middle of an event',
    fault: { call: [script([{ event: 'task' }, { raw: 'data: {"jsonrpc":' }], 'destroy')] },
    ends: 'completes',
  },
];

describe.each(['1.0', '0.3'] as const)('fault matrix: the transport at A2A %s', (version) => {
  const runs: Run[] = [];
  const harnesses: Harness[] = [];
  afterEach(async () => {
    await Promise.all([
      ...runs.splice(0).map((r) => r.h.close()),
      ...harnesses.splice(0).map((h) => h.close()),
    ]);
  });

  for (const row of ROWS) {
    if (row.stage === 'list' && version === '0.3') continue;
    const expectation =
      row.ends === 'completes' ? 'the turn completes once the agent behaves' : 'the turn fails cleanly';
    it(`[DT-6][R-6] at ${row.stage}: ${row.what}: ${expectation} (${version})`, async () => {
      const run = await arrange(version, row.stage, row.fault, {
        client: {
          limits: LIMITS,
          timeouts: {
            bodyIdleMs: 250,
            callTotalMs: 500,
            cardTotalMs: 500,
            streamIdleMs: 400,
            streamTotalMs: 2_000,
          },
        },
      });
      runs.push(run);
      if (row.stage === 'cancel') {
        await run.h.surface.waitFor(
          () => run.h.surface.notices(run.sessionId).includes('question-timeout'),
          10_000,
          'the question to time out and its task to be cancelled',
        );
        expect(run.events.filter((e) => e.type === 'task.cancel').at(-1)).toMatchObject({ ok: true });
      } else {
        await settledTurn(run.h, run.turnId, 15_000);
        if (row.ends === 'completes') expect(outcomeOf(run)).toBe('completed');
        else {
          expect(outcomeOf(run)).toMatch(/^error:/);
          expect(run.h.surface.notices(run.sessionId)).toContain('agent-unreachable');
        }
      }
      if (version === '1.0') for (const [, n] of run.h.agent.runs) expect(n).toBeLessThanOrEqual(1);
      await stillServes(run);
    });
  }

  it(`[E-6] a name that does not resolve: not sent, retried, then the turn fails cleanly (${version})`, async () => {
    const h = await startHarness({ version, client: { endpoint: 'http://agent-kourier-fault.invalid/a2a' } });
    harnesses.push(h);
    const { sessionId, turnId } = await h.say('t1', '1.0', 'hello');
    await settledTurn(h, turnId, 15_000);
    expect(h.surface.notices(sessionId)).toEqual(['agent-unreachable']);
    expect(h.agent.rpc(methods(version).send)).toHaveLength(0);
  });
});
