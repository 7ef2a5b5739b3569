/**
 * The client side of the engine benchmarks, run in its own process so that what it measures
 * (time, resident memory) is the broker's alone: the agent server stays in the parent.
 *
 *   node --expose-gc --import tsx bench/engine-child.ts <mode> <endpoint> [args…]
 *
 * It talks to the parent in JSON lines on stdout: `{"type":"release"}` asks the parent to
 * finish the streams its server holds, `{"type":"result",…}` carries a measurement, and the
 * resume modes print `{"type":"accepted"}` / `{"type":"settled"}` when they get there.
 *
 * Modes:
 * - throughput <endpoint> <sessions> <chunks> <rounds>: bare A2AClient against SessionEngine.
 * - tracing <endpoint> <sessions> <chunks> <rounds> [sdk]: SessionEngine with no tracing code at
 *   all against the same with the OpenTelemetry API and no SDK (what runs when OTEL_* is unset),
 *   or with `sdk`, with the SDK exporting OTLP/protobuf to a receiver on loopback.
 * - pg <endpoint> <connection> <sessions> <chunks> <rounds>: bare A2AClient against two
 *   SessionEngines (two replicas: two stores, two lease owners) sharing one PostgreSQL.
 * - latency <endpoint> <sessions> <samples>: from the agent's first artifact event written to
 *   the socket to the surface's update call, per turn (`{"type":"release-stamped"}` asks the
 *   parent to send the stamped first chunks).
 * - memory <endpoint> <bare|engine> <sessions> <chunks> <holdAfter>: RSS/heap per held stream,
 *   read with half and with all of the streams held.
 * - load <endpoint> <db> <sessions> <holdAfter> [owner]: start turns that hang; report when
 *   accepted.
 * - recover <endpoint> <db> <expect> [owner]: engine.start() on the file; report when all settled.
 *   `owner` is the engine's lease owner name (default: a new random one per process).
 * - slack <endpoint> <fake Slack URL> <bot token> <signing secret> <sessions> <chunks> <rounds>:
 *   the whole path through Slack against the engine alone (bench/slack-path-child.ts).
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { getHeapSpaceStatistics, writeHeapSnapshot } from 'node:v8';
import { trace } from '@opentelemetry/api';
import { A2AClient } from '../src/a2a/client.js';
import { endCallSpan, serverAddress, startCallSpan } from '../src/a2a/telemetry.js';
import { headersOf } from '../src/a2a/transport.js';
import type { AnswerView } from '../src/core/answer.js';
import type { EngineEvent } from '../src/core/events.js';
import type {
  AgentRegistry,
  AgentRoute,
  AnswerSink,
  ChatSurface,
  ChatTarget,
  Notice,
  QuestionPrompt,
  ToolStep,
} from '../src/core/ports.js';
import { type Inbound, SessionEngine } from '../src/core/session/engine.js';
import type { SessionStore } from '../src/core/store.js';
import { a2aDialect } from '../src/dialects/a2a.js';
import { startTracing } from '../src/observability/tracing.js';
import { OtelTurnTracer } from '../src/observability/turn-tracer.js';
import { PostgresStore } from '../src/store/postgres/postgres-store.js';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.js';
import { fullText } from './agent-server.js';
import { HeapSampler, sampledIf } from './heap-sample.js';
import { nullStore } from './null-store.js';
import { countPgQueries, type PgCounts, takePgCounts } from './pg-counts.js';
import { slackPath } from './slack-path-child.js';
import { StallRecorder } from './stalls.js';
import { reportThreads, threadsIfAsked } from './thread-cpu.js';

/** When this script started running, in ms since the process started (module loading included). */
const scriptStartedAt = performance.now();

const BINDING = 'bench/agent';

/**
 * BENCH_SIDE=bare|engine: only that side's throughput rounds run (the other's are printed as
 * 1 ms; the replicas' rounds know `engine` only), so a CPU profile (BENCH_CPU_PROF) holds one
 * side alone, to compare with the other's. Diagnosis only: the ratios such a run prints mean
 * nothing.
 */
const ONLY_SIDE = process.env.BENCH_SIDE;

