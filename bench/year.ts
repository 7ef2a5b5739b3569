/**
 * A year on one replica (issue 49), on SQLite and on PostgreSQL: a store holding a year of settled
 * threads (BENCH_YEAR_THREADS, default 1,000,000, written straight into the store's tables by
 * year-store.ts), nine in ten of them idle past the retention's 90 days, and on top the scale
 * figure's 10,000 threads paused on a question and 1,000 answers streaming (loaded through the
 * engine, then the broker SIGKILLed). Its broker runs in a child (year-child.ts).
 *
 * - start → Ready: a new process on that store, spawn → engine.start() returned (< 10 s), and
 *   until every live session is recovered;
 * - resident memory over the same broker on an empty store (≤ 64 MiB), after a full collection,
 *   the million alone;
 * - a reply in each of the 1,000 oldest threads: it goes on in the thread's A2A context, and the
 *   broker-added latency of its first chunk, as the engine part measures it (p99 < 25 ms);
 * - a retention sweep that forgets the 900,000 idle threads while 50 answers stream: how long,
 *   its batches, the event loop's longest stall meanwhile, every answer whole;
 * - bytes per settled thread on disk, with its words and after they are dropped, and what
 *   happens to the space the sweep frees (SQLite's free pages, PostgreSQL's dead rows).
 *
 * On PostgreSQL also what an operator of two replicas notices: broker-added latency at 1,000
 * sessions with two replicas (p99 < 25 ms), and a replica SIGKILLed mid-turn: the other finishes
 * its turns (< 10 s from the kill) with no turn run twice.
 *
 * BENCH_YEAR_STORES=sqlite (or postgres) runs one store only.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PostgresStore } from '../src/store/postgres/postgres-store.js';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.js';
import { startPostgres } from '../testkit/postgres.js';
import { type AgentServer, startAgentServer } from './agent-server.js';
import { type Child, fmt, runChild } from './engine-children.js';
import { figure } from './figures.js';
import { describeStalls, type Stall } from './stall-watch.js';
import {
  generatePostgres,
  generateSqlite,
  postgresBytes,
  postgresExec,
  quantileOf,
  sqliteExec,
  sqliteSize,
  TURNS_PER_THREAD,
  threadOf,
} from './year-store.js';

const PAUSED = 10_000;
const STREAMING = 1_000;
const REPLIES = 1_000;
const SWEEP_STREAMS = 50;
const RETENTION_DAYS = 90;
/** Turns a killed replica leaves mid-stream for the other to finish. */
const KILLED_TURNS = 1_000;
/** Two replicas' latency: sessions open at once (half on each), and rounds of them. */
const REPLICA_SESSIONS = 1_000;
const REPLICA_ROUNDS = 2;

const MIB = 2 ** 20;
const mib = (bytes: number): string => (bytes / MIB).toFixed(0);

/** A store the year is written to, in its database's own terms. */
interface Target {
  kind: 'sqlite' | 'postgres';
  /** The child's <store> argument. */
  spec: string;
  migrate(): Promise<void>;
  generate(count: number, old: number, now: number, first: number): Promise<void>;
  /** On disk, as the database counts it (SQLite: its pages, free ones included). */
  bytes(): Promise<number>;
  /** What the database says of its space: free pages and file, or relation sizes. */
  space(): Promise<string>;
  /** Gives the space back (SQLite VACUUM, PostgreSQL VACUUM FULL). */
  compact(): Promise<void>;
  /** Makes dead rows' space reusable without giving it back (PostgreSQL's VACUUM); SQLite: nothing to do. */
  reclaim(): Promise<void>;
  exec(sql: string): Promise<void>;
}

function sqliteTarget(path: string): Target {
  return {
    kind: 'sqlite',
    spec: `sqlite:${path}`,
    migrate: async () => {
      const s = new SqliteStore(path);
      await s.migrate();
      await s.close();
    },
    generate: async (count, old, now, first) => generateSqlite(path, count, old, now, first),
    bytes: async () => {
      const s = sqliteSize(path);
      return s.pages * s.pageSize;
    },
    space: async () => {
      const s = sqliteSize(path);
      return `file ${mib(s.fileBytes)} MiB, ${fmt(s.pages)} pages of ${s.pageSize} B, ${fmt(s.free)} free (${mib(s.free * s.pageSize)} MiB)`;
    },
    compact: async () => sqliteExec(path, 'VACUUM'),
    reclaim: async () => undefined,
    exec: async (sql) => sqliteExec(path, sql),
  };
}

