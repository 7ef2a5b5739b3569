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
 * - latency <endpoint> <sessions> <samples>: from the agent's first artifact event written to
 *   the socket to the surface's update call, per turn (`{"type":"release-stamped"}` asks the
 *   parent to send the stamped first chunks).
 * - memory <endpoint> <bare|engine> <sessions> <chunks> <holdAfter>: RSS/heap per held stream,
 *   read with half and with all of the streams held.
 * - load <endpoint> <db> <sessions> <holdAfter> [owner]: start turns that hang; report when
 *   accepted.
 * - recover <endpoint> <db> <expect> [owner]: engine.start() on the file; report when all settled.
 *   `owner` is the engine's lease owner name (default: a new random one per process).
 *
 * The memory mode lives beside it in engine-memory.ts, the rig the modes share in engine-rig.ts;
 * latency and resume stay here.
 */
import { DatabaseSync } from 'node:sqlite';
import { memoryBare, memoryEngine, waitUntil } from './engine-memory.js';
import { countingStore, receiveAll, rig, say, tempDb } from './engine-rig.js';

/** When this script started running, in ms since the process started (module loading included). */
const scriptStartedAt = performance.now();

// ---- 1d. latency from the socket to the surface --------------------------------------------------

function quantile(sorted: number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] as number;
}

async function latency(endpoint: string, n: number, samples: number): Promise<void> {
  const db = tempDb();
  const r = await rig(endpoint, db.path);
  const taken: number[] = [];
  r.surface.onFirstUpdate = (view) => {
    const now = process.hrtime.bigint();
    const mark = /^\[t:(\d+)\]/.exec(view.text());
    if (mark === null) return;
    const written = BigInt(mark[1] as string);
    taken.push(Number(now - written) / 1e6);
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
    while (taken.length < samples) {
      // n sessions accepted and held open; then their first chunks arrive, spread over a
      // second (at once for one session), while all n stay open; then all are finished.
      const before = taken.length;
      await receiveAll(r.engine, `lat${round}`, n, text);
      await r.events.until('turn.accepted', n * (round + 1));
      say({ type: 'release-stamped', spreadMs: n === 1 ? 0 : 1_000 });
      await waitUntil(() => taken.length >= before + n, 'the stamped first chunks');
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
    case 'latency':
      await latency(endpoint, num(0), num(1));
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