/** A round BENCH_SIDE left out: as if it took 1 ms and saw every event. */
function skipped(events: number): {
  ms: number;
  events: number;
  answerChars: number;
  cpuMs: number;
  summary: Record<string, unknown>;
} {
  return { ms: 1, events, answerChars: Number.NaN, cpuMs: 1, summary: {} };
}

/**
 * Throws unless every turn of a round showed the agent's whole answer (the engine may stop
 * reading a stream after its terminal status and take the final Task from GetTask: what must
 * be whole is the answer). NaN: a round BENCH_SIDE left out.
 */
function checkAnswers(who: string, answerChars: number, n: number, chunks: number): void {
  const expected = n * fullText(chunks).length;
  if (!Number.isNaN(answerChars) && answerChars !== expected)
    throw new Error(`${who}' answers held ${answerChars} characters, expected ${expected}`);
}

/**
 * The store of a SQLite round: the file, durable, as the broker runs it; BENCH_STORE (diagnosis)
 * swaps in another to take a part of its cost away — `normal` (no fsync), `memory` (no file),
 * `null` and `null-later` (no store at all: ./null-store.ts).
 */
function sqliteRoundStore(dbPath: string): SessionStore {
  switch (process.env.BENCH_STORE) {
    case 'null':
      return nullStore(false);
    case 'null-later':
      return nullStore(true);
    case 'memory':
      return new SqliteStore(':memory:');
    case 'normal':
      return new SqliteStore(dbPath, { synchronous: 'normal' });
    default:
      return new SqliteStore(dbPath);
  }
}

