/**
 * The year benchmark's broker side (bench/year.ts), in its own process so its start, resident
 * memory and event loop are its own and it can be SIGKILLed. One SessionEngine on the year's
 * store (SQLite or PostgreSQL), wired as scale-child.ts wires it (questions time out after a
 * day); the agent server stays in the parent. JSON lines on stdout, as engine-child.ts speaks.
 *
 *   start <endpoint> <store> <json>: engine.start() on the store; `ready` when it returned, then
 *     (json.paused, json.streaming) `recovered` once the live sessions are, `memory`; then
 *     (json.replies) a reply in each of the oldest threads, their first chunks stamped
 *     (`release-stamped`), `replied` with the broker-added latency; then (json.sweep) a retention
 *     sweep while json.sweep.streams answers trickle, `swept`.
 *   load <endpoint> <store> <paused> <streaming>: the scale figure's live sessions (paused on a
 *     question, answers trickling); `loaded`, then held until killed.
 *   replica-latency <endpoint> <store> <owner> <sessions> <rounds>: one of two replicas on one
 *     PostgreSQL, each in its own process: per round its sessions' first chunks stamped, broker-
 *     added latency as `start` measures it; `accepted-<r>`, `stamped-<r>`, `settled-<r>` per round,
 *     then `result`.
 *   replica <endpoint> <store> <owner> <turns> <expect>: one replica; with turns > 0 it opens
 *     that many turns held mid-stream and says `accepted` (then is killed); with expect > 0 it
 *     waits for that many turns settled by it and says `settled`.
 *
 * <store> is `sqlite:<path>` or `postgres:<schema>:<connection string>`.
 */
import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';
import { trace } from '@opentelemetry/api';
import { systemClock } from '../src/core/clock.js';
import type { EngineEvent } from '../src/core/events.js';
import type { AgentRegistry, AgentRoute, ChatTarget, QuestionPrompt } from '../src/core/ports.js';
import type { RetentionStore } from '../src/core/retention-store.js';
import { RetentionSweeper } from '../src/core/retention-sweeper.js';
import { type Inbound, SessionEngine } from '../src/core/session/engine.js';
import { a2aDialect } from '../src/dialects/a2a.js';
import { OtelTurnTracer } from '../src/observability/turn-tracer.js';
import { PostgresStore } from '../src/store/postgres/postgres-store.js';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.js';
import { fullText } from './agent-server.js';
import { memory, waitUntil } from './engine-memory.js';
import { BINDING, gc, NullSurface, newClient, say } from './engine-rig.js';
import { watchStalls } from './stall-watch.js';
import { quantileOf, TURNS_PER_THREAD, threadOf, YEAR_KEY } from './year-store.js';

const scriptStartedAt = performance.now();
const QUESTION_TIMEOUT_MS = 24 * 3600 * 1000;

function inbound(thread: string, n: number, text: string): Inbound {
  return {
    kind: 'person',
    key: { ...YEAR_KEY, threadId: thread },
    binding: BINDING,
    chatMessageId: `${thread}.${n}`,
    actor: { id: 'U1', name: 'Ada', label: '[Bench: Ada (U1)]' },
    // The thread's name in the text: the agent server maps its task to the thread by it.
    text: `${text} <${thread}>`,
    addressed: true,
  };
}

class QuestionSurface extends NullSurface {
  override async askQuestion(_target: ChatTarget, prompt: QuestionPrompt): Promise<string | null> {
    return `question:${prompt.taskId}`;
  }
}

/** What the engine told: questions asked, turns accepted and settled (by turn, with outcome). */
class Sink {
  asked = 0;
  accepted = 0;
  readonly settled = new Map<string, { outcome: string; answerLength: number }>();
  emit(event: EngineEvent): void {
    if (event.type === 'question.asked') this.asked++;
    else if (event.type === 'turn.accepted') this.accepted++;
    else if (event.type === 'turn.settled')
      this.settled.set(event.turnId, { outcome: event.outcome, answerLength: event.answerLength });
  }
}

function openStore(spec: string): SqliteStore | PostgresStore {
  if (spec.startsWith('sqlite:')) return new SqliteStore(spec.slice('sqlite:'.length));
  const [, schema, ...rest] = spec.split(':');
  return new PostgresStore({ connectionString: rest.join(':'), schema: schema ?? 'public' });
}

