import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { A2AClient } from '../../src/a2a/client.js';
import type { CallReport } from '../../src/a2a/telemetry.js';
import { MalformedResponseError } from '../../src/core/agent/errors.js';
import type { StreamEvent } from '../../src/core/agent/model.js';
import type { ReadyEvents } from '../../src/core/ports.js';
import { quietWindow } from '../helpers/quiet-window.js';
import { answerText, collect } from '../helpers/stream.js';
import {
  answer,
  type ContractAgent,
  invalidEvent,
  script,
  startContractAgent,
} from '../peers/contract-agent/contract-agent.js';

// The streaming call is an iterator written by hand (src/a2a/streaming.ts), not an async
// generator. What a generator gave for free is pinned here: laziness, calls made while one is
// in flight served in order, `break` ending the call as a success, an error ending it, and
// `done` for ever after — each with the one call report the client's metrics read — and what it
// adds: takeReady(), the events of the last read handed over without a promise.

describe.each(['1.0', '0.3'] as const)('a streaming call as an async iterator (%s)', (version) => {
  const agents: ContractAgent[] = [];
  afterEach(async () => {
    await Promise.all(agents.splice(0).map((a) => a.close()));
  });

  async function setup(): Promise<{ agent: ContractAgent; client: A2AClient; calls: CallReport[] }> {
    const agent = await startContractAgent({ version });
    agents.push(agent);
    const calls: CallReport[] = [];
    const client = new A2AClient(
      { endpoint: agent.endpoint, identity: { kind: 'bearer', token: 'tok-1' } },
      { onCall: (call) => calls.push(call) },
    );
    await client.card();
    return { agent, client, calls };
  }

  const sendMethod = version === '1.0' ? 'SendStreamingMessage' : 'message/stream';
  const streamCalls = (calls: CallReport[]) => calls.filter((c) => c.operation === 'SendStreamingMessage');

  it(`sends nothing before the first next(), and nothing at all when returned first (${version})`, async () => {
    const { agent, client, calls } = await setup();
    const stream = client.sendStreamingMessage({ messageId: 'm', text: 'hi' });
    await quietWindow(
      50,
      'a send begun when the stream was made would reach the agent on loopback within this',
    );
    expect(agent.rpc(sendMethod)).toHaveLength(0);
    expect(await stream.return(undefined)).toEqual({ done: true, value: undefined });
    expect(await stream.next()).toEqual({ done: true, value: undefined });
    expect(agent.rpc(sendMethod)).toHaveLength(0);
    expect(streamCalls(calls)).toHaveLength(0);
  });

  it(`serves next() calls made all at once in order, each event once, then done (${version})`, async () => {
    const { agent, client, calls } = await setup();
    agent.enqueue(answer({ chunks: ['a', 'b', 'c'] }));
    const all = await collect(client.sendStreamingMessage({ messageId: 'm1', text: 'hi' }));
    agent.enqueue(answer({ chunks: ['a', 'b', 'c'] }));
    const stream = client.sendStreamingMessage({ messageId: 'm2', text: 'hi' });
    // Not awaited one by one: a generator queues these; so must the iterator.
    const steps = await Promise.all(Array.from({ length: all.length + 2 }, () => stream.next()));
    const events = steps.filter((s) => s.done !== true).map((s) => s.value as StreamEvent);
    expect(events).toHaveLength(all.length);
    expect(answerText(events)).toBe('abc');
    expect(steps.slice(all.length).every((s) => s.done === true)).toBe(true);
    expect(agent.rpc(sendMethod)).toHaveLength(2);
    expect(streamCalls(calls).map((c) => [c.outcome, c.eventsSeen])).toEqual([
      ['ok', all.length],
      ['ok', all.length],
    ]);
  });

  it(`ends the call as a success when the consumer breaks off, reported once (${version})`, async () => {
    const { agent, client, calls } = await setup();
    agent.enqueue(answer({ chunks: ['a', 'b', 'c', 'd'], chunkDelayMs: 20 }));
    const stream = client.sendStreamingMessage({ messageId: 'm', text: 'hi' });
    let seen = 0;
    for await (const _event of stream) {
      seen++;
      if (seen === 2) break;
    }
    expect(await stream.next()).toEqual({ done: true, value: undefined });
    expect(await stream.return(undefined)).toEqual({ done: true, value: undefined });
    expect(streamCalls(calls)).toEqual([expect.objectContaining({ outcome: 'ok', eventsSeen: 2 })]);
  });

  it(`hands over the events before a malformed one, then its typed error, then done (${version})`, async () => {
    const { agent, client, calls } = await setup();
    agent.enqueue(invalidEvent(2));
    const stream = client.sendStreamingMessage({ messageId: 'm', text: 'hi' });
    expect((await stream.next()).done).toBe(false);
    expect((await stream.next()).done).toBe(false);
    const error = await stream.next().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(MalformedResponseError);
    expect((error as MalformedResponseError).code).toBe('malformed_response');
    expect(await stream.next()).toEqual({ done: true, value: undefined });
    expect(streamCalls(calls)).toEqual([
      expect.objectContaining({ outcome: 'malformed_response', eventsSeen: 2 }),
    ]);
  });

  // The engine reads events the stream already holds with takeReady() (no promise per event) and
  // awaits next() only when it returns nothing: the two together must give what next() alone does.
  /** Reads a stream as the engine does: held events first, next() when none is held. */
  async function readMixed(
    stream: AsyncGenerator<StreamEvent> & ReadyEvents,
    onEvent?: (seen: number) => Promise<void>,
  ) {
    const events: StreamEvent[] = [];
    let held = 0;
    for (;;) {
      let event = stream.takeReady();
      if (event !== undefined) held++;
      else {
        const step = await stream.next();
        if (step.done === true) return { events, held };
        event = step.value;
      }
      events.push(event);
      await onEvent?.(events.length);
    }
  }

  it(`hands over held events without a promise, in next()'s order, and none before a read (${version})`, async () => {
    const { agent, client, calls } = await setup();
    const chunks = Array.from({ length: 40 }, (_, i) => `c${i} `);
    agent.enqueue(answer({ chunks }));
    const byNext = await collect(client.sendStreamingMessage({ messageId: 'm1', text: 'hi' }));
    agent.enqueue(answer({ chunks }));
    const stream = client.sendStreamingMessage({
      messageId: 'm2',
      text: 'hi',
    }) as AsyncGenerator<StreamEvent> & ReadyEvents;
    // Nothing is held before the request is sent: the first event must be awaited.
    expect(stream.takeReady()).toBeUndefined();
    expect(agent.rpc(sendMethod)).toHaveLength(1);
    const { events, held } = await readMixed(stream);
    expect(events.map((e) => e.kind)).toEqual(byNext.map((e) => e.kind));
    expect(answerText(events)).toBe(chunks.join(''));
    // 40 events written back to back arrive in a few reads: most of them were held.
    expect(held).toBeGreaterThan(0);
    expect(stream.takeReady()).toBeUndefined();
    expect(streamCalls(calls).map((c) => [c.outcome, c.eventsSeen])).toEqual([
      ['ok', byNext.length],
      ['ok', byNext.length],
    ]);
  });

  it(`[R-6] time spent on held events does not count against the agent's idle bound (${version})`, async () => {
    const agent = await startContractAgent({ version });
    agents.push(agent);
    const client = new A2AClient({
      endpoint: agent.endpoint,
      identity: { kind: 'bearer', token: 'tok-1' },
      timeouts: { streamIdleMs: 150 },
    });
    await client.card();
    // Five events at once, then 250 ms of quiet (more than the bound, less than the reader's
    // time on the five), then the rest.
    const first = Array.from({ length: 5 }, (_, i) => ({
      event: 'chunk' as const,
      text: `${i};`,
      append: i > 0,
    }));
    agent.enqueue(
      script([
        ...first,
        { waitMs: 250 },
        { event: 'chunk', text: 'end', append: true },
        { event: 'completed' },
      ]),
    );
    const stream = client.sendStreamingMessage({
      messageId: 'm',
      text: 'hi',
    }) as AsyncGenerator<StreamEvent> & ReadyEvents;
    // The reader is slow on each of the first five events: 80 ms, 400 in all, past the bound.
    const { events, held } = await readMixed(stream, async (seen) => {
      if (seen <= 5) await new Promise((resolve) => setTimeout(resolve, 80));
    });
    expect(held).toBeGreaterThan(0);
    expect(answerText(events)).toBe('0;1;2;3;4;end');
  });

  it(`a held event that does not decode throws its typed error, and the call ends with it (${version})`, async () => {
    const { agent, client, calls } = await setup();
    agent.enqueue(invalidEvent(2));
    const stream = client.sendStreamingMessage({
      messageId: 'm',
      text: 'hi',
    }) as AsyncGenerator<StreamEvent> & ReadyEvents;
    const error = await readMixed(stream).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(MalformedResponseError);
    expect(stream.takeReady()).toBeUndefined();
    expect(await stream.next()).toEqual({ done: true, value: undefined });
    expect(streamCalls(calls)).toEqual([
      expect.objectContaining({ outcome: 'malformed_response', eventsSeen: 2 }),
    ]);
  });
});

