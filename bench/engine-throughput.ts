/**
 * The engine benchmarks' throughput modes, run in the child (engine-child.ts): the bare client
 * against the engine on SQLite (1), the OpenTelemetry API and SDK against no tracing (1b), and
 * two replicas on PostgreSQL (1c).
 */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { trace } from '@opentelemetry/api';
import type { A2AClient } from '../src/a2a/client.js';
import { endCallSpan, serverAddress, startCallSpan } from '../src/a2a/telemetry.js';
import { headersOf } from '../src/a2a/transport.js';
import type { SessionEngine } from '../src/core/session/engine.js';
import type { SessionStore } from '../src/core/store.js';
import { startTracing } from '../src/observability/tracing.js';
import { OtelTurnTracer } from '../src/observability/turn-tracer.js';
import { answerAsked, eventsPerTurn, SHAPE } from './agent-server.js';
import {
  BINDING,
  checkAnswers,
  countingStore,
  cpuSince,
  EventCounter,
  gc,
  newClient,
  ONLY_SIDE,
  receiveAll,
  rig,
  say,
  skipped,
  type Tracing,
  tempDb,
} from './engine-rig.js';
import { sampledIf } from './heap-sample.js';
import { countPgQueries, type PgCounts, takePgCounts } from './pg-counts.js';
import { StallRecorder } from './stalls.js';
import { reportThreads, threadsIfAsked } from './thread-cpu.js';

// ---- 1. throughput ------------------------------------------------------------------------------

export async function bareRound(
  client: A2AClient,
  n: number,
  chunks: number,
): Promise<{ ms: number; events: number; cpuMs: number }> {
  let events = 0;
  const started = performance.now();
  const cpu = process.cpuUsage();
  const streams: Promise<void>[] = [];
  for (let i = 0; i < n; i++) {
    streams.push(
      (async () => {
        for await (const _ of client.sendStreamingMessage({
          messageId: randomUUID(),
          text: answerAsked(chunks),
        }))
          events++;
      })(),
    );
  }
  await Promise.all(streams);
  return { ms: performance.now() - started, events, cpuMs: cpuSince(cpu) };
}

/**
 * One bare round as the throughput and replica modes time it: after a full collection, its
 * threads' CPU reported when asked (BENCH_THREADS), sampled when asked (BENCH_HEAP_SAMPLE), left
 * out when BENCH_SIDE=engine; throws unless the client saw every event.
 */
async function measuredBareRound(
  client: A2AClient,
  n: number,
  chunks: number,
  expected: number,
  round: number,
  sample: boolean,
): Promise<{ ms: number; cpuMs: number }> {
  gc();
  const t0 = threadsIfAsked();
  const b =
    ONLY_SIDE === 'engine'
      ? skipped(expected)
      : await sampledIf(sample, 'bare', () => bareRound(client, n, chunks));
  reportThreads(`bare round ${round}`, t0);
  if (b.events !== expected) throw new Error(`bare client saw ${b.events} events, expected ${expected}`);
  return b;
}

export async function engineRound(
  endpoint: string,
  n: number,
  chunks: number,
  round: string,
  tracing: Tracing = 'api',
  calls?: Map<string, number>,
): Promise<{ ms: number; answerChars: number; cpuMs: number; summary: Record<string, unknown> }> {
  const db = tempDb();
  const r = await rig(endpoint, db.path, {
    tracing,
    ...(calls === undefined ? {} : { wrap: (s: SessionStore) => countingStore(s, calls) }),
  });
  try {
    await r.client.card();
    await r.engine.start();
    const started = performance.now();
    const cpu = process.cpuUsage();
    await receiveAll(r.engine, round, n, answerAsked(chunks));
    await r.events.until('turn.settled', n);
    const ms = performance.now() - started;
    const cpuMs = cpuSince(cpu);
    if (r.events.outcomes.get('completed') !== n)
      throw new Error(`engine round ${round}: ${JSON.stringify(r.events.summary())}`);
    return { ms, answerChars: r.events.answerChars, cpuMs, summary: r.events.summary() };
  } finally {
    await r.engine.stop();
    await r.store.close();
    db.remove();
  }
}

