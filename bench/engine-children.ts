/**
 * The engine benchmarks' parent side (engine.ts and engine-resources.ts): the child process that
 * runs the broker (engine-child.ts), spawned under the image's environment and spoken to in JSON
 * lines, and what the figures' printing shares.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { imageEnvironment } from '../scripts/image-tree.js';
import { childScript } from './compiled.js';
import type { StallReport } from './stalls.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** BENCH_SESSIONS shrinks the runs (for profiling); the goals are stated for 1,000. */
export const SESSIONS = Number(process.env.BENCH_SESSIONS ?? 1000);
/** Turns in flight at the SIGKILL of the resume benchmark (BENCH_RESUME_TURNS; goal stated for 10,000). */
export const RESUME_TURNS = Number(process.env.BENCH_RESUME_TURNS ?? 10_000);
/** BENCH_ENGINE=throughput,postgres,latency,tracing,memory,resume picks which engine benchmarks run. */
export const WHICH = new Set(
  (process.env.BENCH_ENGINE ?? 'throughput,postgres,latency,tracing,memory,resume').split(','),
);
/** BENCH_V8_FLAGS="--flag …": more V8 flags for every child (diagnosis: --trace-gc and such). */
const EXTRA_V8_FLAGS = (process.env.BENCH_V8_FLAGS ?? '').split(' ').filter((f) => f !== '');
/**
 * The children run under the environment the image sets (the Dockerfile's ENV: NODE_ENV,
 * MALLOC_ARENA_MAX), as production runs; a variable set for the bench itself wins, so
 * `MALLOC_ARENA_MAX=8 npm run bench` measures another setting.
 */
const CHILD_ENV: NodeJS.ProcessEnv = {
  ...imageEnvironment(readFileSync(join(ROOT, 'Dockerfile'), 'utf8')),
  ...process.env,
};

/** BENCH_CPU_PROF=<dir>: the children write V8 CPU profiles there. */
const CPU_PROF = process.env.BENCH_CPU_PROF;

type Message = Record<string, unknown> & { type: string };

export interface Child {
  proc: ChildProcess;
  /** The wall-clock time (performance.now) the child was spawned at. */
  spawnedAt: number;
  /** Resolves with the first line of `type`, and when it arrived. */
  next(type: string, timeoutMs?: number): Promise<{ message: Message; at: number }>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Runs bench/<entry> (default engine-child.ts) with `args` in a child process. */
export function runChild(
  args: string[],
  onMessage: (m: Message) => void = () => undefined,
  v8Flags: string[] = [],
  entry = 'engine-child.ts',
): Child {
  const { loader, script } = childScript(entry);
  const node = ['--expose-gc', ...EXTRA_V8_FLAGS, ...v8Flags, ...loader];
  if (CPU_PROF !== undefined) node.push('--cpu-prof', `--cpu-prof-dir=${CPU_PROF}`);
  const spawnedAt = performance.now();
  const proc = spawn(process.execPath, [...node, script, ...args], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
    env: CHILD_ENV,
  });
  const seen: Array<{ message: Message; at: number }> = [];
  const waiters: Array<{ type: string; resolve: (v: { message: Message; at: number }) => void }> = [];
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    proc.on('close', (code, signal) => resolve({ code, signal })),
  );
  createInterface({ input: proc.stdout as NodeJS.ReadableStream }).on('line', (line) => {
    const at = performance.now();
    let message: Message;
    try {
      message = JSON.parse(line) as Message;
    } catch {
      process.stderr.write(`[child] ${line}\n`);
      return;
    }
    seen.push({ message, at });
    onMessage(message);
    for (let i = waiters.length - 1; i >= 0; i--) {
      const w = waiters[i];
      if (w !== undefined && w.type === message.type) {
        waiters.splice(i, 1);
        w.resolve({ message, at });
      }
    }
  });
  const next = (type: string, timeoutMs = 180_000): Promise<{ message: Message; at: number }> => {
    const already = seen.find((s) => s.message.type === type);
    if (already !== undefined) return Promise.resolve(already);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        proc.kill('SIGKILL');
        reject(new Error(`child ${args[0]}: no "${type}" line within ${timeoutMs} ms`));
      }, timeoutMs);
      waiters.push({
        type,
        resolve: (v) => {
          clearTimeout(timer);
          resolve(v);
        },
      });
      void exited.then(({ code, signal }) => {
        clearTimeout(timer);
        reject(new Error(`child ${args[0]} exited (code ${code}, signal ${signal}) before a "${type}" line`));
      });
    });
  };
  return { proc, spawnedAt, next, exited };
}

export const fmt = (n: number): string => Math.round(n).toLocaleString('en');
export const median = (xs: number[]): number => {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
};
export const kib = (bytes: number): string => (bytes / 1024).toFixed(1);

/** What ran on the broker's event loop meanwhile: SQLite transactions, GC pauses (bench/stalls.ts). */
export function spansOf(stalls: StallReport): string {
  const spans = Object.entries(stalls.totals).map(
    ([k, t]) =>
      `${k} ${t.count}× ${t.ms.toFixed(1)} ms (${t.over5ms} over 5 ms, longest ${(stalls.longestMs[k] ?? 0).toFixed(1)})`,
  );
  return spans.join(', ') || 'nothing';
}
