import { getEventListeners } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { A2AClient } from '../../src/a2a/client.js';
import { OutcomeUnknownError } from '../../src/core/agent/errors.js';
import { answer, type ContractAgent, silentStream, startContractAgent } from '../agents/contract-agent.js';
import { answerText, collect, idsOf } from '../helpers/stream.js';

// A call's signal (the engine passes one per stream, and its driver's to every other call) is
// wired to the exchange by one listener of the client's own, not by a composite signal: these
// pin what that wiring must do — cut a stream mid-body, refuse to start once aborted — and that
// it leaves nothing behind on a signal that outlives many calls.

describe.each(['1.0', '0.3'] as const)("a call's abort signal (%s)", (version) => {
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

  it(`sends nothing for a signal aborted before the call, the card already read (${version})`, async () => {
    const { agent, client } = await setup();
    const controller = new AbortController();
    const reason = new Error('stopped before');
    controller.abort(reason);
    await expect(client.getTask('t-1', { signal: controller.signal })).rejects.toBe(reason);
    const stream = client.sendStreamingMessage(
      { messageId: 'm2', text: 'hi' },
      { signal: controller.signal },
    );
    await expect(stream.next()).rejects.toBe(reason);
    expect(agent.rpc(version === '1.0' ? 'GetTask' : 'tasks/get')).toHaveLength(0);
    expect(agent.rpc(version === '1.0' ? 'SendStreamingMessage' : 'message/stream')).toHaveLength(0);
  });

  it(`leaves no listener on a signal shared by many finished calls (${version})`, async () => {
    const { client } = await setup();
    // As a session's driver does: one signal for every call it makes, streams and reads alike.
    const controller = new AbortController();
    const { signal } = controller;
    for (let turn = 0; turn < 5; turn++) {
      const events = await collect(
        client.sendStreamingMessage({ messageId: `m-${turn}`, text: 'hi' }, { signal }),
      );
      expect(answerText(events)).not.toBe('');
      const task = await client.getTask(idsOf(events).taskId, { signal });
      expect(task.id).toBe(idsOf(events).taskId);
      expect(getEventListeners(signal, 'abort')).toHaveLength(0);
    }
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