// Written by hand rather than with the contract agent: the test needs the server's count of
// TCP connections, and an answer whose end comes a moment after its last event.
describe('a streaming call the consumer leaves early', () => {
  it('drains the rest of a short stream, so the next call reuses the connection', async () => {
    const afterTurn = await turnsOnOneServer(['a', 'b', 'c'], 1);
    // The first turn may open a second connection beside the card's; the later ones open none.
    expect(afterTurn[2]).toBe(afterTurn[0]);
  });

  it('drains the end of a long answer too: the bound is on what is left, not on the whole body', async () => {
    // 300 events of about 500 bytes: the consumer has read some 150 KiB when it stops at the
    // last one, and only the stream's end is left to drain.
    const texts = Array.from({ length: 300 }, (_, i) => `${i} `.padEnd(400, 'x'));
    const afterTurn = await turnsOnOneServer(texts, texts.length);
    expect(afterTurn[2]).toBe(afterTurn[0]);
  });
});

/**
 * Three turns against one server whose streams send `texts` as artifact events and end 30 ms
 * later; the consumer stops after `readEvents` events. Returns the server's count of TCP
 * connections after each turn.
 */
async function turnsOnOneServer(texts: string[], readEvents: number): Promise<number[]> {
  let endpoint = '';
  let connections = 0;
  const server = createServer((req, res) => {
    if (req.method === 'GET') {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify(drainCard(endpoint)));
      return;
    }
    let body = '';
    req.on('data', (c: Buffer) => {
      body += c.toString();
    });
    req.on('end', () => {
      const id = (JSON.parse(body) as { id: string }).id;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      for (const text of texts) {
        const result = {
          artifactUpdate: { taskId: 't', contextId: 'c', artifact: { artifactId: 'x', parts: [{ text }] } },
        };
        res.write(`data: ${JSON.stringify({ jsonrpc: '2.0', id, result })}\n\n`);
      }
      // The agent closes its stream a moment after the event the consumer stops at.
      setTimeout(() => res.end(), 30);
    });
  });
  server.on('connection', () => {
    connections++;
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}/a2a`;
  try {
    const client = new A2AClient({ endpoint, identity: { kind: 'user-id', userId: 'u' } });
    const afterTurn: number[] = [];
    for (let turn = 0; turn < 3; turn++) {
      let read = 0;
      for await (const _event of client.sendStreamingMessage({ messageId: `m${turn}`, text: 'hi' }))
        if (++read === readEvents) break;
      // The drain runs after the consumer has left; give it the agent's 30 ms and a little.
      await new Promise((resolve) => setTimeout(resolve, 80));
      afterTurn.push(connections);
    }
    return afterTurn;
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
}

function drainCard(url: string): Record<string, unknown> {
  return {
    name: 'drain',
    description: 'drain',
    version: '1.0.0',
    supportedInterfaces: [{ url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
    capabilities: { streaming: true },
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [{ id: 's', name: 's', description: 's', tags: [] }],
  };
}
