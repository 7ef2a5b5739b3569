/**
 * Engine benchmarks: the session engine with 1,000 concurrent sessions. The agent server runs
 * here, in the parent; the broker side runs in a child process (bench/engine-child.ts), so its
 * time and resident memory are its own, and it can be SIGKILLed. Goals are recorded with each
 * figure (figures.ts) and listed in docs/performance.md.
 *
 * 4. Throughput: the same 1,000 streams of 50 (and 500) chunks through the bare A2AClient and
 *    through SessionEngine on SQLite, with the store calls a turn makes.
 * 4c. The same on PostgreSQL with two replicas: two engines, two stores, two lease owners, one
 *    durable database started for the run (testkit/postgres.ts), half the threads each; with
 *    the store calls, PostgreSQL round trips and durable commits per turn (bench/pg-counts.ts).
 * 4d. Latency: from the agent writing a turn's first artifact event to the socket to the
 *    surface's update call, at 1 and at 1,000 open sessions (p50, p99).
 * 4b. Tracing: the OpenTelemetry API without an SDK (OTEL_* unset) against no tracing code at
 *    all, and the SDK exporting to a receiver on loopback against the same.
 * 5. Resident memory per streaming session: sessions held mid-stream, memory read with half and
 *    with all of them held; the figure is what each session added in between.
 * 6. Resume after SIGKILL: 10,000 turns accepted with their streams hanging, the process killed,
 *    the agent finishing meanwhile; a new process recovers them all, next to the same process
 *    starting and settling nothing.
 *
 * Split by what each part does: engine-children.ts runs the child and holds what the printing
 * shares; engine-resources.ts measures memory (5) and resume (6); the rest is here.
 */
import { startPostgres } from '../testkit/postgres.js';
import { type AgentServer, SHAPE, startAgentServer } from './agent-server.js';
import { fmt, kib, median, runChild, SESSIONS, spansOf, WHICH } from './engine-children.js';
import { benchMemory, benchResume } from './engine-resources.js';
import { figure } from './figures.js';
import { pairRatios } from './paired.js';

/**
 * BENCH_SHAPE=kagent (agent-server.ts): the throughput figures are recorded under ids of their
 * own and without the goals, which are stated for artifact chunks.
 */
const SHAPE_ID = SHAPE === 'kagent' ? '.kagent' : '';
const SHAPED = SHAPE === 'kagent' ? ', answered as kagent streams (every chunk a status update)' : '';

import type { StallReport } from './stalls.js';

// ---- 4. throughput ------------------------------------------------------------------------------

