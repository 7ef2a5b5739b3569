/**
 * Engine benchmarks: the session engine with 1,000 concurrent sessions. The agent server runs
 * here, in the parent; the broker side runs in a child process (bench/engine-child.ts), so its
 * time and resident memory are its own, and it can be SIGKILLed. Each figure carries its goal
 * (figures.ts); docs/performance.md lists them.
 *
 * - Two replicas on PostgreSQL against the bare client: two engines, two stores, two lease
 *   owners, one durable database started for the run (testkit/postgres.ts), half the threads
 *   each.
 * - Broker-added latency: from the agent writing a turn's first artifact event to the socket to
 *   the surface's update call, with 1,000 sessions open.
 * - Tracing: the OpenTelemetry API without an SDK (OTEL_* unset) against no tracing code.
 * - Resident memory per streaming session, and resume after SIGKILL (engine-resources.ts).
 */
import { startPostgres } from '../testkit/postgres.js';
import { type AgentServer, startAgentServer } from './agent-server.js';
import { fmt, median, runChild, SESSIONS } from './engine-children.js';
import { benchMemory, benchResume } from './engine-resources.js';
import { figure } from './figures.js';
import { pairRatios } from './paired.js';

// ---- 4c. two replicas on PostgreSQL --------------------------------------------------------------

async function benchPostgres(server: AgentServer): Promise<void> {
  const chunks = 50;
  // Best of five each side, interleaved: one round of either side can catch a burst of load on
  // a shared machine, and three left the figure to one lull.
  const rounds = 5;
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
        ` half the threads each): ${fmt(SESSIONS)} sessions × ${chunks} chunks (best of ${rounds}, interleaved)`,
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
      `engine.postgres2.${chunks}`,
      `engine on PostgreSQL, two replicas, against the bare client, ${fmt(SESSIONS)} × ${chunks}`,
      ratio,
      'ratio',
      { op: '>=', value: 0.5 },
    );
    console.log(`  ratio replicas/bare: ${ratio.toFixed(2)} ${verdictText}`);
    const cpuMs = message.cpuMs as number[];
    console.log(
      `  broker CPU per round (both replicas, one process): ${cpuMs.map((x) => x.toFixed(0)).join(', ')} ms`,
    );
    console.log(`  leases refused in the last round: ${fmt(message.refused as number)}`);
  } finally {
    await pg.stop();
  }
}

// ---- 4d. latency from the socket to the surface -------------------------------------------------

async function benchLatency(server: AgentServer): Promise<void> {
  const sessions = SESSIONS;
  const child = runChild(['latency', server.endpoint, String(sessions), String(sessions * 2)], (m) => {
    if (m.type === 'release-stamped') server.releaseStamped(m.spreadMs as number);
    if (m.type === 'release') server.release();
  });
  const { message } = await child.next('result', 300_000);
  await child.exited;
  const p50 = message.p50 as number;
  const p99 = message.p99 as number;
  const verdictText = figure(
    `latency.p99.${sessions}`,
    `broker-added latency, first artifact on the socket → surface call, p99, ${fmt(sessions)} open sessions`,
    p99,
    'ms',
    { op: '<', value: 25 },
  );
  console.log(
    "\nBroker-added latency: from the agent writing its first artifact event to the socket to the surface's" +
      ' update call (the system-wide monotonic clock, read in both processes)',
  );
  console.log(
    `  ${fmt(sessions)} sessions (all open at once, their first chunks spread over 1 s; ${fmt(message.samples as number)} turns):` +
      ` p50 ${p50.toFixed(2)} ms, p99 ${p99.toFixed(2)} ms ${verdictText}, max ${(message.max as number).toFixed(2)} ms`,
  );
}

// ---- 4b. the OpenTelemetry API without an SDK ------------------------------------------------------

async function benchTracing(server: AgentServer): Promise<void> {
  const chunks = 50;
  // An even number: the rounds come in pairs, one of each order (see the ratio below).
  const rounds = 16;
  const child = runChild(['tracing', server.endpoint, String(SESSIONS), String(chunks), String(rounds)]);
  const { message } = await child.next('result');
  await child.exited;
  type Runs = { ms: number[]; cpuMs: number[] };
  const none = message.none as Runs;
  const api = message.api as Runs;
  const list = (xs: number[]): string => xs.map((x) => x.toFixed(0)).join(', ');
  console.log(
    `\nOpenTelemetry API without an SDK: ${fmt(SESSIONS)} concurrent turns of ${chunks} chunks through` +
      ` SessionEngine (${rounds} rounds of one each, interleaved)`,
  );
  console.log(`  no tracing code: CPU ${list(none.cpuMs)} ms; wall ${list(none.ms)} ms`);
  console.log(`  turn and call spans on the API's no-op: CPU ${list(api.cpuMs)} ms; wall ${list(api.ms)} ms`);
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
  const verdictText = figure(
    'tracing.api',
    'the OpenTelemetry API with no SDK against no tracing, by CPU',
    cpuRatio,
    'ratio',
    { op: '>=', value: 0.98 },
  );
  console.log(
    `  ratio throughput with/without, by the broker's CPU time (median of the pairs' ratios, each pair one round of each order): ${cpuRatio.toFixed(3)}` +
      ` ${verdictText}; by wall time ${wallRatio.toFixed(3)} (noisier on a shared machine);` +
      ` best round against best round, by CPU: ${bestCpuRatio.toFixed(3)}`,
  );
}

export async function benchEngine(): Promise<void> {
  const server = await startAgentServer();
  try {
    await benchPostgres(server);
    await benchLatency(server);
    await benchTracing(server);
    await benchMemory(server);
    await benchResume(server);
  } finally {
    await server.close();
  }
}