function postgresTarget(connectionString: string, schema: string): Target {
  return {
    kind: 'postgres',
    spec: `postgres:${schema}:${connectionString}`,
    migrate: async () => {
      const s = new PostgresStore({ connectionString, schema });
      await s.migrate();
      await s.close();
    },
    generate: (count, old, now, first) => generatePostgres(connectionString, schema, count, old, now, first),
    bytes: () => postgresBytes(connectionString, schema),
    space: async () =>
      `tables with indexes and TOAST ${mib(await postgresBytes(connectionString, schema))} MiB`,
    compact: () => postgresExec(connectionString, schema, 'VACUUM FULL'),
    reclaim: () => postgresExec(connectionString, schema, 'VACUUM'),
    exec: (sql) => postgresExec(connectionString, schema, sql),
  };
}

class YearCheckError extends Error {
  override readonly name = 'YearCheckError';
}

const children: Child[] = [];

function yearChild(server: AgentServer, args: string[]): Child {
  const child = runChild(
    [args[0] as string, server.endpoint, ...args.slice(1)],
    (m) => {
      if (m.type === 'release-stamped') server.releaseStamped(m.spreadMs as number);
      if (m.type === 'release') server.release();
    },
    [],
    'year-child.ts',
  );
  children.push(child);
  return child;
}

async function killAll(): Promise<void> {
  for (const child of children.splice(0)) {
    if (child.proc.exitCode === null && child.proc.signalCode === null) child.proc.kill('SIGKILL');
    await child.exited;
  }
}

type Mem = Record<string, number>;

/** A broker started on the store and nothing else: spawn → Ready, and its memory after a collection. */
async function startOnly(server: AgentServer, t: Target): Promise<{ readyMs: number; mem: Mem }> {
  const child = yearChild(server, ['start', t.spec, '{}']);
  const { at } = await child.next('ready', 120_000);
  const { message } = await child.next('memory', 60_000);
  await child.exited;
  return { readyMs: at - child.spawnedAt, mem: message.mem as Mem };
}

const perThread = (bytes: number, threads: number): string => fmt(bytes / threads);