function say(message: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify(message)}\n`);
}

function gc(): void {
  const collect = (globalThis as { gc?: () => void }).gc;
  if (collect === undefined) throw new Error('run with --expose-gc');
  collect();
  collect();
}

/**
 * A chat surface that shows nothing: O(1) per update (never joins the answer text). Like a real
 * surface it reports the ref of the answer message it "posted", once, on the first update.
 */
class NullSurface implements ChatSurface {
  updates = 0;
  finished = 0;
  readonly notices = new Map<string, number>();
  /** Called on a turn's first update (the latency benchmark reads its stamp there). */
  onFirstUpdate: ((view: AnswerView) => void) | undefined;

  openAnswer(
    _target: ChatTarget,
    turnId: string,
    ref: string | null,
    onRef: (ref: string) => void,
  ): AnswerSink {
    let posted = ref !== null;
    return {
      update: (view: AnswerView) => {
        this.updates++;
        if (!posted) {
          posted = true;
          this.onFirstUpdate?.(view);
          onRef(`answer:${turnId}`);
        }
      },
      finish: async (_view: AnswerView) => {
        this.finished++;
      },
    };
  }

  async postNotice(_target: ChatTarget, notice: Notice): Promise<void> {
    this.notices.set(notice.kind, (this.notices.get(notice.kind) ?? 0) + 1);
  }

  async askQuestion(_target: ChatTarget, _prompt: QuestionPrompt): Promise<string | null> {
    return null;
  }

  async showToolStep(_target: ChatTarget, _turnId: string, _step: ToolStep): Promise<void> {}
}

/**
 * Counts engine events by type and wakes whoever waits for a count. `agent.event`, one per
 * stream event, only when asked (`agentEvents`): the broker's own sinks do not take them, so
 * the engine builds none for them, and the timed modes measure that.
 */
class EventCounter {
  readonly agentEvents: boolean;
  readonly counts = new Map<string, number>();
  readonly outcomes = new Map<string, number>();
  answerChars = 0;
  readonly #waiters: Array<{ type: string; n: number; resolve: () => void }> = [];

  constructor(agentEvents = false) {
    this.agentEvents = agentEvents;
  }

  emit(event: EngineEvent): void {
    const n = (this.counts.get(event.type) ?? 0) + 1;
    this.counts.set(event.type, n);
    if (event.type === 'turn.settled') {
      this.outcomes.set(event.outcome, (this.outcomes.get(event.outcome) ?? 0) + 1);
      this.answerChars += event.answerLength;
    }
    // Called for every agent event: allocates nothing unless a waiter is woken (the broker's
    // CPU is what the benchmarks time, and a new array per event was the harness's, not its).
    for (let i = this.#waiters.length - 1; i >= 0; i--) {
      const w = this.#waiters[i];
      if (w !== undefined && w.type === event.type && n >= w.n) {
        this.#waiters.splice(i, 1);
        w.resolve();
      }
    }
  }

  count(type: string): number {
    return this.counts.get(type) ?? 0;
  }

  /** Resolves once `n` events of `type` have been seen in all. */
  until(type: string, n: number): Promise<void> {
    if (this.count(type) >= n) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.push({ type, n, resolve }));
  }

  reset(): void {
    this.counts.clear();
    this.outcomes.clear();
    this.answerChars = 0;
  }

  summary(): Record<string, unknown> {
    return { events: Object.fromEntries(this.counts), outcomes: Object.fromEntries(this.outcomes) };
  }
}

/** Counts store calls (and refused leases): recovery's diagnosis, not used where speed is timed. */
function countingStore(store: SessionStore, calls: Map<string, number>): SessionStore {
  return new Proxy(store, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function') return value;
      return async (...args: unknown[]) => {
        const name = String(prop);
        calls.set(name, (calls.get(name) ?? 0) + 1);
        let result: unknown;
        try {
          result = await (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        } catch (error) {
          const key = `${name}:threw:${error instanceof Error ? error.name : 'error'}`;
          calls.set(key, (calls.get(key) ?? 0) + 1);
          throw error;
        }
        if (name === 'acquireLease' && result === false)
          calls.set('acquireLease:refused', (calls.get('acquireLease:refused') ?? 0) + 1);
        return result;
      };
    },
  });
}

/** 'api': the OpenTelemetry API with no SDK (the default); 'none': no tracing code runs at all. */
type Tracing = 'api' | 'none';

function newClient(endpoint: string, tracing: Tracing = 'api'): A2AClient {
  // undici's global dispatcher: an Agent with no connection cap per origin (1,000 streams need
  // 1,000 sockets), as the broker runs in production.
  return new A2AClient(
    { endpoint, identity: { kind: 'user-id', userId: 'bench' } },
    tracing === 'none' ? { tracer: false } : {},
  );
}

interface Rig {
  engine: SessionEngine;
  store: SessionStore;
  surface: NullSurface;
  events: EventCounter;
  client: A2AClient;
}

async function rig(
  endpoint: string,
  dbPath: string,
  options: {
    wrap?: (s: SessionStore) => SessionStore;
    owner?: string;
    tracing?: Tracing;
    /** A PostgreSQL store instead of SQLite at dbPath (the replicas' shared database). */
    postgres?: { connectionString: string; schema: string };
    events?: EventCounter;
  } = {},
): Promise<Rig> {
  const { wrap, owner, tracing = 'api', postgres } = options;
  const client = newClient(endpoint, tracing);
  const base: SessionStore = postgres === undefined ? sqliteRoundStore(dbPath) : new PostgresStore(postgres);
  const store = wrap === undefined ? base : wrap(base);
  await store.migrate();
  const surface = new NullSurface();
  const events = options.events ?? new EventCounter();
  const route: AgentRoute = { client, dialect: a2aDialect, settings: { questionTimeoutMs: null } };
  const registry: AgentRegistry = { resolve: (binding) => (binding === BINDING ? route : undefined) };
  const engine = new SessionEngine({
    store,
    registry,
    surface,
    events,
    ...(owner === undefined ? {} : { owner }),
    // As the composition root wires it; no SDK is registered here, so the API is its no-op.
    ...(tracing === 'api' ? { tracer: new OtelTurnTracer(trace.getTracer('agentkourier.engine')) } : {}),
  });
  return { engine, store, surface, events, client };
}

function inbound(thread: string, text: string): Inbound {
  return {
    kind: 'person',
    key: { surface: 'bench', workspaceId: 'T1', channelId: 'C1', threadId: thread },
    binding: BINDING,
    chatMessageId: `${thread}.1`,
    actor: { id: 'U1', name: 'Ada', label: '[Bench: Ada (U1)]' },
    text,
    addressed: true,
  };
}

/** Sends one message to each of `n` new threads, all at once; resolves when all are stored. */
async function receiveAll(engine: SessionEngine, prefix: string, n: number, text: string): Promise<void> {
  const pending: Promise<unknown>[] = [];
  for (let i = 0; i < n; i++) pending.push(engine.receive(inbound(`${prefix}-${i}`, text)));
  await Promise.all(pending);
}

function tempDb(): { path: string; remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'ak-bench-'));
  return { path: join(dir, 'sessions.db'), remove: () => rmSync(dir, { recursive: true, force: true }) };
}

// ---- 1. throughput ------------------------------------------------------------------------------

/** This process's CPU time since `start`, in ms: on a shared machine, steadier than wall time. */
function cpuSince(start: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1000;
}

async function bareRound(
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
          text: `[chunks:${chunks}]`,
        }))
          events++;
      })(),
    );
  }
  await Promise.all(streams);
  return { ms: performance.now() - started, events, cpuMs: cpuSince(cpu) };
}

async function engineRound(
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
    await receiveAll(r.engine, round, n, `[chunks:${chunks}]`);
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

async function throughput(endpoint: string, n: number, chunks: number, rounds: number): Promise<void> {
  const expected = n * (chunks + 4);
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
    gc();
    const t0 = threadsIfAsked();
    const b =
      ONLY_SIDE === 'engine'
        ? skipped(expected)
        : await sampledIf(sample, 'bare', () => bareRound(client, n, chunks));
    reportThreads(`bare round ${i}`, t0);
    if (b.events !== expected) throw new Error(`bare client saw ${b.events} events, expected ${expected}`);
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
    // The engine may stop reading a stream after its terminal status (the final Task then comes
    // from GetTask): a few events short is the engine's choice, not a loss. Many short is a bug.
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
async function startOtlpReceiver(): Promise<{ url: string; stats: { requests: number; bytes: number } }> {
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

async function tracingCost(
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
      receiveAll(replicas[0]?.engine as SessionEngine, `${round}-a`, half, `[chunks:${chunks}]`),
      receiveAll(replicas[1]?.engine as SessionEngine, `${round}-b`, n - half, `[chunks:${chunks}]`),
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

async function pgThroughput(
  endpoint: string,
  connectionString: string,
  n: number,
  chunks: number,
  rounds: number,
): Promise<void> {
  const expected = n * (chunks + 4);
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
    gc();
    const t0 = threadsIfAsked();
    const b =
      ONLY_SIDE === 'engine'
        ? skipped(expected)
        : await sampledIf(sample, 'bare', () => bareRound(client, n, chunks));
    reportThreads(`bare round ${i}`, t0);
    if (b.events !== expected) throw new Error(`bare client saw ${b.events} events, expected ${expected}`);
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

// ---- 1d. latency from the socket to the surface --------------------------------------------------

function quantile(sorted: number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] as number;
}

/** A first chunk later than this is counted by what it overlapped (bench/stalls.ts). */
const LATE_MS = 5;

async function latency(endpoint: string, n: number, samples: number, settled = false): Promise<void> {
  const db = tempDb();
  const r = await rig(endpoint, db.path);
  const taken: number[] = [];
  const pairs: Array<[bigint, bigint]> = [];
  const stalls = new StallRecorder();
  // The WAL checkpoints the store's own thread ran while the window was recorded (off the loop).
  const checkpoints = { count: 0, restarts: 0, frames: 0, longestMs: 0, recording: false };
  if (r.store instanceof SqliteStore)
    r.store.observeCheckpoints({
      checkpointed: (c) => {
        if (!checkpoints.recording) return;
        if (c.mode === 'restart') checkpoints.restarts++;
        else checkpoints.count++;
        checkpoints.frames += c.backfilledFrames;
        checkpoints.longestMs = Math.max(checkpoints.longestMs, c.durationMs);
      },
    });
  r.surface.onFirstUpdate = (view) => {
    const now = process.hrtime.bigint();
    const mark = /^\[t:(\d+)\]/.exec(view.text());
    if (mark === null) return;
    const written = BigInt(mark[1] as string);
    taken.push(Number(now - written) / 1e6);
    pairs.push([written, now]);
  };
  const text = '[chunks:50][hold-after:0]';
  try {
    await r.client.card();
    await r.engine.start();
    // Warm-up: whole turns, so the path is compiled before anything is timed.
    await receiveAll(r.engine, 'warm', Math.min(n, 200), '[chunks:50]');
    await r.events.until('turn.settled', Math.min(n, 200));
    r.events.reset();
    let round = 0;
    const snapshots = process.env.BENCH_HEAP_SNAPSHOT !== undefined && n > 1;
    while (taken.length < samples) {
      // n sessions accepted and held open; then their first chunks arrive, spread over a
      // second (at once for one session), while all n stay open; then all are finished.
      const before = taken.length;
      if (snapshots && round === 0) {
        gc();
        snapshot('latency-before');
      }
      await receiveAll(r.engine, `lat${round}`, n, text);
      await r.events.until('turn.accepted', n * (round + 1));
      if (snapshots && round === 0) {
        // What the n sessions hold when the window opens (collected here, so not the figure's run).
        gc();
        snapshot('latency-held');
      }
      // 'settled': the sessions' start-up state is collected (and so promoted) before the
      // window, as it would have been by the time a broker holds n sessions in a steady stream of
      // them, instead of all n opened in the moment before the first chunks.
      if (settled) gc();
      stalls.start();
      checkpoints.recording = true;
      const sampler = process.env.BENCH_HEAP_SAMPLE === '1' && n > 1 ? new HeapSampler() : undefined;
      await sampler?.start();
      say({ type: 'release-stamped', spreadMs: n === 1 ? 0 : 1_000 });
      await waitUntil(() => taken.length >= before + n, 'the stamped first chunks');
      stalls.stop();
      checkpoints.recording = false;
      if (sampler !== undefined) process.stderr.write(`${JSON.stringify(await sampler.stop(), null, 1)}\n`);
      say({ type: 'release' });
      await r.events.until('turn.settled', n * (round + 1));
      round++;
    }
    const sorted = [...taken].sort((a, b) => a - b);
    say({
      type: 'result',
      mode: 'latency',
      sessions: n,
      samples: sorted.length,
      p50: quantile(sorted, 0.5),
      p99: quantile(sorted, 0.99),
      max: sorted[sorted.length - 1] ?? Number.NaN,
      stalls: stalls.report(pairs, LATE_MS),
      checkpoints,
    });
  } finally {
    stalls.close();
    await r.engine.stop();
    await r.store.close();
    db.remove();
  }
}

// ---- 2. memory ----------------------------------------------------------------------------------

function memory(): Record<string, number> {
  const m = process.memoryUsage();
  const spaces = Object.fromEntries(
    getHeapSpaceStatistics().map((s) => [s.space_name, s.space_size] as const),
  );
  return {
    rss: m.rss,
    heapUsed: m.heapUsed,
    heapTotal: m.heapTotal,
    external: m.external,
    arrayBuffers: m.arrayBuffers,
    newSpace: spaces.new_space ?? 0,
    oldSpace: spaces.old_space ?? 0,
    ...statusRss(),
  };
}

/** The kernel's split of resident memory: anonymous (heap, malloc) and file-backed (mapped files). */
function statusRss(): Record<string, number> {
  const out: Record<string, number> = { RssAnon: 0, RssFile: 0, RssShmem: 0 };
  let status = '';
  try {
    status = readFileSync('/proc/self/status', 'utf8');
  } catch {
    return out; // not Linux
  }
  for (const line of status.split('\n')) {
    const m = /^(RssAnon|RssFile|RssShmem):\s+(\d+) kB/.exec(line);
    if (m) out[m[1] as string] = Number(m[2]) * 1024;
  }
  return out;
}

/**
 * BENCH_HEAP_SNAPSHOT=<dir> (diagnosis): a heap snapshot at each of the memory benchmark's two
 * readings under load, so `bench/heap-diff.ts` can list what the sessions added in between.
 */
function snapshot(name: string): void {
  const dir = process.env.BENCH_HEAP_SNAPSHOT;
  if (dir !== undefined && dir !== '') writeHeapSnapshot(join(dir, `${name}.heapsnapshot`));
}

/**
 * Memory as a reading under load takes it: collected, then a pause and collected again before
 * it is read. V8 returns the pages a full collection empties to the system from a background task
 * (its unmapper), so a reading right after `gc()` may still count some: in three pairs of runs
 * alternated in one sitting, 47-49 KiB per held engine session read at once against 40-45 KiB
 * after the pause, the heap figures alike.
 */
async function settledMemory(): Promise<Record<string, number>> {
  gc();
  await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
  gc();
  return memory();
}

const SETTLE_MS = 500;

/** Waits (polling) until `done()` holds; the parent's server holds the streams meanwhile. */
async function waitUntil(done: () => boolean, what: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * Memory is read twice under load, with half the sessions held and with all of them, and the
 * figure is the difference divided by the sessions added in between: what each more session
 * costs. Read against the process before any session started instead, the figure also carried
 * what grows once, not per session, as load arrives: V8's young generation (the child runs with
 * it at a fixed size, see bench/engine.ts; left to grow, its pages are touched only as allocation
 * reaches them), SQLite's page cache (bounded per connection), undici's and the allocator's pools.
 */
async function memoryBare(endpoint: string, n: number, chunks: number, holdAfter: number): Promise<void> {
  const client = newClient(endpoint);
  await client.card();
  await bareRound(client, 50, 20); // warm-up
  gc();
  const before = memory();
  let events = 0;
  const text = `[chunks:${chunks}][hold-after:${holdAfter}]`;
  const streams: Promise<void>[] = [];
  const open = (count: number): void => {
    for (let i = 0; i < count; i++) {
      streams.push(
        (async () => {
          for await (const _ of client.sendStreamingMessage({ messageId: randomUUID(), text })) events++;
        })(),
      );
    }
  };
  const half = Math.floor(n / 2);
  open(half);
  // task + working + holdAfter chunks each
  await waitUntil(
    () => events >= half * (2 + holdAfter),
    'the first half of the bare streams to reach the hold',
  );
  const halfway = await settledMemory();
  snapshot('bare-halfway');
  open(n - half);
  await waitUntil(() => events >= n * (2 + holdAfter), 'the bare streams to reach the hold');
  const during = await settledMemory();
  snapshot('bare-during');
  say({ type: 'release' });
  await Promise.all(streams);
  gc();
  const after = memory();
  say({
    type: 'result',
    mode: 'memory',
    kind: 'bare',
    sessions: n,
    half,
    before,
    halfway,
    during,
    after,
    events,
  });
}

async function memoryEngine(endpoint: string, n: number, chunks: number, holdAfter: number): Promise<void> {
  const db = tempDb();
  // With agent.event, to tell when every held stream has read up to its hold: garbage as soon as
  // counted, so not part of what a held session keeps.
  const r = await rig(endpoint, db.path, { events: new EventCounter(true) });
  try {
    await r.client.card();
    await r.engine.start();
    // Warm-up: a few whole turns, so compiled code and SQLite's first pages are in the baseline.
    await receiveAll(r.engine, 'warm', 50, '[chunks:20]');
    await r.events.until('turn.settled', 50);
    await r.engine.idle();
    r.events.reset();
    const updatesBefore = r.surface.updates;
    // `held` sessions have read every event before their hold (the task, its working status and
    // holdAfter chunks) and shown their answer: once at least, as the chunks read while the
    // task's record was on its way are shown in one update.
    const reachedHold = (held: number): boolean =>
      r.events.count('agent.event') >= held * (holdAfter + 2) && r.surface.updates - updatesBefore >= held;
    gc();
    const before = memory();
    const text = `[chunks:${chunks}][hold-after:${holdAfter}]`;
    const half = Math.floor(n / 2);
    await receiveAll(r.engine, 'held-a', half, text);
    await r.events.until('turn.accepted', half);
    await waitUntil(() => reachedHold(half), 'the first half of the sessions to reach the hold');
    const halfway = await settledMemory();
    snapshot('engine-halfway');
    await receiveAll(r.engine, 'held-b', n - half, text);
    await r.events.until('turn.accepted', n);
    await waitUntil(() => reachedHold(n), 'the sessions to reach the hold');
    const during = await settledMemory();
    snapshot('engine-during');
    say({ type: 'release' });
    await r.events.until('turn.settled', n);
    await r.engine.idle();
    gc();
    const after = memory();
    say({
      type: 'result',
      mode: 'memory',
      kind: 'engine',
      sessions: n,
      half,
      before,
      halfway,
      during,
      after,
      ...r.events.summary(),
    });
  } finally {
    await r.engine.stop();
    await r.store.close();
    db.remove();
  }
}

// ---- 3. resume after SIGKILL --------------------------------------------------------------------

async function load(
  endpoint: string,
  dbPath: string,
  n: number,
  holdAfter: number,
  owner?: string,
): Promise<void> {
  const r = await rig(endpoint, dbPath, owner === undefined ? {} : { owner });
  await r.engine.start();
  const started = performance.now();
  await receiveAll(r.engine, 'resume', n, `[chunks:50][hold-after:${holdAfter}]`);
  await r.events.until('turn.accepted', n);
  say({ type: 'accepted', sessions: n, ms: performance.now() - started });
  // Streams hang here until the parent kills this process.
  setInterval(() => undefined, 60_000);
}

async function recover(endpoint: string, dbPath: string, expect: number, owner?: string): Promise<void> {
  const calls = new Map<string, number>();
  // The engine's own timers are unref'd (a broker is kept alive by its chat surface and its
  // HTTP server); this process has neither, so it keeps itself alive while it waits.
  const keepAlive = setInterval(() => undefined, 60_000);
  // What the crash left (read before the engine starts; diagnosis only).
  const peek = new DatabaseSync(dbPath);
  let left: Record<string, unknown> = {};
  try {
    left = {
      ...peek
        .prepare(
          `SELECT count(*) AS open, sum(answer_ref IS NULL) AS withoutAnswerRef FROM turns WHERE state <> 'settled'`,
        )
        .get(),
    };
  } catch {
    // A fresh file: no tables yet.
  } finally {
    peek.close();
  }
  const r = await rig(endpoint, dbPath, {
    wrap: (s) => countingStore(s, calls),
    ...(owner === undefined ? {} : { owner }),
  });
  const startCalledAt = performance.now();
  let firstSettledAt: number | null = null;
  void r.events.until('turn.settled', 1).then(() => {
    firstSettledAt = performance.now();
  });
  await r.engine.start();
  const startReturnedAt = performance.now();
  await r.events.until('turn.settled', expect);
  const settledAt = performance.now();
  const cpu = process.cpuUsage();
  say({
    type: 'settled',
    // This process's CPU time from its start to all settled (module loading included).
    cpuMs: (cpu.user + cpu.system) / 1000,
    sessions: expect,
    // All in ms since this process started.
    scriptStartedAt,
    startCalledAt,
    startReturnedAt,
    firstSettledAt: expect === 0 ? null : firstSettledAt,
    settledAt,
    answerChars: r.events.answerChars,
    ...r.events.summary(),
    storeCalls: Object.fromEntries(calls),
    left,
  });
  clearInterval(keepAlive);
  await r.engine.stop();
  await r.store.close();
  process.exit(0);
}

// ---- main ---------------------------------------------------------------------------------------

const [mode, endpoint = '', ...args] = process.argv.slice(2);
const num = (i: number): number => Number(args[i]);
try {
  switch (mode) {
    case 'throughput':
      await throughput(endpoint, num(0), num(1), num(2));
      break;
    case 'tracing':
      await tracingCost(endpoint, num(0), num(1), num(2), args[3] === 'sdk');
      break;
    case 'pg':
      await pgThroughput(endpoint, args[0] ?? '', num(1), num(2), num(3));
      break;
    case 'latency':
      await latency(endpoint, num(0), num(1), args[2] === 'settled');
      break;
    case 'memory':
      if (args[0] === 'bare') await memoryBare(endpoint, num(1), num(2), num(3));
      else await memoryEngine(endpoint, num(1), num(2), num(3));
      break;
    case 'load':
      await load(endpoint, args[0] ?? '', num(1), num(2), args[3]);
      break;
    case 'recover':
      await recover(endpoint, args[0] ?? '', num(1), args[2]);
      break;
    case 'slack':
      // bench/slack-path.ts: the whole path through Slack against this file's engine round.
      await slackPath(
        {
          endpoint,
          fakeUrl: args[0] ?? '',
          botToken: args[1] ?? '',
          signingSecret: args[2] ?? '',
          sessions: num(3),
          chunks: num(4),
          rounds: num(5),
          engineRound: (e, n, chunks, round) => engineRound(e, n, chunks, round),
          gc,
          say,
        },
        tempDb,
      );
      break;
    default:
      throw new Error(`unknown mode ${mode}`);
  }
  if (mode !== 'load') process.exit(0);
} catch (error) {
  process.stderr.write(
    `engine-child ${mode}: ${error instanceof Error ? (error.stack ?? error.message) : error}\n`,
  );
  process.exit(1);
}