async function benchThroughput(server: AgentServer, chunks: number): Promise<void> {
  const rounds = 3;
  const child = runChild(['throughput', server.endpoint, String(SESSIONS), String(chunks), String(rounds)]);
  const { message } = await child.next('result');
  await child.exited;
  const bare = message.bare as number[];
  const engine = message.engine as number[];
  const events = message.eventsPerRound as number;
  const bestBare = Math.min(...bare);
  const bestEngine = Math.min(...engine);
  const ratio = bestBare / bestEngine;
  console.log(
    `\nEngine throughput: ${fmt(SESSIONS)} concurrent sessions, one streamed turn of ${chunks} chunks each` +
      `${SHAPED} (${fmt(events)} events per round; best of ${rounds}, interleaved)`,
  );
  console.log(
    `  bare A2AClient, ${fmt(SESSIONS)} concurrent streams drained: ${fmt((events / bestBare) * 1000)} events/s` +
      ` (${bestBare.toFixed(0)} ms; rounds ${bare.map((x) => x.toFixed(0)).join(', ')} ms)`,
  );
  console.log(
    `  SessionEngine on SQLite, receive → all turn.settled: ${fmt((events / bestEngine) * 1000)} events/s` +
      ` (${bestEngine.toFixed(0)} ms; rounds ${engine.map((x) => x.toFixed(0)).join(', ')} ms)`,
  );
  const goal = chunks <= 50 ? 0.8 : 0.9;
  const verdictText = figure(
    `engine.sqlite.${chunks}${SHAPE_ID}`,
    `engine on SQLite against the bare client, ${fmt(SESSIONS)} sessions × ${chunks} chunks${SHAPED}`,
    ratio,
    'ratio',
    ...(SHAPE === 'kagent' ? [] : [{ op: '>=' as const, value: goal }]),
  );
  console.log(`  ratio engine/bare: ${ratio.toFixed(2)} ${verdictText}`);
  const bareCpu = message.bareCpu as number[];
  const engineCpu = message.engineCpu as number[];
  const cpuRatio = Math.min(...bareCpu) / Math.min(...engineCpu);
  figure(
    `engine.sqlite.${chunks}${SHAPE_ID}.cpu`,
    'the same, by the CPU time of the broker process',
    cpuRatio,
    'ratio',
  );
  console.log(
    `  by the broker process's CPU time (steadier on a shared machine): bare ${bareCpu.map((x) => x.toFixed(0)).join(', ')}` +
      ` ms, engine ${engineCpu.map((x) => x.toFixed(0)).join(', ')} ms; ratio ${cpuRatio.toFixed(2)}`,
  );
  const summary = message.summary as { outcomes?: Record<string, number> };
  const outcomes = Object.entries(summary.outcomes ?? {})
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');
  console.log(`  last engine round's outcomes: ${outcomes}`);
  const stalls = message.stalls as StallReport | undefined;
  if (stalls !== undefined) console.log(`  engine rounds (BENCH_STALLS): ${spansOf(stalls)}`);
  const perTurn = message.storeCallsPerTurn as Record<string, number>;
  const WRITES = [
    'openSession',
    'addTurn',
    'openSessionAndAddTurn',
    'commit',
    'setAnswerRef',
    'acquireLease',
    'releaseLease',
  ];
  const writes = Object.entries(perTurn)
    .filter(([k]) => WRITES.includes(k))
    .reduce((sum, [, v]) => sum + v, 0);
  figure(`engine.sqlite.${chunks}${SHAPE_ID}.writes-per-turn`, 'store writes per turn', writes, 'writes');
  console.log(
    `  store calls per turn (warm-up round): ${Object.entries(perTurn)
      .map(([k, v]) => `${k} ${v.toFixed(2)}`)
      .join(', ')}; writes ${writes.toFixed(2)}`,
  );
}

// ---- 4c. two replicas on PostgreSQL --------------------------------------------------------------

async function benchPostgres(server: AgentServer): Promise<void> {
  const chunks = 50;
  const rounds = 3;
  let pg: Awaited<ReturnType<typeof startPostgres>>;
  try {
    // Durable, as in production: every commit fsynced, like SQLite's synchronous=FULL.
    pg = await startPostgres({ durable: true });
  } catch (error) {
    console.log(`\nEngine on PostgreSQL, two replicas: not measured (${String(error).split('\n')[0]})`);
    return;
  }
  try {
    const child = runChild([
      'pg',
      server.endpoint,
      pg.connectionString,
      String(SESSIONS),
      String(chunks),
      String(rounds),
    ]);
    let message: Record<string, unknown>;
    try {
      ({ message } = await child.next('result', 300_000));
      await child.exited;
    } catch (error) {
      console.log(`\nEngine on PostgreSQL, two replicas: not measured (${String(error).split('\n')[0]})`);
      return;
    }
    const bare = message.bare as number[];
    const engine = message.engine as number[];
    const events = message.eventsPerRound as number;
    const bestBare = Math.min(...bare);
    const bestEngine = Math.min(...engine);
    const ratio = bestBare / bestEngine;
    console.log(
      `\nEngine on PostgreSQL, two replicas (two engines, two stores, two lease owners, one database;` +
        ` half the threads each): ${fmt(SESSIONS)} sessions × ${chunks} chunks${SHAPED} (best of ${rounds}, interleaved)`,
    );
    console.log(
      `  bare A2AClient: ${fmt((events / bestBare) * 1000)} events/s (${bestBare.toFixed(0)} ms;` +
        ` rounds ${bare.map((x) => x.toFixed(0)).join(', ')} ms)`,
    );
    console.log(
      `  two replicas, receive → all turn.settled: ${fmt((events / bestEngine) * 1000)} events/s` +
        ` (${bestEngine.toFixed(0)} ms; rounds ${engine.map((x) => x.toFixed(0)).join(', ')} ms)`,
    );
    const verdictText = figure(
      `engine.postgres2.${chunks}${SHAPE_ID}`,
      `engine on PostgreSQL, two replicas, against the bare client, ${fmt(SESSIONS)} × ${chunks}${SHAPED}`,
      ratio,
      'ratio',
      ...(SHAPE === 'kagent' ? [] : [{ op: '>=' as const, value: 0.6 }]),
    );
    console.log(`  ratio replicas/bare: ${ratio.toFixed(2)} ${verdictText}`);
    const cpuMs = message.cpuMs as number[];
    console.log(
      `  broker CPU per round (both replicas, one process): ${cpuMs.map((x) => x.toFixed(0)).join(', ')} ms`,
    );
    console.log(`  leases refused in the last round: ${fmt(message.refused as number)}`);
    const perTurn = message.perTurn as Record<string, number>;
    figure(
      `engine.postgres2.${chunks}${SHAPE_ID}.round-trips`,
      'PostgreSQL round trips per turn',
      perTurn.roundTrips ?? 0,
      'trips',
    );
    figure(
      `engine.postgres2.${chunks}${SHAPE_ID}.commits`,
      'PostgreSQL commits per turn',
      perTurn.commits ?? 0,
      'commits',
    );
    console.log(
      `  per turn in the last round (both replicas): ${Object.entries(perTurn)
        .map(([k, v]) => `${k} ${v.toFixed(2)}`)
        .join(', ')}`,
    );
  } finally {
    await pg.stop();
  }
}