async function build(endpoint: string, spec: string, owner?: string) {
  const store = openStore(spec);
  await store.migrate();
  const surface = new QuestionSurface();
  const sink = new Sink();
  const route: AgentRoute = {
    client: newClient(endpoint),
    dialect: a2aDialect,
    settings: { questionTimeoutMs: QUESTION_TIMEOUT_MS },
  };
  const registry: AgentRegistry = { resolve: (binding) => (binding === BINDING ? route : undefined) };
  const retention = store.retention();
  const engine = new SessionEngine({
    store,
    registry,
    surface,
    events: sink,
    forgotten: retention,
    // As the composition root wires it; no SDK is registered here, so the API is its no-op.
    tracer: new OtelTurnTracer(trace.getTracer('agentkourier.engine')),
    ...(owner === undefined ? {} : { owner }),
  });
  return { store, surface, sink, engine, retention };
}

async function settledMemory(): Promise<Record<string, number>> {
  gc();
  await new Promise((resolve) => setTimeout(resolve, 500));
  gc();
  return memory();
}

/** Stamps each turn's first update with its delay since the agent wrote it (the `[t:…]` mark). */
function stampLatency(surface: NullSurface, into: number[]): void {
  surface.onFirstUpdate = (view) => {
    const now = process.hrtime.bigint();
    const mark = /^\[t:(\d+)\]/.exec(view.text());
    if (mark !== null) into.push(Number(now - BigInt(mark[1] as string)) / 1e6);
  };
}

interface StartOptions {
  paused?: number;
  streaming?: number;
  /** Replies in the oldest threads, their first chunks stamped. */
  replies?: number;
  sweep?: { days: number; streams: number };
}

