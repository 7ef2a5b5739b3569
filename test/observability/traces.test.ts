import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { A2AClient } from '../../src/a2a/client.js';
import { InvalidConfigError } from '../../src/core/errors.js';
import type { Inbound } from '../../src/core/session/engine.js';
import { SessionEngine } from '../../src/core/session/engine.js';
import type { SessionStore } from '../../src/core/store.js';
import { a2aDialect } from '../../src/dialects/a2a.js';
import { startTracing, type Tracing, tracingConfig } from '../../src/observability/tracing.js';
import { OtelTurnTracer } from '../../src/observability/turn-tracer.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { FAST_TIMINGS, MapRegistry } from '../helpers/engine-harness.js';
import { FakeSurface } from '../helpers/fake-surface.js';
import { type ContractAgent, script, startContractAgent } from '../peers/contract-agent/contract-agent.js';
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from './otlp-receiver.js';

/**
 * Traces of scripted turns, exported by the SDK the OTEL_* variables configure to a test OTLP
 * receiver on loopback: the turn's span is the root, each agent call a CLIENT child whose context
 * the agent receives as traceparent, and a turn taken over after a restart gets a new span linked
 * (not parented) to the first one.
 */

const BINDING = 'team-a/support';
const SERVER = 2;
const CLIENT = 3;

interface Rig {
  agent: ContractAgent;
  store: SessionStore;
  engine: SessionEngine;
  turns: OtelTurnTracer;
  surface: FakeSurface;
  say(ts: string, text: string): Promise<{ turnId: string }>;
}