// ---- 4d. latency from the socket to the surface -------------------------------------------------

async function benchLatency(server: AgentServer): Promise<void> {
  console.log(
    "\nLatency: from the agent writing its first artifact event to the socket to the surface's update" +
      ' call (the system-wide monotonic clock, read in both processes)',
  );
  for (const [sessions, samples, settled] of [
    [1, 300, false],
    [SESSIONS, SESSIONS * 2, false],
    // Beside the goal, not instead of it: the same, their start-up state collected first.
    [SESSIONS, SESSIONS * 2, true],
  ] as const) {
    const args = ['latency', server.endpoint, String(sessions), String(samples)];
    const child = runChild(settled ? [...args, 'settled'] : args, (m) => {
      if (m.type === 'release-stamped') server.releaseStamped(m.spreadMs as number);
      if (m.type === 'release') server.release();
    });
    const { message } = await child.next('result', 300_000);
    await child.exited;
    const p50 = message.p50 as number;
    const p99 = message.p99 as number;
    const key = `${sessions}${settled ? '.settled' : ''}`;
    const which = `${fmt(sessions)} sessions${settled ? ', start-up state collected first' : ''}`;
    figure(`latency.p50.${key}`, `first artifact → surface call, p50, ${which}`, p50, 'ms');
    const verdictText = figure(
      `latency.p99.${key}`,
      `first artifact → surface call, p99, ${which}`,
      p99,
      'ms',
      // The goal is the burst's: the settled figure says how much of it is the start-up state.
      settled ? undefined : { op: '<', value: 5 },
    );
    const spread =
      sessions === 1
        ? 'one turn at a time'
        : settled
          ? 'as above, after a full collection of the sessions just opened'
          : 'all open at once, their first chunks spread over 1 s';
    console.log(
      `  ${fmt(sessions)} session${sessions === 1 ? '' : 's'} (${spread}; ${fmt(message.samples as number)} turns):` +
        ` p50 ${p50.toFixed(2)} ms, p99 ${p99.toFixed(2)} ms${verdictText === '' ? '' : ` ${verdictText}`}, max ${(message.max as number).toFixed(2)} ms`,
    );
    const stalls = message.stalls as StallReport;
    const by = Object.entries(stalls.lateBy)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ');
    console.log(
      `    over 5 ms: ${stalls.late} turns, mostly during ${by || 'nothing'}; meanwhile: ${spansOf(stalls)}`,
    );
    const ckpt = message.checkpoints as
      | { count: number; restarts: number; frames: number; longestMs: number }
      | undefined;
    if (ckpt !== undefined && ckpt.count + ckpt.restarts > 0)
      console.log(
        `    on the store's checkpointer thread meanwhile: ${ckpt.count} checkpoints (${fmt(ckpt.frames)} frames copied), ${ckpt.restarts} log restarts, longest ${ckpt.longestMs.toFixed(1)} ms`,
      );
  }
}

// ---- 4b. the OpenTelemetry API without an SDK ------------------------------------------------------