async function start(endpoint: string, spec: string, o: StartOptions): Promise<void> {
  const keepAlive = setInterval(() => undefined, 60_000);
  const { store, surface, sink, engine, retention } = await build(endpoint, spec);
  const startCalledAt = performance.now();
  await engine.start();
  say({ type: 'ready', scriptStartedAt, startCalledAt, startReturnedAt: performance.now() });
  const streaming = o.streaming ?? 0;
  if ((o.paused ?? 0) + streaming > 0) {
    await waitUntil(
      () => sink.settled.size >= streaming && engine.activeSessions === 0,
      'the live sessions recovered',
      120_000,
    );
    const outcomes = [...sink.settled.values()].filter((s) => s.outcome === 'completed').length;
    say({ type: 'recovered', at: performance.now(), completed: outcomes });
  }
  say({ type: 'memory', mem: await settledMemory(), rssNow: process.memoryUsage().rss });

  if (o.replies !== undefined && o.replies > 0) {
    const taken: number[] = [];
    stampLatency(surface, taken);
    const before = sink.settled.size;
    // Warm-up: the path compiled before anything is timed (threads of their own, settled).
    await Promise.all(
      Array.from({ length: 200 }, (_, i) => engine.receive(inbound(`warm-${i}`, 1, '[chunks:50]'))),
    );
    await waitUntil(() => sink.settled.size >= before + 200, 'the warm-up', 60_000);
    const accepted = sink.accepted;
    const threads = Array.from({ length: o.replies }, (_, i) => threadOf(i));
    // The next message of each thread (its stored turns are .1 and .2).
    await Promise.all(
      threads.map((t) => engine.receive(inbound(t, TURNS_PER_THREAD + 1, '[chunks:50][hold-after:0]'))),
    );
    await waitUntil(() => sink.accepted >= accepted + threads.length, 'the replies accepted', 60_000);
    say({ type: 'release-stamped', spreadMs: 1_000 });
    await waitUntil(() => taken.length >= threads.length, 'the stamped first chunks', 60_000);
    say({ type: 'release' });
    await waitUntil(() => sink.settled.size >= before + 200 + threads.length, 'the replies settled', 60_000);
    const sorted = [...taken].sort((a, b) => a - b);
    surface.onFirstUpdate = undefined;
    say({
      type: 'replied',
      samples: sorted.length,
      p50: quantileOf(sorted, 0.5),
      p99: quantileOf(sorted, 0.99),
      max: sorted.at(-1) ?? Number.NaN,
    });
  }

  if (o.sweep !== undefined) {
    const streams = o.sweep.streams;
    // Answers that trickle a chunk every 33 ms through the whole sweep (enough chunks to outlast
    // the longest sweep measured), held after their last but one until the parent releases them;
    // the release sends what is left at once, which after a short sweep is most of it.
    const before = sink.settled.size;
    const accepted = sink.accepted;
    const streamThreads = Array.from({ length: streams }, (_, i) => `sweep-stream-${i}`);
    const updatesBefore = surface.updates;
    await Promise.all(
      streamThreads.map((t) => engine.receive(inbound(t, 1, '[chunks:40000][hold-after:1][trickle-ms:33]'))),
    );
    await waitUntil(() => sink.accepted >= accepted + streams, 'the streams accepted', 60_000);
    await waitUntil(() => surface.updates >= updatesBefore + streams * 5, 'the streams going', 60_000);
    // The event loop's delay while the sweep runs: what a turn, an ack or an edit waits behind it.
    const loop = monitorEventLoopDelay({ resolution: 10 });
    const batches: number[] = [];
    // Every batch timed (threads forgotten, words cleared); the rest of the store as it is.
    const timedBatch =
      <A extends unknown[]>(run: (...args: A) => Promise<unknown>) =>
      async (...args: A) => {
        const t0 = performance.now();
        const out = await run(...args);
        batches.push(performance.now() - t0);
        return out;
      };
    const batched: Partial<RetentionStore> = {
      forgetIdleThreads: timedBatch((b: number, limit: number, now: number) =>
        retention.forgetIdleThreads(b, limit, now),
      ) as RetentionStore['forgetIdleThreads'],
      clearSettledWords: timedBatch((b: number, limit: number) =>
        retention.clearSettledWords(b, limit),
      ) as RetentionStore['clearSettledWords'],
    };
    const timed = new Proxy(retention, {
      get(target, name, receiver) {
        const own = batched[name as keyof RetentionStore];
        if (own !== undefined) return own;
        const value: unknown = Reflect.get(target, name, receiver);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const sweeper = new RetentionSweeper(timed, { days: o.sweep.days }, systemClock, {
      swept: () => undefined,
      measured: () => undefined,
      failed: (error) => {
        throw error;
      },
    });
    const updates0 = surface.updates;
    loop.enable();
    const cpu = process.cpuUsage();
    const t0 = performance.now();
    const totals = await sweeper.sweep();
    const sweepMs = performance.now() - t0;
    const used = process.cpuUsage(cpu);
    loop.disable();
    const updatesDuring = surface.updates - updates0;
    say({ type: 'release' });
    await waitUntil(() => sink.settled.size >= before + streams, 'the streams settled', 300_000);
    const settled = [...sink.settled.values()].slice(-streams);
    const sortedBatches = [...batches].sort((a, b) => a - b);
    say({
      type: 'swept',
      totals,
      sweepMs,
      cpuMs: (used.user + used.system) / 1000,
      batches: batches.length,
      batchP50: quantileOf(sortedBatches, 0.5),
      batchP99: quantileOf(sortedBatches, 0.99),
      batchMax: sortedBatches.at(-1) ?? 0,
      loopP99: loop.percentile(99) / 1e6,
      loopMax: loop.max / 1e6,
      loopMean: loop.mean / 1e6,
      updatesDuring,
      streamsCompleted: settled.filter((s) => s.outcome === 'completed').length,
      size: await retention.size(),
    });
  }
  clearInterval(keepAlive);
  await engine.stop();
  await store.close();
}

async function load(endpoint: string, spec: string, paused: number, streaming: number): Promise<void> {
  const { sink, engine, surface } = await build(endpoint, spec);
  await engine.start();
  const started = performance.now();
  const slice = 1_000;
  for (let from = 0; from < paused; from += slice) {
    const n = Math.min(slice, paused - from);
    await Promise.all(
      Array.from({ length: n }, (_, i) => engine.receive(inbound(`q-${from + i}`, 1, '[ask]'))),
    );
    await waitUntil(() => sink.asked >= from + n && engine.activeSessions === 0, 'the questions', 120_000);
  }
  for (let from = 0; from < streaming; from += slice) {
    const n = Math.min(slice, streaming - from);
    await Promise.all(
      Array.from({ length: n }, (_, i) =>
        engine.receive(inbound(`s-${from + i}`, 1, '[chunks:300][hold-after:5][trickle-ms:1000]')),
      ),
    );
    await waitUntil(() => sink.accepted >= paused + from + n, 'the streams accepted', 120_000);
  }
  const updates = surface.updates;
  await waitUntil(() => surface.updates >= updates + streaming, 'the trickled chunks', 120_000);
  say({ type: 'loaded', ms: performance.now() - started, asked: sink.asked, accepted: sink.accepted });
  setInterval(() => undefined, 60_000);
}

/**
 * One replica of two, in its own process as in a cluster: `rounds` rounds of `n` new threads,
 * its half of each round's sessions (the other replica takes the other half), their first chunks
 * stamped once the parent has both replicas' `accepted`. Per round: `accepted`, then `stamped`
 * with this replica's samples, then `settled`; the parent releases the answers in between. What
 * this process waited behind meanwhile (its event loop, its collector) comes with the samples.
 */
async function replicaLatency(endpoint: string, spec: string, owner: string, n: number, rounds: number) {
  const r = await build(endpoint, spec, owner);
  const taken: number[] = [];
  stampLatency(r.surface, taken);
  const run = `${Date.now().toString(36)}-${owner}`;
  try {
    await r.engine.start();
    // Warm-up: whole turns, so the path is compiled before anything is timed.
    await Promise.all(
      Array.from({ length: 100 }, (_, i) => r.engine.receive(inbound(`rwarm-${run}-${i}`, 1, '[chunks:50]'))),
    );
    await waitUntil(() => r.sink.settled.size >= 100, 'the warm-up', 60_000);
    const loop = monitorEventLoopDelay({ resolution: 10 });
    const pauses: number[] = [];
    const gcs = new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) pauses.push(entry.duration);
    });
    gcs.observe({ entryTypes: ['gc'] });
    loop.enable();
    // Stalls while this round's first chunks arrive: own work, or waiting for a core.
    const inWindow = watchStalls(10);
    for (let round = 0; round < rounds; round++) {
      const before = taken.length;
      const acc = r.sink.accepted;
      const set = r.sink.settled.size;
      await Promise.all(
        Array.from({ length: n }, (_, i) =>
          r.engine.receive(inbound(`rlat-${run}-${round}-${i}`, 1, '[chunks:50][hold-after:0]')),
        ),
      );
      await waitUntil(() => r.sink.accepted >= acc + n, 'the turns accepted', 60_000);
      // Per round: the parent's next() finds a type's first line, so each round names its own.
      say({ type: `accepted-${round}` });
      inWindow.start();
      await waitUntil(() => taken.length >= before + n, 'the stamped first chunks', 60_000);
      inWindow.stop();
      say({ type: `stamped-${round}` });
      await waitUntil(() => r.sink.settled.size >= set + n, 'the turns settled', 60_000);
      say({ type: `settled-${round}` });
    }
    loop.disable();
    gcs.disconnect();
    say({
      type: 'result',
      samples: taken,
      loopMax: loop.max / 1e6,
      gcMax: Math.max(0, ...pauses),
      gcTotal: pauses.reduce((sum, d) => sum + d, 0),
      stalls: inWindow.stalls,
    });
  } finally {
    await r.engine.stop();
    await r.store.close();
  }
}

