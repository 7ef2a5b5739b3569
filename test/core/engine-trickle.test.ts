import { afterEach, describe, expect, it } from 'vitest';
import { type Harness, type HarnessOptions, startHarness } from '../helpers/engine-harness.js';
import { answer, dropAfter, trickle } from '../peers/contract-agent/contract-agent.js';

/**
 * Defect: an agent that sends headers and then one byte a second hung the turn for ever, so the
 * 15-minute give-up (here 1.5 s) never fired. With every read bounded, each call ends, the
 * engine's own rules run, and the thread hears what happened.
 */
describe.each(['1.0', '0.3'] as const)('a trickling agent cannot hold a turn (A2A %s)', (version) => {
  const harnesses: Harness[] = [];
  afterEach(async () => {
    await Promise.all(harnesses.splice(0).map((h) => h.close()));
  });

  async function harness(options: Partial<HarnessOptions> = {}): Promise<Harness> {
    const h = await startHarness({
      version,
      client: { timeouts: { bodyIdleMs: 200, callTotalMs: 300, cardTotalMs: 300 } },
      ...options,
    });
    harnesses.push(h);
    return h;
  }

  const send = version === '1.0' ? 'SendStreamingMessage' : 'message/stream';
  const get = version === '1.0' ? 'GetTask' : 'tasks/get';

  it(`[R-1][E-7] a send whose JSON answer trickles for ever fails the turn at the give-up, with a notice (${version})`, async () => {
    const h = await harness();
    await h.client.card();
    for (let i = 0; i < 50; i++) h.agent.enqueueFor(send, trickle(50, 'json'));
    const { sessionId, turnId } = await h.say('t1', '100.1', 'hello');
    await h.surface.waitFor(
      () => h.events.some((e) => e.type === 'turn.settled' && e.turnId === turnId),
      10_000,
      'the turn to fail',
    );
    expect(h.surface.notices(sessionId)).toEqual(['agent-unreachable']);
    const settled = h.events.find((e) => e.type === 'turn.settled' && e.turnId === turnId);
    expect(settled).toMatchObject({ outcome: expect.stringMatching(/^error:/) });
  });

  it(`[M-2] GetTask answers that trickle are retried, and the turn settles once the agent answers (${version})`, async () => {
    const h = await harness();
    await h.client.card();
    // The stream drops after the task is named; the reads that follow trickle twice, then work.
    h.agent.enqueueFor(send, dropAfter(2));
    h.agent.enqueueFor(get, trickle(50, 'json'), trickle(50, 'json'), answer());
    const { sessionId, turnId } = await h.say('t1', '100.1', 'hello');
    await h.surface.waitFor(
      () => h.events.some((e) => e.type === 'turn.settled' && e.turnId === turnId),
      10_000,
      'the turn to settle',
    );
    expect(h.agent.rpc(get).length).toBeGreaterThanOrEqual(3);
    expect(h.surface.notices(sessionId)).not.toContain('agent-unreachable');
  });
});
