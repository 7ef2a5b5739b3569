import { readdirSync, readFileSync } from 'node:fs';

/**
 * CPU time per thread of this process, by thread name, from Linux's /proc (empty elsewhere):
 * `process.cpuUsage()` sums every thread, and on the engine's rounds a good part of the sum is
 * not the event loop's but V8's helper threads' (`V8Worker`: parallel scavenges and concurrent
 * marking), which is what a change in what a session holds moves. Diagnosis only
 * (`BENCH_THREADS=1`); /proc counts in clock ticks, so each figure is good to 10 ms.
 */
export type ThreadCpu = Map<string, number>;

const TICK_MS = 10;

export function threadCpu(): ThreadCpu {
  const byThread = new Map<string, number>();
  let tids: string[];
  try {
    tids = readdirSync('/proc/self/task');
  } catch {
    return byThread;
  }
  for (const tid of tids) {
    try {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      // After the name: state is field 3; utime and stime are fields 14 and 15.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      byThread.set(`${name}#${tid}`, (Number(fields[11]) + Number(fields[12])) * TICK_MS);
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  return byThread;
}

/** What each kind of thread spent between two readings, e.g. "MainThread=1230 V8Worker=450" (ms). */
export function threadCpuSince(before: ThreadCpu, after: ThreadCpu = threadCpu()): string {
  const byName = new Map<string, number>();
  for (const [key, ms] of after) {
    const name = key.slice(0, key.lastIndexOf('#'));
    byName.set(name, (byName.get(name) ?? 0) + ms - (before.get(key) ?? 0));
  }
  return [...byName]
    .filter(([, ms]) => ms > 0)
    .map(([name, ms]) => `${name}=${ms}`)
    .join(' ');
}

/** Starts a reading when BENCH_THREADS=1 (else nothing): pass it to reportThreads after the round. */
export function threadsIfAsked(): ThreadCpu | undefined {
  return process.env.BENCH_THREADS === '1' ? threadCpu() : undefined;
}

/** Prints, on stderr, what each kind of thread spent in a round since `before` (if it was read). */
export function reportThreads(round: string, before: ThreadCpu | undefined): void {
  if (before !== undefined) process.stderr.write(`  threads, ${round}: ${threadCpuSince(before)} ms\n`);
}
