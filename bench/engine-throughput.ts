/**
 * The engine benchmarks' throughput modes, run in the child (engine-child.ts): the
 * OpenTelemetry API without an SDK against no tracing, and two replicas on PostgreSQL against
 * the bare client.
 */
import { randomUUID } from 'node:crypto';
import type { A2AClient } from '../src/a2a/client.js';
import type { SessionEngine } from '../src/core/session/engine.js';
import type { SessionStore } from '../src/core/store.js';
import { answerAsked, eventsPerTurn } from './agent-server.js';
import {
  checkAnswers,
  countingStore,
  cpuSince,
  EventCounter,
  gc,
  newClient,
  receiveAll,
  rig,
  say,
  type Tracing,
  tempDb,
} from './engine-rig.js';

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

/** One bare round after a full collection; throws unless the client saw every event. */
async function measuredBareRound(
  client: A2AClient,
  n: number,
  chunks: number,
  expected: number,
): Promise<{ ms: number; cpuMs: number }> {
  gc();
  const b = await bareRound(client, n, chunks);
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

// ---- 1b. the OpenTelemetry API without an SDK ------------------------------------------------------

export async function tracingCost(
  endpoint: string,
  n: number,
  chunks: number,
  rounds: number,
): Promise<void> {
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
      const r = await engineRound(endpoint, n, chunks, `${tracing}${i}`, tracing);
      const used = process.cpuUsage(cpu);
      const into = tracing === 'none' ? none : api;
      into.ms.push(r.ms);
      into.cpuMs.push((used.user + used.system) / 1000);
    }
  }
  say({ type: 'result', mode: 'tracing', sessions: n, chunks, none, api });
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
  cpuMs: number;
}> {
  // A schema of its own per round: the same empty start as SQLite's fresh file.
  const schema = `bench_${round.replace(/[^a-z0-9]/gi, '_').toLowerCase()}_${process.pid}`;
  const events = new EventCounter();
  // Lease refusals of both replicas, counted by the store wrapper.
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
  const expected = n * eventsPerTurn(chunks, 'artifacts');
  const client = newClient(endpoint);
  await client.card();
  await bareRound(client, Math.min(n, 200), chunks);
  await pgRound(endpoint, connectionString, Math.min(n, 200), chunks, 'warm');
  const bare: number[] = [];
  const engine: number[] = [];
  let summary: Record<string, unknown> = {};
  let refused = 0;
  const cpuMs: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const b = await measuredBareRound(client, n, chunks, expected);
    bare.push(b.ms);
    gc();
    const e = await pgRound(endpoint, connectionString, n, chunks, `round${i}`);
    checkAnswers('the replicas', e.answerChars, n, chunks);
    engine.push(e.ms);
    summary = e.summary;
    refused = e.refused;
    cpuMs.push(e.cpuMs);
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
    cpuMs,
  });
}