async function replica(endpoint: string, spec: string, owner: string, turns: number, expect: number) {
  const keepAlive = setInterval(() => undefined, 60_000);
  const r = await build(endpoint, spec, owner);
  await r.engine.start();
  if (turns > 0) {
    await Promise.all(
      Array.from({ length: turns }, (_, i) =>
        r.engine.receive(inbound(`kill-${i}`, 1, '[chunks:50][hold-after:5]')),
      ),
    );
    await waitUntil(() => r.sink.accepted >= turns, 'the turns accepted', 60_000);
    await waitUntil(() => r.surface.updates >= turns, 'the turns streaming', 60_000);
    say({ type: 'accepted' });
    return; // held until killed
  }
  say({ type: 'standing-by' });
  await waitUntil(() => r.sink.settled.size >= expect, 'the turns taken over', 300_000);
  const answer = fullText(50).length;
  const settled = [...r.sink.settled.values()];
  say({
    type: 'settled',
    completed: settled.filter((s) => s.outcome === 'completed' && s.answerLength === answer).length,
    outcomes: settled.map((s) => s.outcome).filter((o) => o !== 'completed'),
    accepted: r.sink.accepted,
  });
  clearInterval(keepAlive);
  await r.engine.stop();
  await r.store.close();
}

const [mode, endpoint = '', spec = '', ...rest] = process.argv.slice(2);
try {
  if (mode === 'start') await start(endpoint, spec, JSON.parse(rest[0] ?? '{}') as StartOptions);
  else if (mode === 'load') await load(endpoint, spec, Number(rest[0]), Number(rest[1]));
  else if (mode === 'replica-latency')
    await replicaLatency(endpoint, spec, rest[0] ?? 'replica', Number(rest[1]), Number(rest[2]));
  else if (mode === 'replica')
    await replica(endpoint, spec, rest[0] ?? 'replica', Number(rest[1]), Number(rest[2]));
  else throw new Error(`unknown mode ${mode}`);
  if (mode !== 'load' && !(mode === 'replica' && Number(rest[1]) > 0)) process.exit(0);
} catch (error) {
  process.stderr.write(
    `year-child ${mode}: ${error instanceof Error ? (error.stack ?? error.message) : error}\n`,
  );
  process.exit(1);
}