export async function throughput(endpoint: string, n: number, chunks: number, rounds: number): Promise<void> {
  const expected = n * eventsPerTurn(chunks, SHAPE);
  const client = newClient(endpoint);
  await client.card();
  // Warm-up: both paths JIT-compiled before anything is timed.
  await bareRound(client, Math.min(n, 200), chunks);
  // The warm-up round counts the store calls per turn (diagnosis; the timed rounds do not).
  const warm = Math.min(n, 200);
  const calls = new Map<string, number>();
  await engineRound(endpoint, warm, chunks, 'warm', 'api', calls);
  const storeCallsPerTurn = Object.fromEntries([...calls].map(([k, v]) => [k, v / warm]));
  const bare: number[] = [];
  const engine: number[] = [];
  const bareCpu: number[] = [];
  const engineCpu: number[] = [];
  let summary: Record<string, unknown> = {};
  // BENCH_STALLS=1: the SQLite transactions and GC pauses of the engine rounds, timed (diagnosis;
  // the wrapper around every exec is left out of the figures' runs).
  const stalls = process.env.BENCH_STALLS === '1' ? new StallRecorder() : undefined;
  // BENCH_THREADS=1: each round's CPU time by thread (the event loop, V8's helpers; diagnosis).
  for (let i = 0; i < rounds; i++) {
    // BENCH_HEAP_SAMPLE=1: what the last round of each kind allocated, by site (diagnosis).
    const sample = process.env.BENCH_HEAP_SAMPLE === '1' && i === rounds - 1;
    const b = await measuredBareRound(client, n, chunks, expected, i, sample);
    bare.push(b.ms);
    bareCpu.push(b.cpuMs);
    gc();
    stalls?.start();
    const t1 = threadsIfAsked();
    const e =
      ONLY_SIDE === 'bare'
        ? skipped(expected)
        : await sampledIf(sample, 'engine', () => engineRound(endpoint, n, chunks, `round${i}`));
    reportThreads(`engine round ${i} (its store's opening and closing too)`, t1);
    stalls?.stop();
    checkAnswers('the engine', e.answerChars, n, chunks);
    engine.push(e.ms);
    engineCpu.push(e.cpuMs);
    summary = e.summary;
  }
  say({
    type: 'result',
    mode: 'throughput',
    sessions: n,
    chunks,
    eventsPerRound: expected,
    bare,
    engine,
    bareCpu,
    engineCpu,
    summary,
    storeCallsPerTurn,
    ...(stalls === undefined ? {} : { stalls: stalls.report([], 0) }),
  });
  stalls?.close();
}

// ---- 1b. the OpenTelemetry API without an SDK ------------------------------------------------------

/** An OTLP receiver on loopback that takes every export and counts it (the SDK's far end). */
async function startOtlpReceiver(): Promise<{
  url: string;
  stats: { requests: number; bytes: number };
}> {
  const stats = { requests: 0, bytes: 0 };
  const server = createServer((req, res) => {
    stats.requests++;
    req.on('data', (c: Buffer) => {
      stats.bytes += c.length;
    });
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/x-protobuf' });
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  server.unref();
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, stats };
}

export async function tracingCost(
  endpoint: string,
  n: number,
  chunks: number,
  rounds: number,
  sdk: boolean,
): Promise<void> {
  let exported: { requests: number; bytes: number } | undefined;
  if (sdk) {
    // As the broker starts it when OTEL_EXPORTER_OTLP_ENDPOINT is set: registered globally, so
    // the 'api' rounds below record and export every turn and call span.
    const receiver = await startOtlpReceiver();
    startTracing({ env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url }, version: 'bench' });
    exported = receiver.stats;
  }
  // Warm-up at full size, one of each, not counted: the first full round ran 10-30 % slower
  // than the rest (V8's code and the heap's size still settling), and which side it fell on
  // moved the figure.
  await engineRound(endpoint, n, chunks, 'warm-none', 'none');
  await engineRound(endpoint, n, chunks, 'warm-api', 'api');
  // Wall time, and this process's CPU time: on a shared machine the CPU the broker spent is the
  // steadier measure of what the API costs it (the agent server runs in the parent).
  const none = { ms: [] as number[], cpuMs: [] as number[] };
  const api = { ms: [] as number[], cpuMs: [] as number[] };
  for (let i = 0; i < rounds; i++) {
    // Interleaved, and the order swapped each round, so drift in the machine hits both alike.
    const order: Tracing[] = i % 2 === 0 ? ['none', 'api'] : ['api', 'none'];
    for (const tracing of order) {
      gc();
      const cpu = process.cpuUsage();
      // BENCH_TRACING_AA=1: both halves run without tracing, to read the figure's own noise.
      const as = process.env.BENCH_TRACING_AA === '1' ? 'none' : tracing;
      const r = await engineRound(endpoint, n, chunks, `${tracing}${i}`, as);
      const used = process.cpuUsage(cpu);
      const into = tracing === 'none' ? none : api;
      into.ms.push(r.ms);
      into.cpuMs.push((used.user + used.system) / 1000);
    }
  }
  const callsPerTurnUs = sdk ? undefined : noSdkCallsPerTurnUs();
  say({ type: 'result', mode: 'tracing', sessions: n, chunks, none, api, sdk, exported, callsPerTurnUs });
}

/**
 * The CPU time, in µs, of the tracing calls one turn makes when no SDK is registered, timed
 * alone over many turns: the engine's turn span (begin, contextOf, end) and the client's span of
 * the streaming call (started, its headers read, ended), through the same functions the engine
 * and the client call. What the ratio above measures through the noise of whole rounds.
 */
