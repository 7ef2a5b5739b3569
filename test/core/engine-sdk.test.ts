import { afterEach, describe, expect, it } from 'vitest';
import { A2AClient } from '../../src/a2a/client.js';
import { STOP_REASON } from '../../src/core/session/cancelling.js';
import { APPROVER, BINDING, type Harness, startHarness } from '../helpers/engine-harness.js';
import { type SdkAgent, startSdkAgent } from '../peers/js-sdk-agent.js';

// The engine against the official JS SDK server: its answer streams open with a snapshot of the
// task still paused on the question answered, which must not read as a second question.
describe('session engine against the @a2a-js/sdk 1.3.0 server', () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0)) await c();
  });

  async function setup(): Promise<{ h: Harness; sdk: SdkAgent }> {
    const h = await startHarness({ version: '1.0' });
    const sdk = await startSdkAgent({ legacyCompat: false });
    cleanups.push(
      () => h.close(),
      () => sdk.close(),
    );
    const route = h.registry.routes.get(BINDING);
    if (route === undefined) throw new Error('no route');
    h.registry.routes.set(BINDING, {
      ...route,
      client: new A2AClient({ endpoint: sdk.endpoint, identity: { kind: 'user-id', userId: 'U1' } }),
    });
    return { h, sdk };
  }

  it('[Q-1][Q-2] asks, takes the reply, and finishes without a false notice', async () => {
    const { h } = await setup();
    const first = await h.say('t1', '1', 'ask');
    await h.surface.waitFor(
      () => h.surface.of(first.sessionId, 'question').length === 1,
      5_000,
      'the question',
    );
    expect(h.surface.of(first.sessionId, 'question')[0]?.text).toBe('What is your name?');
    const reply = await h.say('t1', '2', 'Ada');
    await h.surface.waitFor(
      () => h.events.some((e) => e.type === 'turn.settled' && e.turnId === reply.turnId),
      5_000,
      'the answer',
    );
    await h.engine.idle();
    // The answer's message shows what the agent added after the reply, not the question turn again.
    expect(h.surface.of(first.sessionId, 'answer').map((a) => a.text)).toEqual([
      'I need to know who you are.',
      'hello Ada',
    ]);
    expect(h.surface.notices(first.sessionId)).toEqual([]);
    expect(h.events.some((e) => e.type === 'task.cancel')).toBe(false);
  });

  it('[M-1] streams an answer and settles at once after the terminal status', async () => {
    const { h } = await setup();
    const { turnId, sessionId } = await h.say('t1', '1', 'hello');
    await h.surface.waitFor(
      () => h.events.some((e) => e.type === 'turn.settled' && e.turnId === turnId),
      5_000,
      'the turn',
    );
    expect(h.surface.of(sessionId, 'answer')[0]?.text).toBe('chunk 0 chunk 1 chunk 2 ');
    expect(h.surface.notices(sessionId)).toEqual([]);
  });

  it("[M-4][T-4] a person's stop cancels the running task: CancelTask reaches the agent, the turn settles canceled, the thread is told", async () => {
    const { h, sdk } = await setup();
    const { turnId, sessionId } = await h.say('t1', '1', 'slow');
    // "slow" streams its first chunk, then waits for a cancel (or 3 s) before it completes.
    await h.surface.waitFor(
      () => h.surface.of(sessionId, 'answer')[0]?.text === 'chunk 0 ',
      5_000,
      'the first chunk',
    );
    const result = await h.engine.cancel(h.key('t1'), { actor: APPROVER });
    expect(result).toMatchObject({ status: 'canceled', sessionId });
    await h.surface.waitFor(
      () => h.events.some((e) => e.type === 'turn.settled' && e.turnId === turnId),
      5_000,
      'the turn settled',
    );
    const settled = h.events.find((e) => e.type === 'turn.settled' && e.turnId === turnId);
    expect(settled).toMatchObject({ outcome: 'canceled' });
    expect(sdk.requests.filter((r) => r.method === 'CancelTask')).toHaveLength(1);
    expect(h.events.find((e) => e.type === 'task.cancel')).toMatchObject({
      ok: true,
      reason: STOP_REASON,
    });
    // What streamed before the stop stays, complete; the thread says the task was canceled.
    expect(h.surface.of(sessionId, 'answer').map((a) => a.text)).toEqual(['chunk 0 ']);
    expect(h.surface.notices(sessionId)).toEqual(['task-canceled']);
    // The session is free: the next message is a new turn, answered.
    const next = await h.say('t1', '2', 'hello');
    await h.surface.waitFor(
      () => h.events.some((e) => e.type === 'turn.settled' && e.turnId === next.turnId),
      5_000,
      'the next turn',
    );
  });

  it('a stop with nothing running does nothing: no call to the agent, no notice', async () => {
    const { h, sdk } = await setup();
    expect(await h.engine.cancel(h.key('t-none'), { actor: APPROVER })).toMatchObject({
      status: 'nothing-running',
    });
    const { turnId, sessionId } = await h.say('t1', '1', 'hello');
    await h.surface.waitFor(
      () => h.events.some((e) => e.type === 'turn.settled' && e.turnId === turnId),
      5_000,
      'the turn',
    );
    await h.engine.idle();
    expect(await h.engine.cancel(h.key('t1'), { actor: APPROVER })).toEqual({
      status: 'nothing-running',
      sessionId,
    });
    expect(sdk.requests.filter((r) => r.method === 'CancelTask')).toEqual([]);
    expect(h.surface.notices(sessionId)).toEqual([]);
  });

  it('[M-4][Q-2] a stop while the agent waits on a question cancels the paused task and drops the question', async () => {
    const { h, sdk } = await setup();
    const first = await h.say('t1', '1', 'ask');
    await h.surface.waitFor(
      () => h.surface.of(first.sessionId, 'question').length === 1,
      5_000,
      'the question',
    );
    await h.engine.idle();
    expect(await h.engine.cancel(h.key('t1'), { actor: APPROVER })).toMatchObject({ status: 'canceled' });
    expect(sdk.requests.filter((r) => r.method === 'CancelTask')).toHaveLength(1);
    const session = await h.store.getSession(first.sessionId);
    expect(session?.question).toBeNull();
    expect(session?.task).toBeNull();
    expect(h.surface.notices(first.sessionId)).toEqual(['task-canceled']);
    // A reply now is a new turn (a new task), not an answer to the dropped question.
    const next = await h.say('t1', '2', 'hello');
    await h.surface.waitFor(
      () => h.events.some((e) => e.type === 'turn.settled' && e.turnId === next.turnId),
      5_000,
      'the next turn',
    );
    expect(h.surface.of(first.sessionId, 'answer').at(-1)?.text).toBe('chunk 0 chunk 1 chunk 2 ');
  });
});