describe('traces over OTLP', () => {
  const cleanup: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const c of cleanup.splice(0).reverse()) await c();
  });

  async function rig(tracing: Tracing, agent: ContractAgent, store: SessionStore): Promise<Rig> {
    const client = new A2AClient(
      { endpoint: agent.endpoint, identity: { kind: 'bearer', token: 'trace-test-token' } },
      { tracer: tracing.tracer('agentkourier.a2a') },
    );
    const registry = new MapRegistry();
    registry.routes.set(BINDING, { client, dialect: a2aDialect, settings: { questionTimeoutMs: null } });
    const turns = new OtelTurnTracer(tracing.tracer('agentkourier.engine'));
    const surface = new FakeSurface();
    const engine = new SessionEngine({ store, registry, surface, tracer: turns, timings: FAST_TIMINGS });
    await engine.start();
    const say = (ts: string, text: string): Promise<{ turnId: string }> => {
      const input: Inbound = {
        kind: 'person',
        key: { surface: 'test', workspaceId: 'T1', channelId: 'C1', threadId: 'thread-1' },
        binding: BINDING,
        chatMessageId: ts,
        actor: { id: 'U1', name: 'Ada', label: '[Test: Ada (U1)]' },
        text,
        addressed: true,
      };
      return engine.receive(input);
    };
    return { agent, store, engine, turns, surface, say };
  }

  async function setUp(protocol: 'http/protobuf' | 'http/json') {
    const receiver: OtlpReceiver = await startOtlpReceiver();
    cleanup.push(() => receiver.close());
    const tracing = startTracing({
      env: {
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
        OTEL_SERVICE_NAME: 'agentkourier-test',
      },
      version: '9.9.9',
      scheduledDelayMs: 20,
    });
    cleanup.push(() => tracing.shutdown());
    const agent = await startContractAgent({ version: '1.0' });
    cleanup.push(() => agent.close());
    const dir = await mkdtemp(join(tmpdir(), 'ak-traces-'));
    cleanup.push(() => rm(dir, { recursive: true, force: true }));
    const path = join(dir, 'state.db');
    return { receiver, tracing, agent, path };
  }

  async function settled(r: Rig, turnId: string): Promise<void> {
    const deadline = Date.now() + 10_000;
    while ((await r.store.getTurn(turnId))?.state !== 'settled') {
      if (Date.now() > deadline) throw new Error(`turn ${turnId} did not settle`);
      await new Promise((res) => setTimeout(res, 20));
    }
  }

  /**
   * Flushes until the receiver has what `done` wants: the store says settled a moment before the
   * engine ends the turn's span (the write comes first), so one flush may come too early.
   */
  async function exported(
    tracing: Tracing,
    receiver: OtlpReceiver,
    done: (spans: ReceivedSpan[]) => boolean,
  ): Promise<void> {
    const deadline = Date.now() + 10_000;
    for (;;) {
      await tracing.forceFlush();
      if (done(receiver.spans)) return;
      if (Date.now() > deadline) throw new Error('the spans were not exported');
      await new Promise((res) => setTimeout(res, 20));
    }
  }

  function byId(spans: ReceivedSpan[]): Map<string, ReceivedSpan> {
    return new Map(spans.map((s) => [s.spanId, s]));
  }

  for (const protocol of ['http/protobuf', 'http/json'] as const) {
    it(`exports a turn's span with its agent calls as children, and the agent gets the call's traceparent (${protocol})`, async () => {
      const { receiver, tracing, agent, path } = await setUp(protocol);
      const store = new SqliteStore(path);
      await store.migrate();
      const r = await rig(tracing, agent, store);
      cleanup.push(async () => {
        await r.engine.stop();
        await store.close();
      });
      const { turnId } = await r.say('1.1', 'hello, traced');
      await settled(r, turnId);
      await exported(tracing, receiver, (spans) => spans.some((s) => s.name === 'chat turn'));

      expect(receiver.contentTypes[0]).toBe(
        protocol === 'http/json' ? 'application/json' : 'application/x-protobuf',
      );
      const turn = receiver.spans.find((s) => s.name === 'chat turn');
      expect(turn).toMatchObject({
        kind: SERVER,
        parentSpanId: '',
        attributes: {
          'agentkourier.binding': BINDING,
          'agentkourier.turn.id': turnId,
          'agentkourier.turn.kind': 'message',
          'agentkourier.turn.outcome': 'completed',
        },
        resource: { 'service.name': 'agentkourier-test', 'service.version': '9.9.9' },
        scope: 'agentkourier.engine',
      });
      // The turn's context is stored with it (a restart links to it).
      const stored = await store.getTurn(turnId);
      expect(stored?.traceContext?.traceparent).toBe(`00-${turn?.traceId}-${turn?.spanId}-01`);

      const calls = receiver.spans.filter((s) => s.parentSpanId === turn?.spanId);
      expect(calls.map((c) => c.name)).toContain('SendStreamingMessage');
      for (const call of calls) {
        expect(call).toMatchObject({ kind: CLIENT, traceId: turn?.traceId, scope: 'agentkourier.a2a' });
        expect(call.attributes).toMatchObject({
          'rpc.system.name': 'jsonrpc',
          'rpc.method': call.name,
          'server.address': '127.0.0.1',
        });
      }
      const send = calls.find((c) => c.name === 'SendStreamingMessage');
      const received = agent.rpc('SendStreamingMessage')[0]?.headers.traceparent;
      expect(received).toBe(`00-${turn?.traceId}-${send?.spanId}-01`);
      // The card read is a span of its own (no turn asked for it), with no traceparent sent.
      const card = receiver.spans.find((s) => s.name === 'GET');
      expect(card).toMatchObject({
        kind: CLIENT,
        parentSpanId: '',
        attributes: { 'http.response.status_code': 200 },
      });
      // No secret and no message text in any attribute.
      const everything = JSON.stringify(receiver.spans);
      expect(everything).not.toContain('trace-test-token');
      expect(everything).not.toContain('hello, traced');
    });
  }

  it('links the span of a turn taken over after a restart to the first one, not as its child', async () => {
    const { receiver, tracing, agent, path } = await setUp('http/protobuf');
    const store1 = new SqliteStore(path);
    await store1.migrate();
    const first = await rig(tracing, agent, store1);
    // The agent takes the task and goes quiet: the broker stops mid-turn.
    agent.enqueueFor('SendStreamingMessage', script([{ event: 'task' }, { event: 'working' }], 'hang'));
    const { turnId } = await first.say('2.1', 'a long one');
    const deadline = Date.now() + 10_000;
    while ((await store1.getTurn(turnId))?.state !== 'accepted') {
      if (Date.now() > deadline) throw new Error('the turn was not accepted');
      await new Promise((res) => setTimeout(res, 20));
    }
    await first.engine.stop();
    first.turns.close(); // the process stops: its open turn span ends, marked interrupted
    await store1.close();

    const store2 = new SqliteStore(path);
    const second = await rig(tracing, agent, store2);
    cleanup.push(async () => {
      await second.engine.stop();
      await store2.close();
    });
    await settled(second, turnId);
    await exported(
      tracing,
      receiver,
      (spans) =>
        spans.filter((s) => s.name === 'chat turn' && s.attributes['agentkourier.turn.id'] === turnId)
          .length === 2,
    );

    const turnSpans = receiver.spans.filter(
      (s) => s.name === 'chat turn' && s.attributes['agentkourier.turn.id'] === turnId,
    );
    expect(turnSpans).toHaveLength(2);
    const [before, after] = turnSpans as [ReceivedSpan, ReceivedSpan];
    expect(before.attributes['agentkourier.turn.interrupted']).toBe(true);
    expect(after.attributes).toMatchObject({
      'agentkourier.turn.resumed': true,
      'agentkourier.turn.outcome': 'completed',
    });
    // Linked, not parented: a new trace, a root span, with a link to the first span.
    expect(after.parentSpanId).toBe('');
    expect(after.traceId).not.toBe(before.traceId);
    expect(after.links).toEqual([{ traceId: before.traceId, spanId: before.spanId }]);
    // The calls after the restart are children of the new span, and the agent got its trace id.
    const spans = byId(receiver.spans);
    const resumedCalls = receiver.spans.filter((s) => s.parentSpanId === after.spanId);
    expect(resumedCalls.map((c) => c.name)).toEqual(expect.arrayContaining(['GetTask', 'SubscribeToTask']));
    for (const c of resumedCalls) expect(spans.get(c.parentSpanId)?.traceId).toBe(c.traceId);
    const lastGet = agent.rpc('GetTask').at(-1)?.headers.traceparent;
    expect(String(lastGet).split('-')[1]).toBe(after.traceId);
  });

  it('turns nothing on without an endpoint, and refuses a bad OTEL_* value naming the variable only', () => {
    expect(tracingConfig({})).toBeUndefined();
    expect(tracingConfig({ OTEL_SERVICE_NAME: 'x' })).toBeUndefined();
    expect(
      tracingConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'true' }),
    ).toBeUndefined();
    expect(
      tracingConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_EXPORTER: 'none' }),
    ).toBeUndefined();
    const config = tracingConfig({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/',
      OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer%20abc,x-team=a',
      OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=prod',
    });
    expect(config).toMatchObject({
      url: 'http://collector:4318/v1/traces',
      protocol: 'http/protobuf',
      headers: { authorization: 'Bearer abc', 'x-team': 'a' },
      serviceName: 'agentkourier',
      resourceAttributes: { 'deployment.environment.name': 'prod' },
    });
    expect(
      tracingConfig({
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://other:4318/custom',
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c',
      })?.url,
    ).toBe('http://other:4318/custom');
    const grpc = () =>
      tracingConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' });
    expect(grpc).toThrow(InvalidConfigError);
    expect(grpc).toThrow(/^OTEL_EXPORTER_OTLP_PROTOCOL grpc is not supported/);
    const secret = 'Bearer%20sup3r-secret';
    let caught: unknown;
    try {
      tracingConfig({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c',
        OTEL_EXPORTER_OTLP_HEADERS: `novalue${secret}`,
      });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(InvalidConfigError);
    expect((caught as InvalidConfigError).code).toBe('invalid_config');
    expect((caught as Error).message).toMatch(/^OTEL_EXPORTER_OTLP_HEADERS /);
    expect((caught as Error).message).not.toContain('sup3r');
    const ratio = () =>
      tracingConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c', OTEL_TRACES_SAMPLER_ARG: '2' });
    expect(ratio).toThrow(InvalidConfigError);
    expect(ratio).toThrow(/^OTEL_TRACES_SAMPLER_ARG must be a number from 0 to 1/);
  });
});
