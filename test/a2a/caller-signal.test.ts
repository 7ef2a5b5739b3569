import { getEventListeners } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { A2AClient } from '../../src/a2a/client.js';
import { LostConnectionError, OutcomeUnknownError } from '../../src/core/agent/errors.js';
import type { StreamEvent } from '../../src/core/agent/model.js';
import { answerText, collect } from '../helpers/stream.js';
import {
  answer,
  type ContractAgent,
  script,
  silentStream,
  stall,
  startContractAgent,
} from '../peers/contract-agent/contract-agent.js';

// A call's signal (CallOptions.signal) is the caller's way to stop it: the driver's stop, the
// engine's, a follow cut once the turn settled. The client wires it to the HTTP exchange with a
// listener that the exchange's end removes (src/a2a/http.ts), not with a composite signal per
// call. Pinned here: an abort mid-stream or mid-body ends the call at once with the caller's own
// reason behind the lost connection it makes (the driver reads its own signal, not the error),
// an aborted signal sends nothing, a stream cut before its first event is an outcome unknown
// (DT-6/E-7), a call still waiting for the card stops waiting, and a finished call leaves no
// listener behind on a signal that outlives it (a driver's signal serves every call of its session).

class Stopped extends Error {
  override readonly name = 'Stopped';
}

const listeners = (signal: AbortSignal): number => getEventListeners(signal, 'abort').length;

/** What a call cut by its caller fails with: the connection lost, caused by the caller's reason. */
async function cutBy(work: Promise<unknown>, reason: Error): Promise<void> {
  const error = await work.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(LostConnectionError);
  expect((error as LostConnectionError).reason).toBe('connection-dropped');
  expect((error as Error).cause).toBe(reason);
}

describe.each(['1.0', '0.3'] as const)("a call's signal (A2A %s)", (version) => {
  const agents: ContractAgent[] = [];
  afterEach(async () => {
    await Promise.all(agents.splice(0).map((a) => a.close()));
  });

  async function setup(): Promise<{ agent: ContractAgent; client: A2AClient }> {
    const agent = await startContractAgent({ version });
    agents.push(agent);
    const client = new A2AClient({ endpoint: agent.endpoint, identity: { kind: 'bearer', token: 'tok-1' } });
    await client.card();
    return { agent, client };
  }

  it(`an abort mid-stream ends the stream at once, and no listener is left (${version})`, async () => {
    const { agent, client } = await setup();
    agent.enqueue(script([{ event: 'task' }, { event: 'working' }], 'hang'));
    const controller = new AbortController();
    const stream = client.sendStreamingMessage(
      { messageId: 'm1', text: 'hi' },
      { signal: controller.signal },
    );
    const events: StreamEvent[] = [];
    const first = await stream.next();
    if (first.done !== true) events.push(first.value);
    expect(listeners(controller.signal)).toBeGreaterThan(0);
    const reason = new Stopped('the driver stopped');
    const pending = (async () => {
      for (;;) {
        const step = await stream.next();
        if (step.done === true) return;
        events.push(step.value);
      }
    })();
    setTimeout(() => controller.abort(reason), 50);
    const started = performance.now();
    await cutBy(pending, reason);
    // The agent hangs for ever: only the abort can have ended the read.
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(events.map((e) => e.kind)).toEqual(['task', 'status-update']);
    expect(listeners(controller.signal)).toBe(0);
    expect(await stream.next()).toEqual({ done: true, value: undefined });
  });

  it(`a stream that ends, or is left early, removes its listener from a signal that outlives it (${version})`, async () => {
    const { agent, client } = await setup();
    const controller = new AbortController();
    agent.enqueue(answer({ chunks: ['a', 'b'] }));
    await collect(
      client.sendStreamingMessage({ messageId: 'm1', text: 'hi' }, { signal: controller.signal }),
    );
    expect(listeners(controller.signal)).toBe(0);
    agent.enqueue(answer({ chunks: ['a', 'b', 'c'] }));
    for await (const _ of client.sendStreamingMessage(
      { messageId: 'm2', text: 'hi' },
      { signal: controller.signal },
    ))
      break;
    expect(listeners(controller.signal)).toBe(0);
    // The signal is still the caller's: aborting it now touches no finished call.
    controller.abort(new Stopped('later'));
  });

  it(`[M-2] GetTask: an abort while the body stalls ends the call at once; a finished call leaves no listener (${version})`, async () => {
    const { agent, client } = await setup();
    const task = agent.seedTask();
    const controller = new AbortController();
    await client.getTask(task.id, { signal: controller.signal });
    expect(listeners(controller.signal)).toBe(0);
    agent.enqueue(stall('json'));
    const reason = new Stopped('stop');
    setTimeout(() => controller.abort(reason), 50);
    await cutBy(client.getTask(task.id, { signal: controller.signal }), reason);
    expect(listeners(controller.signal)).toBe(0);
  });

  it(`a signal aborted before the call sends nothing and rejects with its reason (${version})`, async () => {
    const { agent, client } = await setup();
    const sendMethod = version === '1.0' ? 'SendStreamingMessage' : 'message/stream';
    const reason = new Stopped('already');
    const signal = AbortSignal.abort(reason);
    await expect(
      collect(client.sendStreamingMessage({ messageId: 'm1', text: 'hi' }, { signal })),
    ).rejects.toBe(reason);
    await expect(client.getTask('t-1', { signal })).rejects.toBe(reason);
    expect(agent.rpc(sendMethod)).toHaveLength(0);
  });
  it(`cuts a stream that is waiting for its first event: its outcome is unknown (${version})`, async () => {
    const { agent, client } = await setup();
    agent.enqueue(silentStream());
    const controller = new AbortController();
    const stream = client.sendStreamingMessage(
      { messageId: 'm1', text: 'hi' },
      { signal: controller.signal },
    );
    const next = stream.next();
    // The request has reached the agent, whose stream says nothing.
    await expect
      .poll(() => agent.rpc(version === '1.0' ? 'SendStreamingMessage' : 'message/stream'))
      .toHaveLength(1);
    controller.abort(new Error('engine stopping'));
    // DT-6/E-7: a send cut before any event may or may not have reached the agent.
    await expect(next).rejects.toBeInstanceOf(OutcomeUnknownError);
    await expect(next).rejects.toMatchObject({ code: 'outcome_unknown' });
    expect(await stream.next()).toEqual({ done: true, value: undefined });
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
  });
});

describe("a call's abort signal while the card is still being read", () => {
  const agents: ContractAgent[] = [];
  afterEach(async () => {
    await Promise.all(agents.splice(0).map((a) => a.close()));
  });

  it('stops waiting for the card, and leaves no listener once the card came', async () => {
    const agent = await startContractAgent({ version: '1.0' });
    agents.push(agent);
    agent.enqueue(answer({ chunks: ['a', 'b'] }));
    const client = new A2AClient({ endpoint: agent.endpoint, identity: { kind: 'bearer', token: 'tok-1' } });
    const controller = new AbortController();
    // No card read yet: the call waits for the card under the signal, then streams.
    const events = await collect(
      client.sendStreamingMessage({ messageId: 'm1', text: 'hi' }, { signal: controller.signal }),
    );
    expect(answerText(events)).toBe('ab');
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    const stopped = new AbortController();
    const reason = new Error('stopped');
    stopped.abort(reason);
    await expect(client.getTask('t-1', { signal: stopped.signal })).rejects.toBe(reason);
  });
});