async function benchTracing(server: AgentServer, sdk: boolean): Promise<void> {
  const chunks = 50;
  // An even number: the rounds come in pairs, one of each order (see the ratio below).
  const rounds = sdk ? 6 : 16;
  const child = runChild([
    'tracing',
    server.endpoint,
    String(SESSIONS),
    String(chunks),
    String(rounds),
    ...(sdk ? ['sdk'] : []),
  ]);
  const { message } = await child.next('result');
  await child.exited;
  type Runs = { ms: number[]; cpuMs: number[] };
  const none = message.none as Runs;
  const api = message.api as Runs;
  const list = (xs: number[]): string => xs.map((x) => x.toFixed(0)).join(', ');
  const exported = message.exported as { requests: number; bytes: number } | undefined;
  console.log(
    `\nOpenTelemetry ${sdk ? 'SDK exporting OTLP/protobuf to a receiver on loopback' : 'API without an SDK'}: ` +
      `${fmt(SESSIONS)} concurrent turns of ${chunks} chunks through SessionEngine (${rounds} rounds of one each, interleaved)`,
  );
  console.log(`  no tracing code: CPU ${list(none.cpuMs)} ms; wall ${list(none.ms)} ms`);
  console.log(
    `  turn and call spans ${sdk ? 'recorded and exported' : "on the API's no-op"}: CPU ${list(api.cpuMs)} ms;` +
      ` wall ${list(api.ms)} ms`,
  );
  if (exported !== undefined)
    console.log(`  the receiver took ${fmt(exported.requests)} exports, ${kib(exported.bytes)} KiB`);
  // Each round runs one 'none' and one 'api' turn set back to back, so the ratio within a round
  // is taken on the same state of the machine; the order alternates, and two rounds in a row
  // (one of each order) make a pair whose ratio is the geometric mean of its two: whatever
  // running second costs (the first set's garbage, its pages) falls once on each side and
  // cancels. The figure is the median of the pairs' ratios. With an odd number of rounds and
  // the median of single rounds, as before, one order had a round more than the other and the
  // median leaned its way. The ratio of the best rounds, printed too, compares two minima that
  // each caught their own lull, and moved by ±4 % between runs of the same code.
  const cpuRatio = median(pairRatios(none.cpuMs, api.cpuMs));
  const wallRatio = median(pairRatios(none.ms, api.ms));
  const bestCpuRatio = Math.min(...none.cpuMs) / Math.min(...api.cpuMs);
  const verdictText = sdk
    ? figure(
        'tracing.sdk',
        'tracing with the SDK exporting to loopback against none, by CPU',
        cpuRatio,
        'ratio',
      )
    : figure(
        'tracing.api',
        'the OpenTelemetry API with no SDK against no tracing, by CPU',
        cpuRatio,
        'ratio',
        {
          op: '>=',
          value: 0.98,
        },
      );
  console.log(
    `  ratio throughput with/without, by the broker's CPU time (median of the pairs' ratios, each pair one round of each order): ${cpuRatio.toFixed(3)}` +
      ` ${verdictText}; by wall time ${wallRatio.toFixed(3)} (noisier on a shared machine);` +
      ` best round against best round, by CPU: ${bestCpuRatio.toFixed(3)}`,
  );
  const callsUs = message.callsPerTurnUs as number | undefined;
  if (callsUs !== undefined) {
    const turnUs = (median(none.cpuMs) * 1000) / SESSIONS;
    console.log(
      `  the no-op tracing calls of one turn, timed alone: ${callsUs.toFixed(2)} µs of CPU, against` +
        ` ${fmt(turnUs)} µs of broker CPU per turn without tracing (${((callsUs / turnUs) * 100).toFixed(2)} %)`,
    );
  }
}

export async function benchEngine(): Promise<void> {
  const server = await startAgentServer();
  try {
    if (WHICH.has('throughput')) {
      // Short answers show the per-turn cost (store writes, leases); long ones the per-event cost.
      for (const chunks of (process.env.BENCH_CHUNKS ?? '50,500').split(',').map(Number)) {
        await benchThroughput(server, chunks);
      }
    }
    if (WHICH.has('postgres')) await benchPostgres(server);
    if (WHICH.has('latency')) await benchLatency(server);
    if (WHICH.has('tracing')) {
      await benchTracing(server, false);
      if (process.env.BENCH_TRACING_AA !== '1') await benchTracing(server, true);
    }
    if (WHICH.has('memory')) await benchMemory(server);
    if (WHICH.has('resume')) await benchResume(server);
  } finally {
    await server.close();
  }
}
