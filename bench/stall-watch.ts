/**
 * Where a process's event loop stalled, and whether it was working or waiting for a core: a
 * short timer notes each gap between its ticks longer than a bound, with the CPU time the
 * process used in that gap. A gap the process spent on its own CPU is its own work; a gap with
 * little CPU in it is time it was runnable but not running (other processes on the same cores),
 * or blocked in the kernel. The two-replica figure reads this to say which its late samples are.
 */

export interface Stall {
  /** Wall time of the gap. */
  wallMs: number;
  /** CPU time this process used meanwhile (all its threads). */
  cpuMs: number;
}

export interface StallWatch {
  start(): void;
  stop(): void;
  readonly stalls: Stall[];
}

const cpuNowMs = (): number => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

export function watchStalls(boundMs: number, tickMs = 2): StallWatch {
  const stalls: Stall[] = [];
  let timer: NodeJS.Timeout | undefined;
  let lastWall = 0;
  let lastCpu = 0;
  return {
    stalls,
    start() {
      lastWall = performance.now();
      lastCpu = cpuNowMs();
      timer = setInterval(() => {
        const wall = performance.now();
        const cpu = cpuNowMs();
        // A tick is due every tickMs: what it was late by is the stall.
        const gap = wall - lastWall - tickMs;
        if (gap > boundMs) stalls.push({ wallMs: gap, cpuMs: cpu - lastCpu });
        lastWall = wall;
        lastCpu = cpu;
      }, tickMs);
    },
    stop() {
      clearInterval(timer);
    },
  };
}

/** The stalls in a few words: how many, the longest, and the share of their time spent on CPU. */
export function describeStalls(stalls: ReadonlyArray<Stall>): string {
  if (stalls.length === 0) return 'no stall';
  const wall = stalls.reduce((sum, s) => sum + s.wallMs, 0);
  const cpu = stalls.reduce((sum, s) => sum + Math.min(s.cpuMs, s.wallMs), 0);
  const longest = Math.max(...stalls.map((s) => s.wallMs));
  return `${stalls.length} stalls, longest ${longest.toFixed(0)} ms, ${((100 * cpu) / wall).toFixed(0)}% of their time on its own CPU`;
}
