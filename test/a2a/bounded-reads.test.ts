import { afterEach, describe, expect, it } from 'vitest';
import { A2AClient } from '../../src/a2a/client.js';
import type { A2AClientOptions, Timeouts } from '../../src/a2a/options.js';
import {
  CardFetchError,
  LostConnectionError,
  type LostConnectionReason,
  OutcomeUnknownError,
  StreamIdleError,
} from '../../src/core/agent/errors.js';
import { failureOf } from '../helpers/stream.js';
import {
  type CardOptions,
  type ContractAgent,
  stall,
  startContractAgent,
  trickle,
} from '../peers/contract-agent/contract-agent.js';

/**
 * Defect: a body that trickles (headers, then one byte a second) or stalls was never timed out:
 * the card fetch, GetTask, CancelTask, ListTasks, an error body and a send answered with JSON
 * waited for ever. Every read now has an idle bound and a total bound of its own; these tests
 * run them against a real loopback agent that trickles.
 */

const FAST: Partial<Timeouts> = {
  headersMs: 2_000,
  streamIdleMs: 800,
  streamTotalMs: 1_500,
  bodyIdleMs: 300,
  cardTotalMs: 900,
  callTotalMs: 900,
};

/** How far past its bound a cut may land on a shared, busy machine. */
const SLACK_MS = 1_500;

function reasonOf(error: unknown): LostConnectionReason | undefined {
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 4; e = e.cause, depth++) {
    if (e instanceof LostConnectionError) return e.reason;
  }
  return undefined;
}

async function timed<T>(work: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const started = performance.now();
  const value = await work();
  return { value, ms: performance.now() - started };
}