async function yearOn(server: AgentServer, t: Target, empty: Target, threads: number): Promise<void> {
  const id = `year.${t.kind}`;
  const old = Math.round(threads * 0.9);
  const began = performance.now();
  await empty.migrate();
  const bare = await startOnly(server, empty);
  const emptyBytes = await empty.bytes();

  await t.migrate();
  const now = Date.now();
  const genStarted = performance.now();
  await t.generate(threads, old, now, 0);
  const genMs = performance.now() - genStarted;
  const withWords = await t.bytes();
  const million = await startOnly(server, t);

  // The scale figure's live sessions, through the engine; then the broker is killed mid-stream
  // and the agent finishes the streams while it is down.
  const loader = yearChild(server, ['load', t.spec, String(PAUSED), String(STREAMING)]);
  const { message: loaded } = await loader.next('loaded', 600_000);
  loader.proc.kill('SIGKILL');
  await loader.exited;
  server.completeAll();

  const tasksBefore = server.tasks().length;
  const options = {
    paused: PAUSED,
    streaming: STREAMING,
    replies: REPLIES,
    sweep: { days: RETENTION_DAYS, streams: SWEEP_STREAMS },
  };
  const year = yearChild(server, ['start', t.spec, JSON.stringify(options)]);
  const { at: readyAt } = await year.next('ready', 120_000);
  const { at: recoveredAt, message: recovered } = await year.next('recovered', 180_000);
  const { message: memory } = await year.next('memory', 60_000);
  const { message: replied } = await year.next('replied', 300_000);
  const { message: swept } = await year.next('swept', 3_600_000);
  await year.exited;
  // The replies went to the tasks of their own contexts.
  const replyTasks = server
    .tasks()
    .slice(tasksBefore)
    .filter((task) => /<y-\d+>/.test(task.text));
  const outOfContext = replyTasks.filter(
    (task) => task.contextId !== `yctx-${/<y-(\d+)>/.exec(task.text)?.[1]}`,
  );
  if (replyTasks.length !== REPLIES || outOfContext.length > 0)
    throw new YearCheckError(
      `${replyTasks.length} replies reached the agent, ${outOfContext.length} outside their thread's context`,
    );
  if ((recovered.completed as number) < STREAMING)
    throw new YearCheckError(`${recovered.completed} of ${STREAMING} streams completed after the restart`);
  const totals = swept.totals as Record<string, number>;
  // The oldest threads, replied to, are idle no more.
  if (totals.threads !== old - REPLIES)
    throw new YearCheckError(
      `the sweep forgot ${totals.threads} threads, ${old - REPLIES} were idle past the cut`,
    );
  if (swept.streamsCompleted !== SWEEP_STREAMS)
    throw new YearCheckError(
      `${swept.streamsCompleted} of ${SWEEP_STREAMS} answers streamed during the sweep completed`,
    );

  const afterSweep = await t.bytes();
  const spaceAfterSweep = await t.space();
  await t.reclaim();
  const reclaimed = await t.bytes();
  // Do the freed pages (rows) take new threads before the store grows? A tenth of the year again.
  const again = Math.round(threads / 10);
  await t.generate(again, 0, Date.now(), threads);
  const afterReuse = await t.bytes();
  const spaceAfterReuse = await t.space();
  // Bytes per settled thread, compacted, with the words and with them dropped (what erasure
  // leaves of a turn: ids and state).
  const kept = threads - old + REPLIES + again;
  // The forgotten marks are no settled thread's bytes.
  await t.exec('DELETE FROM forgotten_threads');
  await t.compact();
  const compactWords = await t.bytes();
  await t.exec(
    `UPDATE turns SET text = '', label = NULL, metadata = NULL WHERE session_id LIKE 'bench:T1:C1:y-%'`,
  );
  await t.compact();
  const compactNoWords = await t.bytes();
  // What the live sessions, the replies' and the sweep's threads add is counted with the kept ones:
  // small against them.
  const live = PAUSED + STREAMING + 200 + SWEEP_STREAMS;

  console.log(
    `\nA year on one replica, ${t.kind === 'sqlite' ? 'SQLite' : 'PostgreSQL (durable)'}: ${fmt(threads)} settled threads of` +
      ` ${TURNS_PER_THREAD} turns (${fmt(old)} idle past ${RETENTION_DAYS} days), written in ${fmt(genMs / 1000)} s;` +
      ` then ${fmt(PAUSED)} paused on a question and ${fmt(STREAMING)} streaming, loaded in ${fmt((loaded.ms as number) / 1000)} s and killed`,
  );
  const readyMs = readyAt - year.spawnedAt;
  const readyVerdict = figure(
    `${id}.ready.ms`,
    `spawn → Ready (engine started) on ${fmt(threads)} settled threads and ${fmt(PAUSED + STREAMING)} live`,
    readyMs,
    'ms',
    { op: '<', value: 10_000 },
  );
  console.log(
    `  spawn → Ready ${fmt(readyMs)} ms ${readyVerdict}; → every live session recovered ${fmt(recoveredAt - year.spawnedAt)} ms` +
      ` (on the empty store: Ready ${fmt(bare.readyMs)} ms; the million alone: ${fmt(million.readyMs)} ms)`,
  );
  const over = (million.mem.rss as number) - (bare.mem.rss as number);
  const rssVerdict = figure(
    `${id}.rss.over-empty`,
    `resident memory of a broker on ${fmt(threads)} settled threads over the same broker on an empty store`,
    over / MIB,
    'MiB',
    { op: '<=', value: 64 },
  );
  const mem = memory.mem as Mem;
  console.log(
    `  resident after a collection: empty store ${mib(bare.mem.rss as number)} MiB, ${fmt(threads)} settled threads` +
      ` ${mib(million.mem.rss as number)} MiB: ${(over / MIB).toFixed(1)} MiB more ${rssVerdict};` +
      ` with the ${fmt(PAUSED + STREAMING)} live ones recovered ${mib(mem.rss as number)} MiB (heap used ${mib(mem.heapUsed as number)} MiB)`,
  );
  const replyVerdict = figure(
    `${id}.reply.latency.p99`,
    `broker-added latency of a reply in each of the ${fmt(REPLIES)} oldest threads, p99`,
    replied.p99 as number,
    'ms',
    { op: '<', value: 25 },
  );
  console.log(
    `  a reply in each of the ${fmt(REPLIES)} oldest threads (${threadOf(0)}…, idle a year), sent in its thread's context:` +
      ` first chunk on the socket → surface call p50 ${(replied.p50 as number).toFixed(2)} ms,` +
      ` p99 ${(replied.p99 as number).toFixed(2)} ms ${replyVerdict}, max ${(replied.max as number).toFixed(1)} ms`,
  );
  const stallVerdict = figure(
    `${id}.sweep.stall.max`,
    `the event loop's longest stall during the sweep of ${fmt(old)} threads (the ack's whole goal is 200 ms)`,
    swept.loopMax as number,
    'ms',
    { op: '<', value: 200 },
  );
  console.log(
    `  the sweep forgot ${fmt(totals.threads ?? 0)} threads, ${fmt(totals.turns ?? 0)} turns, ${fmt(totals.feedback ?? 0)} feedback presses in ${fmt((swept.sweepMs as number) / 1000)} s` +
      ` (CPU ${fmt((swept.cpuMs as number) / 1000)} s, ${fmt(swept.batches as number)} batches: p50 ${(swept.batchP50 as number).toFixed(1)} ms,` +
      ` p99 ${(swept.batchP99 as number).toFixed(1)} ms, max ${(swept.batchMax as number).toFixed(1)} ms)` +
      ` while ${SWEEP_STREAMS} answers streamed (${fmt(swept.updatesDuring as number)} surface updates meanwhile, every answer whole)`,
  );
  console.log(
    `    event loop delay during it: mean ${(swept.loopMean as number).toFixed(1)} ms, p99 ${(swept.loopP99 as number).toFixed(1)} ms,` +
      ` longest ${(swept.loopMax as number).toFixed(1)} ms ${stallVerdict}`,
  );
  console.log(
    `  bytes per settled thread on disk: ${perThread(withWords - emptyBytes, threads)} B as written;` +
      ` compacted ${perThread(compactWords - emptyBytes, kept + live)} B with the words,` +
      ` ${perThread(compactNoWords - emptyBytes, kept + live)} B after the words are dropped`,
  );
  console.log(
    `  the space: ${mib(withWords)} MiB before the sweep; after it ${mib(afterSweep)} MiB (${spaceAfterSweep})` +
      (t.kind === 'postgres' ? `; after VACUUM ${mib(reclaimed)} MiB` : '') +
      `; ${fmt(again)} new threads then took ${mib(afterReuse - reclaimed)} MiB more (${spaceAfterReuse});` +
      ` ${t.kind === 'sqlite' ? 'VACUUM' : 'VACUUM FULL'} gave back ${mib(afterReuse - compactWords)} MiB.` +
      ` Run time ${fmt((performance.now() - began) / 1000)} s`,
  );
}

