import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { killChild } from '../crash/children.js';

/**
 * Fault matrix: SIGKILL while the SQLite store's checkpointer thread copies the log into the
 * database and restarts it, under a stream of acknowledged writes (test/faults/
 * checkpoint-writer.ts). What must hold: every write the process was told is durable is there
 * after a reopen, the file passes integrity_check. Seeded: each seed kills after a different
 * number of checkpoints.
 */

const SEEDS = (process.env.FAULT_SEEDS ?? '1,2,3').split(',').map(Number);

describe('SIGKILL during WAL checkpoints', () => {
  const cleanups: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
  });

  for (const seed of SEEDS) {
    it(`loses no acknowledged write and leaves the file intact (seed ${seed})`, async () => {
      const dir = await mkdtemp(join(tmpdir(), 'ak-ckpt-kill-'));
      cleanups.push(() => rm(dir, { recursive: true, force: true }));
      const path = join(dir, 'store.db');
      const child: ChildProcess = spawn(
        process.execPath,
        ['--import', 'tsx', 'test/faults/checkpoint-writer.ts'],
        { env: { ...process.env, CHECKPOINT_WRITER_DB: path }, stdio: ['ignore', 'pipe', 'inherit'] },
      );
      cleanups.push(() => killChild(child));
      const acked: number[] = [];
      const checkpoints: string[] = [];
      const failures: string[] = [];
      // Kill after 2 + seed × 3 checkpoints, log restarts included, and at least 300 acknowledged writes.
      const killAfter = 2 + seed * 3;
      const killed = new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`only ${checkpoints.length} checkpoints`)), 40_000);
        createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
          const [what, value] = line.split(' ');
          if (what === 'ACK') acked.push(Number(value));
          else if (what === 'CKPT') checkpoints.push(line);
          else if (what === 'FAILED') failures.push(line);
          if (checkpoints.length >= killAfter && acked.length >= 300 && child.exitCode === null) {
            clearTimeout(timer);
            child.kill('SIGKILL');
            resolve();
          }
        });
      });
      await killed;
      await new Promise((resolve) => child.once('exit', resolve));
      expect(failures).toEqual([]);
      expect(checkpoints.some((c) => c.startsWith('CKPT restart'))).toBe(true);

      const check = new DatabaseSync(path);
      try {
        expect(check.prepare('PRAGMA integrity_check').get()).toEqual({ integrity_check: 'ok' });
      } finally {
        check.close();
      }
      const store = new SqliteStore(path);
      cleanups.push(() => store.close());
      const missing: number[] = [];
      for (const i of acked) {
        const session = await store.openSession({
          key: { surface: 'ckpt', workspaceId: 'T1', channelId: 'C1', threadId: `${i}` },
          binding: 'not-this-one',
          now: 0,
        });
        if (session.binding !== `ns/b-${i}-${'x'.repeat(100)}`) missing.push(i);
      }
      expect(missing).toEqual([]);
    });
  }
});
