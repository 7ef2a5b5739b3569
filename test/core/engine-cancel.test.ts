import { afterEach, describe, expect, it } from 'vitest';
import { STOP_REASON } from '../../src/core/session/cancelling.js';
import { type Harness, startHarness } from '../helpers/engine-harness.js';
import { answer, httpStatus, rpcError } from '../peers/contract-agent/contract-agent.js';

/**
 * SessionEngine.cancel: a person's stop of the running task. CancelTask goes to the agent with
 * the contract's cancel rules (M-4: tried a few times, then reported as failed; M-2: a failed
 * cancel reads the task), the task's stream ends in `canceled` and the turn settles as such
 * (T-4), and nothing is sent when nothing runs.
 */

const SEND = 'SendStreamingMessage';
const CANCEL = 'CancelTask';
const GET = 'GetTask';
const WHO = { id: 'U123' };
const LONG = answer({ chunks: Array.from({ length: 40 }, (_, i) => `part ${i} `), chunkDelayMs: 100 });

describe('SessionEngine.cancel (a person stops the running task)', () => {
  const harnesses: Harness[] = [];
  afterEach(async () => {
    await Promise.all(harnesses.splice(0).map((h) => h.close()));
  });
  async function harness(): Promise<Harness> {
    const h = await startHarness({ version: '1.0' });
    harnesses.push(h);
    return h;
  }
  async function running(h: Harness, thread: string): Promise<{ sessionId: string; turnId: string }> {
    h.agent.enqueueFor(SEND, LONG);
    const received = await h.say(thread, '1.000001', 'a long job');
    await h.surface.waitFor(
      () => h.events.some((e) => e.type === 'turn.accepted'),
      5_000,
      'the task accepted',
    );
    return received;
  }

  it('[M-4][T-4] cancels the running task once; its stream ends canceled and the turn settles with a notice', async () => {
    const h = await harness();
    const { sessionId, turnId } = await running(h, 't1');
    const result = await h.engine.cancel(h.key('t1'), { actor: WHO, turnId });
    expect(result).toMatchObject({ status: 'canceled', sessionId, turnId });
    await h.engine.idle();
    expect(h.agent.rpc(CANCEL)).toHaveLength(1);
    expect(h.events.find((e) => e.type === 'turn.settled')).toMatchObject({ outcome: 'canceled' });
    expect(h.events.find((e) => e.type === 'task.cancel')).toMatchObject({ reason: STOP_REASON, ok: true });
    expect(h.surface.notices(sessionId)).toEqual(['task-canceled']);
  });

  it('sends nothing when nothing runs: no session, or its task has settled', async () => {
    const h = await harness();
    expect(await h.engine.cancel(h.key('none'), { actor: WHO })).toMatchObject({
      status: 'nothing-running',
    });
    await h.say('t2', '1.000001', 'quick');
    await h.engine.idle();
    expect(await h.engine.cancel(h.key('t2'), { actor: WHO })).toMatchObject({ status: 'nothing-running' });
    expect(h.agent.rpc(CANCEL)).toHaveLength(0);
  });

  it('a stop pressed on an earlier answer stops nothing of the task that runs now', async () => {
    const h = await harness();
    await h.say('t3', '1.000001', 'first');
    await h.engine.idle();
    const [first] = h.events.filter((e) => e.type === 'turn.settled');
    h.agent.enqueueFor(SEND, LONG);
    await h.say('t3', '1.000002', 'second');
    await h.surface.waitFor(
      () => h.events.filter((e) => e.type === 'turn.accepted').length === 2,
      5_000,
      'the second task accepted',
    );
    const result = await h.engine.cancel(h.key('t3'), {
      actor: WHO,
      turnId: first?.type === 'turn.settled' ? first.turnId : '',
    });
    expect(result.status).toBe('stale');
    expect(h.agent.rpc(CANCEL)).toHaveLength(0);
  });

  it('[M-4] a failing CancelTask is tried again, and goes through on a later try', async () => {
    const h = await harness();
    const { turnId } = await running(h, 't4');
    h.agent.enqueueFor(CANCEL, httpStatus(503), rpcError(-32603, 'internal'));
    const result = await h.engine.cancel(h.key('t4'), { actor: WHO, turnId });
    expect(result.status).toBe('canceled');
    expect(h.agent.rpc(CANCEL)).toHaveLength(3);
    await h.engine.idle();
    expect(h.events.find((e) => e.type === 'turn.settled')).toMatchObject({ outcome: 'canceled' });
  });

  it('[M-4][M-2] a cancel that keeps failing reads the task, is reported as failed, and the thread is told', async () => {
    const h = await harness();
    const { sessionId, turnId } = await running(h, 't5');
    h.agent.enqueueFor(CANCEL, httpStatus(503), httpStatus(503), httpStatus(503));
    const result = await h.engine.cancel(h.key('t5'), { actor: WHO, turnId });
    expect(result.status).toBe('failed');
    expect(h.agent.rpc(CANCEL)).toHaveLength(3);
    expect(h.agent.rpc(GET).length).toBeGreaterThanOrEqual(1);
    expect(h.events.find((e) => e.type === 'task.cancel')).toMatchObject({ reason: STOP_REASON, ok: false });
    expect(h.surface.notices(sessionId)).toContain('cancel-failed');
    await h.engine.idle();
    // The task was never cancelled: it ran to its end.
    expect(h.events.find((e) => e.type === 'turn.settled')).toMatchObject({ outcome: 'completed' });
  });

  it('[Q-2] a task paused on a question is cancelled too, and its question dropped', async () => {
    const h = await harness();
    h.agent.enqueueFor(SEND, answer({ chunks: ['hm'], state: 'input-required', statusText: 'Which one?' }));
    await h.say('t6', '1.000001', 'pick');
    await h.engine.idle();
    expect(await h.engine.cancel(h.key('t6'), { actor: WHO })).toMatchObject({
      status: 'canceled',
      wasPaused: true,
    });
    expect(h.agent.rpc(CANCEL)).toHaveLength(1);
  });
});