function noSdkCallsPerTurnUs(): number {
  const turns = new OtelTurnTracer(trace.getTracer('agentkourier.engine'));
  const server = serverAddress('http://127.0.0.1:8080/a2a');
  const info = { name: 'SendStreamingMessage', server, method: 'SendStreamingMessage', version: '1.0' };
  const one = (i: number): void => {
    const turn = { turnId: `turn-${i}`, sessionId: 'session', binding: BINDING, kind: 'message' as const };
    turns.begin(turn);
    const context = turns.contextOf({ ...turn, stored: null }) ?? undefined;
    const span = startCallSpan(trace.getTracer('agentkourier.a2a'), info, context);
    headersOf(span, context);
    endCallSpan(span, 'ok', chunksOfAnswer);
    turns.end(turn.turnId, 'completed');
  };
  const chunksOfAnswer = 54;
  for (let i = 0; i < 50_000; i++) one(i);
  const n = 200_000;
  const cpu = process.cpuUsage();
  for (let i = 0; i < n; i++) one(i);
  return (cpuSince(cpu) * 1000) / n;
}

// ---- 1c. two replicas on PostgreSQL -------------------------------------------------------------

async function pgRound(
  endpoint: string,
  connectionString: string,
  n: number,
  chunks: number,
  round: string,
): Promise<{
  ms: number;
  answerChars: number;
  summary: Record<string, unknown>;
  refused: number;
  calls: Record<string, number>;
  pg: PgCounts;
  cpuMs: number;
}> {
  // A schema of its own per round: the same empty start as SQLite's fresh file.
  const schema = `bench_${round.replace(/[^a-z0-9]/gi, '_').toLowerCase()}_${process.pid}`;
  const events = new EventCounter();
  // Store calls of both replicas (diagnosis): the proxy costs little next to a query.
  const calls = new Map<string, number>();
  const replicas = [
    await rig(endpoint, '', {
      postgres: { connectionString, schema },
      owner: 'replica-a',
      events,
      wrap: (st) => countingStore(st, calls),
    }),
    await rig(endpoint, '', {
      postgres: { connectionString, schema },
      owner: 'replica-b',
      events,
      wrap: (st) => countingStore(st, calls),
    }),
  ];
  try {
    for (const r of replicas) {
      await r.client.card();
      await r.engine.start();
    }
    calls.clear();
    takePgCounts();
    const cpu = process.cpuUsage();
    const started = performance.now();
    // Each replica takes half the threads, as a load balancer in front of two pods would.
    const half = Math.floor(n / 2);
    await Promise.all([
      receiveAll(replicas[0]?.engine as SessionEngine, `${round}-a`, half, answerAsked(chunks)),
      receiveAll(replicas[1]?.engine as SessionEngine, `${round}-b`, n - half, answerAsked(chunks)),
    ]);
    await events.until('turn.settled', n);
    const ms = performance.now() - started;
    const used = process.cpuUsage(cpu);
    if (events.outcomes.get('completed') !== n)
      throw new Error(`pg round ${round}: ${JSON.stringify(events.summary())}`);
    return {
      ms,
      answerChars: events.answerChars,
      summary: events.summary(),
      refused: calls.get('acquireLease:refused') ?? 0,
      calls: Object.fromEntries(calls),
      pg: takePgCounts(),
      cpuMs: (used.user + used.system) / 1000,
    };
  } finally {
    for (const r of replicas) await r.engine.stop();
    for (const r of replicas) await r.store.close();
  }
}

export async function pgThroughput(
  endpoint: string,
  connectionString: string,
  n: number,
  chunks: number,
  rounds: number,
): Promise<void> {
  const expected = n * eventsPerTurn(chunks, SHAPE);
  countPgQueries();
  const client = newClient(endpoint);
  await client.card();
  await bareRound(client, Math.min(n, 200), chunks);
  await pgRound(endpoint, connectionString, Math.min(n, 200), chunks, 'warm');
  const bare: number[] = [];
  const engine: number[] = [];
  let summary: Record<string, unknown> = {};
  let refused = 0;
  let perTurn: Record<string, number> = {};
  const cpuMs: number[] = [];
  for (let i = 0; i < rounds; i++) {
    // BENCH_HEAP_SAMPLE=1: what the last round of each kind allocated, by site (diagnosis).
    const sample = process.env.BENCH_HEAP_SAMPLE === '1' && i === rounds - 1;
    const b = await measuredBareRound(client, n, chunks, expected, i, sample);
    bare.push(b.ms);
    gc();
    const t1 = threadsIfAsked();
    const e = await sampledIf(sample, 'replicas', () =>
      pgRound(endpoint, connectionString, n, chunks, `round${i}`),
    );
    reportThreads(`replicas round ${i}`, t1);
    checkAnswers('the replicas', e.answerChars, n, chunks);
    engine.push(e.ms);
    summary = e.summary;
    refused = e.refused;
    cpuMs.push(e.cpuMs);
    perTurn = Object.fromEntries(
      [...Object.entries(e.calls), ['roundTrips', e.pg.roundTrips], ['commits', e.pg.commits]].map(
        ([k, v]) => [k, (v as number) / n],
      ),
    );
  }
  say({
    type: 'result',
    mode: 'pg',
    sessions: n,
    chunks,
    eventsPerRound: expected,
    bare,
    engine,
    summary,
    refused,
    perTurn,
    cpuMs,
  });
}
