import { type ChildProcess, type StdioOptions, spawn } from 'node:child_process';
import { once } from 'node:events';
import { messageIdFor } from '../../src/core/compose.js';
import { sessionIdOf } from '../../src/core/store.js';
import type { ChildConfig } from './engine-child.js';

/**
 * The crash tests' broker processes and what every one of them reads the same way: start
 * test/crash/engine-child.ts with its configuration, kill it with SIGKILL, the turn id its
 * engine gives a chat message, and a seeded PRNG so a seed kills at the same points again.
 * Used by the crash and replica integration tests, the fault matrix and the soak.
 */

export type ChatMessage = ChildConfig['messages'][number];

/** The engine's timings in the crash runs: fast retries and scans, short leases, a long give-up. */
export const CRASH_TIMINGS: ChildConfig['timings'] = {
  settleDelayMs: 30,
  retryBaseMs: 20,
  retryMaxMs: 200,
  giveUpAfterMs: 60_000,
  leaseTtlMs: 1_000,
  scanIntervalMs: 100,
};

export interface ChildStart {
  /** Default: no stdin or stdout, the child's stderr on ours. */
  stdio?: StdioOptions;
  /** A command the child runs under (`['prlimit', '--fsize=…']`): it gets node and its arguments. */
  under?: readonly string[];
}

export function startEngineChild(config: ChildConfig, options: ChildStart = {}): ChildProcess {
  const node = [process.execPath, '--import', 'tsx', 'test/crash/engine-child.ts'];
  const [command = node[0] as string, ...args] = [...(options.under ?? []), ...node];
  return spawn(command, args, {
    env: { ...process.env, CRASH_CONFIG: JSON.stringify(config) },
    stdio: options.stdio ?? ['ignore', 'ignore', 'inherit'],
  });
}

/** SIGKILL, and the exit waited for; nothing to do for a child that is gone or never started. */
export async function killChild(child: ChildProcess | undefined): Promise<void> {
  if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGKILL');
  await exited;
}

/** The session id of a thread of the child's chat (engine-child.ts's key). */
export function crashSessionId(thread: string): string {
  return sessionIdOf({ surface: 'crash', workspaceId: 'T1', channelId: 'C1', threadId: thread });
}

/** The turn id the child's engine gives a chat message (a message's turn is named after it). */
export function crashTurnId(m: Pick<ChatMessage, 'thread' | 'ts'>): string {
  return messageIdFor(crashSessionId(m.thread), m.ts, 'message');
}

/** `perThread` messages in each of `threads` threads: t0 1.0, t0 2.0, …, "question t.m". */
export function crashMessages(threads: number, perThread: number): ChatMessage[] {
  const messages: ChatMessage[] = [];
  for (let t = 0; t < threads; t++)
    for (let m = 0; m < perThread; m++)
      messages.push({ thread: `t${t}`, ts: `${m + 1}.0`, text: `question ${t}.${m}` });
  return messages;
}

/** A small seeded PRNG (mulberry32): the same seed kills at the same points. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