/** Two replicas on PostgreSQL: broker-added latency at 1,000 sessions, and a replica killed mid-turn. */
async function replicasOn(server: AgentServer, t: Target): Promise<void> {
  // Two replicas, each its own process as in a cluster, each given half of every round's new
  // threads (as a load balancer in front of two pods would); the parent releases the stamped first
  // chunks once both have accepted theirs, and the answers once both have stamped.
  const half = REPLICA_SESSIONS / 2;
  const replicas = ['replica-a', 'replica-b'].map((owner) =>
    yearChild(server, ['replica-latency', t.spec, owner, String(half), String(REPLICA_ROUNDS)]),
  );
  for (let round = 0; round < REPLICA_ROUNDS; round++) {
    for (const r of replicas) await r.next(`accepted-${round}`, 120_000);
    server.releaseStamped(1_000);
    for (const r of replicas) await r.next(`stamped-${round}`, 120_000);
    server.release();
    for (const r of replicas) await r.next(`settled-${round}`, 120_000);
  }
  const results = [];
  for (const r of replicas) {
    results.push((await r.next('result', 60_000)).message);
    await r.exited;
  }
  const sorted = results.flatMap((m) => m.samples as number[]).sort((x, y) => x - y);
  const p99 = quantileOf(sorted, 0.99);
  const latencyVerdict = figure(
    'year.postgres.replicas.latency.p99',
    'broker-added latency, two replicas (two processes) on PostgreSQL, 1,000 open sessions, p99',
    p99,
    'ms',
    { op: '<', value: 25 },
  );
  console.log(
    `\nTwo replicas on PostgreSQL (two processes, two lease owners, one database), the year's store:`,
  );
  console.log(
    `  broker-added latency, ${fmt(REPLICA_SESSIONS)} sessions open, half on each (${fmt(sorted.length)} turns):` +
      ` p50 ${quantileOf(sorted, 0.5).toFixed(2)} ms, p99 ${p99.toFixed(2)} ms ${latencyVerdict},` +
      ` max ${(sorted.at(-1) ?? Number.NaN).toFixed(1)} ms; meanwhile, per replica, the event loop's longest delay` +
      ` ${results.map((m) => (m.loopMax as number).toFixed(1)).join(' / ')} ms, the longest GC pause` +
      ` ${results.map((m) => (m.gcMax as number).toFixed(1)).join(' / ')} ms`,
  );
  console.log(
    `  while the first chunks arrived, per replica, its event loop's stalls over 10 ms: ` +
      results.map((m) => describeStalls(m.stalls as Stall[])).join('; '),
  );
  // Replica A opens turns and holds them mid-stream; then replica B starts and stands by (its
  // scan finds A's live leases and leaves them: started first, it would take some of A's new
  // threads before A's leases were written, which is a replica's right but not this figure);
  // A is killed while they stream, the agent finishes them meanwhile, B finishes them for the
  // threads.
  const doomed = yearChild(server, ['replica', t.spec, 'replica-a', String(KILLED_TURNS), '0']);
  await doomed.next('accepted', 120_000);
  const standby = yearChild(server, ['replica', t.spec, 'replica-b', '0', String(KILLED_TURNS)]);
  await standby.next('standing-by', 60_000);
  const sends = server.calls.SendStreamingMessage ?? 0;
  const killedAt = performance.now();
  doomed.proc.kill('SIGKILL');
  await doomed.exited;
  server.completeAll();
  const { message: settled, at } = await standby.next('settled', 300_000);
  await standby.exited;
  const takeoverMs = at - killedAt;
  const resent = (server.calls.SendStreamingMessage ?? 0) - sends;
  const killTasks = server.tasks().filter((task) => /<kill-\d+>/.test(task.text)).length;
  const takeoverVerdict = figure(
    'year.postgres.takeover.ms',
    `a replica SIGKILLed mid-turn: kill → all its ${fmt(KILLED_TURNS)} turns finished by the other`,
    takeoverMs,
    'ms',
    { op: '<', value: 10_000 },
  );
  const twice = resent + Math.max(0, killTasks - KILLED_TURNS) + (settled.accepted as number);
  const twiceVerdict = figure(
    'year.postgres.takeover.duplicates',
    'turns run twice after the takeover (a message sent again, a second task, a turn accepted again)',
    twice,
    'turns',
    { op: '<=', value: 0 },
  );
  console.log(
    `  replica A SIGKILLed with ${fmt(KILLED_TURNS)} turns mid-stream, the agent finishing them meanwhile:` +
      ` kill → all finished by replica B ${fmt(takeoverMs)} ms ${takeoverVerdict};` +
      ` ${fmt(settled.completed as number)} completed whole; run twice ${twice} ${twiceVerdict}` +
      ` (messages sent again ${resent}, tasks ${fmt(killTasks)})`,
  );
}

export async function benchYear(): Promise<void> {
  const threads = Number(process.env.BENCH_YEAR_THREADS ?? 1_000_000);
  const stores = (process.env.BENCH_YEAR_STORES ?? 'sqlite,postgres').split(',');
  const server = await startAgentServer();
  const dir = mkdtempSync(join(tmpdir(), 'ak-bench-year-'));
  try {
    if (stores.includes('sqlite')) {
      await yearOn(server, sqliteTarget(join(dir, 'year.db')), sqliteTarget(join(dir, 'empty.db')), threads);
      await killAll();
    }
    if (stores.includes('postgres')) {
      let pg: Awaited<ReturnType<typeof startPostgres>>;
      try {
        // Durable, as in production: every commit fsynced.
        pg = await startPostgres({ durable: true });
      } catch (error) {
        console.log(`\nA year on PostgreSQL: not measured (${String(error).split('\n')[0]})`);
        return;
      }
      try {
        const year = postgresTarget(pg.connectionString, 'year');
        await yearOn(server, year, postgresTarget(pg.connectionString, 'empty'), threads);
        await replicasOn(server, year);
      } finally {
        await killAll();
        await pg.stop();
      }
    }
  } finally {
    await killAll();
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.main) await benchYear();
