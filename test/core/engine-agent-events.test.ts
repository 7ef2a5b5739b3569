import { afterEach, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from '../helpers/engine-harness.js';
import type { Step } from '../peers/contract-agent/behaviours.js';
import { rpcError, script } from '../peers/contract-agent/contract-agent.js';

/**
 * `agent.event` is one engine event per event of an agent's stream, thousands for a long
 * answer: the engine builds it only for a sink that asks (EventSink.agentEvents), and a turn
 * read without them is read and shown the same.
 */
describe.each(['1.0', '0.3'] as const)('agent.event only for a sink that asks (A2A %s)', (version) => {
  const harnesses: Harness[] = [];
  afterEach(async () => {
    await Promise.all(harnesses.splice(0).map((h) => h.close()));
  });

  const send = version === '1.0' ? 'SendStreamingMessage' : 'message/stream';
  const events: Step[] = [
    { event: 'task' },
    { event: 'working' },
    { event: 'chunk', text: 'one', append: true },
    { event: 'chunk', text: ' two', append: true },
    { event: 'chunk', text: ' three', append: true },
    { event: 'completed' },
  ];

  async function turn(agentEvents: boolean): Promise<{ h: Harness; turnId: string; sessionId: string }> {
    const h = await startHarness({ version, agentEvents });
    harnesses.push(h);
    h.agent.enqueueFor(send, script(events));
    const { turnId, sessionId } = await h.say('t1', '1', 'go');
    await h.surface.waitFor(
      () => h.events.some((e) => e.type === 'turn.settled' && e.turnId === turnId),
      8_000,
      'the turn to settle',
    );
    return { h, turnId, sessionId };
  }

  it(`[R-4] a sink that does not ask gets none, and the answer is shown whole (${version})`, async () => {
    const { h, sessionId } = await turn(false);
    expect(h.events.filter((e) => e.type === 'agent.event')).toEqual([]);
    expect(h.events.filter((e) => e.type === 'turn.accepted')).toHaveLength(1);
    expect(h.surface.of(sessionId, 'answer').map((m) => m.text)).toEqual(['one two three']);
  });

  it(`a sink that asks gets one per event of the stream, in order, with the turn's ids (${version})`, async () => {
    const { h, turnId, sessionId } = await turn(true);
    const seen = h.events.filter((e) => e.type === 'agent.event');
    expect(seen.map((e) => (e.type === 'agent.event' ? e.kind : ''))).toEqual([
      'task',
      'status-update',
      'artifact-update',
      'artifact-update',
      'artifact-update',
      'status-update',
    ]);
    for (const e of seen) expect(e).toMatchObject({ turnId, sessionId, at: expect.any(Number) });
  });

  it(`[M-4] each event carries the time it arrived, so a task is quiet from its last event on (${version})`, async () => {
    const h = await startHarness({ version, timings: { noSignOfLifeMs: 600 } });
    harnesses.push(h);
    const subscribe = version === '1.0' ? 'SubscribeToTask' : 'tasks/resubscribe';
    // A chunk 400 ms after the working status, then the stream is lost and cannot be resumed.
    h.agent.enqueueFor(
      send,
      script(
        [{ event: 'task' }, { event: 'working' }, { waitMs: 400 }, { event: 'chunk', text: 'late' }],
        'destroy',
      ),
    );
    for (let i = 0; i < 20; i++) h.agent.enqueueFor(subscribe, rpcError(-32601, 'no'));
    const { turnId } = await h.say('t1', '1', 'go');
    await h.surface.waitFor(
      () => h.events.some((e) => e.type === 'turn.settled' && e.turnId === turnId),
      8_000,
      'the turn to settle',
    );
    const at = (kind: string): number =>
      h.events.find((e) => e.type === 'agent.event' && e.kind === kind && e.turnId === turnId)?.at ??
      Number.NaN;
    const chunkAt = at('artifact-update');
    expect(chunkAt - at('status-update')).toBeGreaterThanOrEqual(250);
    // No sign of life is counted from that chunk, not from the stream's first events.
    const cancel = h.events.find((e) => e.type === 'task.cancel' && e.reason === 'no-sign-of-life');
    expect((cancel?.at ?? Number.NaN) - chunkAt).toBeGreaterThanOrEqual(600);
  });
});
