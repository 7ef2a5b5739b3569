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

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** The open sessions the engine's goals are stated for. */
export const SESSIONS = 1000;
/** Turns in flight at the SIGKILL of the resume benchmark. */
export const RESUME_TURNS = 10_000;
/**
 * The children run under the environment the image sets (the Dockerfile's ENV: NODE_ENV,
 * MALLOC_ARENA_MAX), as production runs; a variable set for the bench itself wins, so
 * `MALLOC_ARENA_MAX=8 npm run bench` measures another setting.
 */
const CHILD_ENV: NodeJS.ProcessEnv = {
  ...imageEnvironment(readFileSync(join(ROOT, 'Dockerfile'), 'utf8')),
  ...process.env,
};

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
  /** The child's script under bench/ (the scale benchmark's is scale-child.ts). */
  name = 'engine-child.ts',
): Child {
  const { loader, script } = childScript(name);
  const node = ['--expose-gc', ...v8Flags, ...loader];
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
export const kib = (bytes: number): string => (bytes / 1024).toFixed(1);
