import { afterEach, describe, expect, it } from 'vitest';
import { type Harness, type HarnessOptions, startHarness } from '../helpers/engine-harness.js';
import { answer, dropAfter, httpStatus, rpcError, stall } from '../peers/contract-agent/contract-agent.js';

/**
 * Fault matrix, polling: an agent that does not stream, followed with GetTask only (P rows), and
 * every way its GetTask can fail, plus a task that never ends. Through the session engine
 * against the contract agent at both versions. After each: what the row says, and no agent
 * text in the thread (E-9). docs/reliability.md has the table.
 */

const AGENT_TEXT = 'internal detail the thread must never see';

describe.each(['1.0', '0.3'] as const)('polling faults at A2A %s', (version) => {
  const harnesses: Harness[] = [];
  afterEach(async () => {
    await Promise.all(harnesses.splice(0).map((h) => h.close()));
  });

  const send = version === '1.0' ? 'SendMessage' : 'message/send';
  const get = version === '1.0' ? 'GetTask' : 'tasks/get';

  async function run(options: Partial<HarnessOptions>, arrange: (h: Harness) => void) {
    const h = await startHarness({
      version,
      ...options,
      agent: { card: { streaming: false } },
      client: { timeouts: { callTotalMs: 500, bodyIdleMs: 300 } },
      settings: { polling: { intervalMs: 30, timeoutMs: 5_000 }, ...options.settings },
    });
    harnesses.push(h);
    h.agent.enqueueFor(send, answer({ chunks: ['slow ', 'answer'], chunkDelayMs: 300 }));
    arrange(h);
    const { turnId, sessionId } = await h.say('t1', '1', 'work');
    await h.surface.waitFor(
      () => h.events.some((e) => e.type === 'turn.settled' && e.turnId === turnId),
      12_000,
      'the turn to settle',
    );
    const settled = h.events.find((e) => e.type === 'turn.settled' && e.turnId === turnId);
    const outcome = settled?.type === 'turn.settled' ? settled.outcome : undefined;
    const shown = h.surface.messages.filter((m) => m.sessionId === sessionId).map((m) => m.text);
    for (const text of shown) expect(text).not.toContain(AGENT_TEXT);
    return {
      h,
      outcome,
      notices: h.surface.notices(sessionId),
      answer: h.surface.of(sessionId, 'answer')[0],
    };
  }

  it(`[P-7][E-1] GetTask answered 401: the turn fails without a retry and the thread is told (${version})`, async () => {
    const { h, outcome, notices } = await run({}, (h) => h.agent.enqueueFor(get, httpStatus(401)));
    expect(outcome).toBe('error:credentials_rejected');
    expect(notices).toEqual(['credentials-rejected']);
    expect(h.agent.rpc(get)).toHaveLength(1);
  });

  it(`[P-7][E-5] GetTask answered -32001: the session is gone and the thread is told (${version})`, async () => {
    const { outcome, notices } = await run({}, (h) => h.agent.enqueueFor(get, rpcError(-32001, AGENT_TEXT)));
    expect(outcome).toBe('error:task_not_found');
    expect(notices).toEqual(['session-gone']);
  });

  it(`[P-7] GetTask dropped, stalled, or answered 500 and -32603: retried until the task completes (${version})`, async () => {
    const {
      h,
      outcome,
      answer: shown,
    } = await run({}, (h) =>
      h.agent.enqueueFor(
        get,
        dropAfter(0),
        stall('json'),
        httpStatus(500, {}, AGENT_TEXT),
        rpcError(-32603, AGENT_TEXT),
      ),
    );
    expect(outcome).toBe('completed');
    expect(shown?.text).toBe('slow answer');
    expect(h.agent.rpc(get).length).toBeGreaterThan(4);
  });

  it(`[P-4] a task that never ends is cancelled at the polling timeout and the thread told (${version})`, async () => {
    const { h, outcome, notices } = await run(
      { settings: { polling: { intervalMs: 30, timeoutMs: 800 } } },
      (h) => {
        h.agent.clear();
        h.agent.enqueueFor(send, answer({ chunks: ['forever ', 'and ever'], chunkDelayMs: 60_000 }));
      },
    );
    expect(outcome).toBe('canceled');
    expect(notices).toEqual(['poll-timeout']);
    expect(h.agent.rpc(version === '1.0' ? 'CancelTask' : 'tasks/cancel')).toHaveLength(1);
  });

  it(`[P-4][P-7] a GetTask that keeps failing does not hold the turn past the polling timeout (${version})`, async () => {
    const { h, outcome, notices } = await run(
      { settings: { polling: { intervalMs: 30, timeoutMs: 800 } } },
      (h) => {
        h.agent.clear();
        h.agent.enqueueFor(send, answer({ chunks: ['long ', 'work'], chunkDelayMs: 60_000 }));
        h.agent.enqueueFor(get, ...Array.from({ length: 200 }, () => httpStatus(503, {}, AGENT_TEXT)));
      },
    );
    expect(outcome).toBe('canceled');
    expect(notices).toEqual(['poll-timeout']);
    expect(h.agent.rpc(version === '1.0' ? 'CancelTask' : 'tasks/cancel')).toHaveLength(1);
  });
});