describe.each(['1.0', '0.3'] as const)('every read from an agent is bounded (A2A %s)', (version) => {
  const agents: ContractAgent[] = [];
  afterEach(async () => {
    await Promise.all(agents.splice(0).map((a) => a.close()));
  });

  async function agent(card: CardOptions = {}): Promise<ContractAgent> {
    const a = await startContractAgent({ version, card });
    agents.push(a);
    return a;
  }

  function client(a: ContractAgent, timeouts: Partial<Timeouts> = FAST): A2AClient {
    const options: A2AClientOptions = {
      endpoint: a.endpoint,
      identity: { kind: 'bearer', token: 'tok-1' },
      timeouts,
    };
    return new A2AClient(options);
  }

  const get = version === '1.0' ? 'GetTask' : 'tasks/get';
  const cancel = version === '1.0' ? 'CancelTask' : 'tasks/cancel';

  it(`[DT-2] a card that trickles fails at its total bound, and the next call reads it afresh (${version})`, async () => {
    const a = await agent({ trickleMs: 100 });
    const c = client(a);
    // Two callers share the pending read; both are let go at its deadline, not for ever.
    const { value: errors, ms } = await timed(() =>
      Promise.all([c.card().catch((e: unknown) => e), c.card().catch((e: unknown) => e)]),
    );
    for (const error of errors) {
      expect(error).toBeInstanceOf(CardFetchError);
      expect(reasonOf(error)).toBe('call-timeout');
    }
    expect(ms).toBeLessThan(900 + SLACK_MS);
    expect(a.requests.filter((r) => r.httpMethod === 'GET')).toHaveLength(1);
    // The failed read is not cached: the agent recovers, the next call reads the card again.
    a.setCard({});
    expect((await c.card()).protocolVersion).toBe(version);
    expect(a.requests.filter((r) => r.httpMethod === 'GET')).toHaveLength(2);
  });

  it(`[DT-2] a card whose body stalls is cut at the idle bound (${version})`, async () => {
    const a = await agent({ trickleMs: 60_000 });
    const { value: error, ms } = await timed(() =>
      client(a)
        .card()
        .catch((e: unknown) => e),
    );
    expect(error).toBeInstanceOf(CardFetchError);
    expect(reasonOf(error)).toBe('body-timeout');
    expect(ms).toBeLessThan(300 + SLACK_MS);
  });

  for (const [method, call] of [
    [get, (c: A2AClient, id: string) => c.getTask(id)],
    [cancel, (c: A2AClient, id: string) => c.cancelTask(id)],
  ] as const) {
    it(`[M-2][M-4] ${method}: a trickled JSON body ends at the call's total bound, a stalled one at the idle bound (${version})`, async () => {
      const a = await agent();
      const c = client(a);
      await c.card();
      const task = a.seedTask({ state: 'working' });
      a.enqueue(trickle(100, 'json'));
      const trickled = await timed(() => call(c, task.id).catch((e: unknown) => e));
      expect(trickled.value).toBeInstanceOf(LostConnectionError);
      expect(reasonOf(trickled.value)).toBe('call-timeout');
      expect(trickled.ms).toBeLessThan(900 + SLACK_MS);

      a.enqueue(stall('json'));
      const stalled = await timed(() => call(c, task.id).catch((e: unknown) => e));
      expect(reasonOf(stalled.value)).toBe('body-timeout');
      expect(stalled.ms).toBeLessThan(300 + SLACK_MS);
    });
  }

  if (version === '1.0') {
    it('[M-5] ListTasks: a trickled page ends at the call bound (1.0)', async () => {
      const a = await agent();
      const c = client(a);
      a.enqueue(trickle(100, 'json'));
      const { value: error, ms } = await timed(() =>
        c.findTaskByMessageId('ctx-1', 'm-1').catch((e: unknown) => e),
      );
      expect(error).toBeInstanceOf(LostConnectionError);
      expect(reasonOf(error)).toBe('call-timeout');
      expect(ms).toBeLessThan(900 + SLACK_MS);
    });
  }

  it(`[E-7] a send answered with a JSON body that trickles is an unknown outcome, at the call bound (${version})`, async () => {
    const a = await agent();
    const c = client(a);
    await c.card();
    a.enqueue(trickle(100, 'json'));
    const { value, ms } = await timed(() =>
      failureOf(c.sendStreamingMessage({ messageId: 'm', text: 'hi' })),
    );
    expect(value.error).toBeInstanceOf(OutcomeUnknownError);
    expect(reasonOf(value.error)).toBe('call-timeout');
    expect(ms).toBeLessThan(900 + SLACK_MS);
  });

  it(`[E-7] an error body that trickles (HTTP 500, JSON) is read no longer than the idle bound (${version})`, async () => {
    const a = await agent();
    const c = client(a);
    const task = a.seedTask({ state: 'working' });
    await c.card();
    // The status says enough; a body that never completes says nothing more.
    a.enqueue(trickle(100, 'json', 500));
    const { value: error, ms } = await timed(() => c.getTask(task.id).catch((e: unknown) => e));
    expect(error).toMatchObject({ code: 'agent_unavailable', status: 500 });
    expect(ms).toBeLessThan(900 + SLACK_MS);
  });

  it(`[R-6] a stream that trickles bytes but never completes an event is cut at the event bound (${version})`, async () => {
    const a = await agent();
    const c = client(a);
    await c.card();
    a.enqueue(trickle(50, 'sse'));
    const { value, ms } = await timed(() =>
      failureOf(c.sendStreamingMessage({ messageId: 'm', text: 'hi' })),
    );
    // Bytes came, events did not: the event bound cuts it (the engine then looks the turn up).
    expect(value.error).toBeInstanceOf(StreamIdleError);
    expect(ms).toBeLessThan(1_500 + SLACK_MS);
  });

  it(`[R-6] a subscription that only trickles is cut, as a stream idle or at its total bound (${version})`, async () => {
    const a = await agent();
    const c = client(a, { ...FAST, streamIdleMs: 5_000, streamTotalMs: 700 });
    await c.card();
    const task = a.seedTask({ state: 'working' });
    a.enqueue(trickle(50, 'sse'));
    const { value, ms } = await timed(() => failureOf(c.subscribeToTask(task.id)));
    expect(value.error).toBeInstanceOf(LostConnectionError);
    expect(reasonOf(value.error)).toBe('call-timeout');
    expect(value.error).not.toBeInstanceOf(StreamIdleError);
    expect(ms).toBeLessThan(700 + SLACK_MS);
  });
});
