import { execFileSync } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { CheckpointReport } from './checkpoint-protocol.js';
import { readWalIndex, type WalIndex } from './checkpoint-worker.js';
import { CheckpointerError, type CheckpointerOptions } from './checkpointer.js';
import { SqliteStore, type SqliteStoreOptions } from './sqlite-store.js';

const dirs: string[] = [];
function freshPath(): string {
  const dir = mkdtempSync(join(tmpdir(), 'ak-checkpoint-'));
  dirs.push(dir);
  return join(dir, 'store.db');
}
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** Fast settings: the worker looks every 10 ms. */
const QUICK: CheckpointerOptions = { thresholdFrames: 200, pollMs: 10, idleMs: 150, startDelayMs: 0 };
/** A threshold and ceiling the tests never reach: the worker never checkpoints on its own. */
const NEVER: CheckpointerOptions = {
  thresholdFrames: 1e9,
  ceilingFrames: 1e9,
  idleMs: 1e9,
  pollMs: 10,
  startDelayMs: 0,
};

function walIndex(path: string): WalIndex {
  const fd = openSync(`${path}-shm`, 'r');
  try {
    const index = readWalIndex(fd);
    if (index === undefined) throw new Error('the wal-index did not check out');
    return index;
  } finally {
    closeSync(fd);
  }
}

async function until<T>(what: string, probe: () => T | undefined, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const key = (i: number) => ({ surface: 'slack', workspaceId: 'T01', channelId: 'C01', threadId: `t-${i}` });
/** One commit per session (awaited one by one): each writes a few pages of the log. */
async function writeSessions(store: SqliteStore, from: number, count: number): Promise<void> {
  for (let i = from; i < from + count; i++)
    await store.openSession({
      key: key(i),
      binding: `ns/binding-${'x'.repeat(200)}-${i}`,
      now: 1_700_000_000_000 + i,
    });
}

describe('WalCheckpointer: WAL checkpoints on a thread of their own', () => {
  const open: SqliteStore[] = [];
  afterEach(async () => {
    for (const store of open.splice(0)) await store.close();
  });

  async function migrated(
    path: string,
    options: SqliteStoreOptions,
  ): Promise<{ store: SqliteStore; reports: CheckpointReport[]; failures: CheckpointerError[] }> {
    const store = new SqliteStore(path, options);
    open.push(store);
    const reports: CheckpointReport[] = [];
    const failures: CheckpointerError[] = [];
    store.observeCheckpoints({ checkpointed: (r) => reports.push(r), failed: (e) => failures.push(e) });
    await store.migrate();
    return { store, reports, failures };
  }

  it("the store's own connection never checkpoints: past 1,000 pages nothing is copied into the database", async () => {
    const path = freshPath();
    const { store, reports } = await migrated(path, { synchronous: 'normal', checkpoints: NEVER });
    await until('the worker', () => (store.checkpointer === 'running' ? true : undefined));
    const dbSize = statSync(path).size;
    await writeSessions(store, 0, 600);
    const index = walIndex(path);
    // SQLite's autocheckpoint would have copied the log at 1,000 frames and started it over.
    expect(index.mxFrame).toBeGreaterThan(1500);
    expect(index.nBackfill).toBe(0);
    expect(statSync(path).size).toBe(dbSize);
    expect(reports).toEqual([]);
  });

  it('the worker checkpoints (PASSIVE) once the log passes the threshold, and the log then starts over', async () => {
    const path = freshPath();
    const { store, reports, failures } = await migrated(path, { synchronous: 'normal', checkpoints: QUICK });
    await writeSessions(store, 0, 300);
    const first = await until('a checkpoint', () => reports.find((r) => r.reason === 'threshold'));
    expect(first).toMatchObject({ mode: 'PASSIVE', busy: false });
    expect(first.backfilledFrames).toBeGreaterThanOrEqual(200);
    expect(first.durationMs).toBeGreaterThanOrEqual(0);
    // The database file now holds the pages; the log is copied up to what was written since.
    await until('the quiet log copied', () => {
      const index = walIndex(path);
      return index.mxFrame > 0 && index.nBackfill === index.mxFrame ? index : undefined;
    });
    // A write after a fully copied log starts it again from its first frame.
    await writeSessions(store, 300, 1);
    expect(walIndex(path).mxFrame).toBeLessThan(20);
    expect(failures).toEqual([]);
  });

  it('starts a log that grew past its ceiling over and cuts the -wal file back to journal_size_limit', async () => {
    const path = freshPath();
    const limit = 256 * 1024;
    const { store, reports } = await migrated(path, {
      synchronous: 'normal',
      checkpoints: {
        thresholdFrames: 1e9,
        idleMs: 1e9,
        ceilingFrames: 400,
        pollMs: 10,
        journalSizeLimit: limit,
        startDelayMs: 0,
      },
    });
    let largest = 0;
    for (let i = 0; i < 300; i += 10) {
      await writeSessions(store, i, 10);
      largest = Math.max(largest, statSync(`${path}-wal`).size);
    }
    expect(largest).toBeGreaterThan(limit);
    const restart = await until('a restart', () => reports.find((r) => r.mode === 'restart'));
    expect(restart).toMatchObject({ reason: 'ceiling', busy: false });
    expect(restart.logFrames).toBeGreaterThanOrEqual(400);
    expect(restart.checkpointedFrames).toBe(restart.logFrames);
    await writeSessions(store, 300, 1);
    expect(walIndex(path).mxFrame).toBeLessThan(20);
    expect(statSync(`${path}-wal`).size).toBeLessThanOrEqual(limit);
  });

  it("starts a fully copied log over on its own thread, never in the store's commits (their fsync would be on the loop)", async () => {
    const path = freshPath();
    // Every COMMIT of this thread's connections (the store's only), with the log's last frame before and after.
    const commits: Array<[number, number]> = [];
    const proto = DatabaseSync.prototype;
    const exec = proto.exec;
    proto.exec = function (this: DatabaseSync, sql: string): void {
      if (sql !== 'COMMIT' || !existsSync(`${path}-shm`)) {
        exec.call(this, sql);
        return;
      }
      const before = walIndex(path).mxFrame;
      exec.call(this, sql);
      commits.push([before, walIndex(path).mxFrame]);
    };
    try {
      // A hold that never times out: on a loaded machine the worker may answer late, and the
      // store's commit would then (rightly) start the log over itself.
      const { store, reports } = await migrated(path, {
        checkpoints: { ...QUICK, thresholdFrames: 100, holdTimeoutMs: 60_000 },
      });
      let next = 0;
      while (reports.filter((r) => r.mode === 'restart' && !r.busy).length < 3) {
        await Promise.all(Array.from({ length: 8 }, () => writeSessions(store, next++ * 1000, 1)));
        if (next > 40_000) throw new Error('no restarts');
      }
    } finally {
      proto.exec = exec;
    }
    expect(commits.length).toBeGreaterThan(20);
    // A commit that started the log over would end with fewer frames than it began with.
    expect(commits.filter(([before, after]) => after < before)).toEqual([]);
  });

  it('lets the writes go when the worker does not answer a hold', async () => {
    const path = freshPath();
    // A worker that asks for a hold and never releases it.
    const silent = new URL(
      `data:text/javascript,${encodeURIComponent(
        "import { parentPort } from 'node:worker_threads'; parentPort.postMessage({ kind: 'ready' }); parentPort.postMessage({ kind: 'hold' }); parentPort.on('message', (m) => { if (m.kind === 'stop') parentPort.close(); });",
      )}`,
    );
    const { store } = await migrated(path, {
      synchronous: 'normal',
      checkpoints: { ...NEVER, script: silent },
    });
    await until('the worker', () => (store.checkpointer === 'running' ? true : undefined));
    await writeSessions(store, 0, 3);
    expect((await store.openSession({ key: key(2), binding: 'other', now: 0 })).binding).toContain('-2');
  });

  it('keeps what was written before and after checkpoints: all of it reads back after a reopen, the file intact', async () => {
    const path = freshPath();
    const { store, reports } = await migrated(path, { checkpoints: QUICK });
    await writeSessions(store, 0, 250);
    await until('a checkpoint', () => reports.find((r) => r.backfilledFrames > 0));
    await writeSessions(store, 250, 50);
    await store.close();
    const again = new SqliteStore(path);
    open.push(again);
    for (let i = 0; i < 300; i++)
      expect((await again.openSession({ key: key(i), binding: 'other', now: 0 })).binding).toContain(`-${i}`);
    const check = new DatabaseSync(path, { readOnly: true });
    try {
      expect(check.prepare('PRAGMA integrity_check').get()).toEqual({ integrity_check: 'ok' });
    } finally {
      check.close();
    }
  });

  it('falls back to checkpoints on the connection when the worker crashes, and says so with a typed error', async () => {
    const path = freshPath();
    // A worker that starts, says it is ready, and dies.
    const crashing = new URL(
      `data:text/javascript,${encodeURIComponent(
        "import { parentPort } from 'node:worker_threads'; parentPort.postMessage({ kind: 'ready' }); setTimeout(() => process.exit(3), 30);",
      )}`,
    );
    const { store, failures, reports } = await migrated(path, {
      synchronous: 'normal',
      checkpoints: { ...NEVER, script: crashing },
    });
    const failure = await until('the failure', () => failures[0]);
    expect(failure).toBeInstanceOf(CheckpointerError);
    expect(failure.code).toBe('sqlite_checkpointer_failed');
    expect(failure.message).toMatch(/code 3/);
    expect(store.checkpointer).toBe('fallen-back');
    const dbSize = statSync(path).size;
    await writeSessions(store, 0, 600);
    // SQLite checkpointed on the connection: the pages are in the database, the log started over.
    expect(statSync(path).size).toBeGreaterThan(dbSize);
    expect(walIndex(path).mxFrame).toBeLessThan(1200);
    expect(reports).toEqual([]);
    expect(failures).toHaveLength(1);
  });

  it('falls back when the worker cannot even start, and tells an observer that comes later', async () => {
    const path = freshPath();
    const store = new SqliteStore(path, {
      synchronous: 'normal',
      checkpoints: {
        startDelayMs: 0,
        script: new URL('data:text/javascript,throw new Error("no checkpointer here")'),
      },
    });
    open.push(store);
    await until('the fall-back', () => (store.checkpointer === 'fallen-back' ? true : undefined));
    const failures: CheckpointerError[] = [];
    store.observeCheckpoints({ failed: (e) => failures.push(e) });
    expect(failures.map((e) => [e.code, /no checkpointer here/.test(e.message)])).toEqual([
      ['sqlite_checkpointer_failed', true],
    ]);
    const dbSize = statSync(path).size;
    await store.migrate();
    await writeSessions(store, 0, 600);
    expect(statSync(path).size).toBeGreaterThan(dbSize);
  });

  it('stops with the store: close waits for the worker, and a store never closed does not keep its process alive', () => {
    const path = freshPath();
    const script = `
      import { SqliteStore } from './src/store/sqlite/sqlite-store.ts';
      const closed = new SqliteStore(${JSON.stringify(path)}, { checkpoints: { pollMs: 5, startDelayMs: 0 } });
      await closed.migrate();
      for (let i = 0; i < 500 && closed.checkpointer === 'starting'; i++)
        await new Promise((resolve) => setTimeout(resolve, 10));
      if (closed.checkpointer !== 'running') throw new Error('not running: ' + closed.checkpointer);
      await closed.close();
      if (closed.checkpointer !== 'closed') throw new Error('still ' + closed.checkpointer);
      const left = new SqliteStore(${JSON.stringify(`${path}-2`)}, { checkpoints: { pollMs: 5, startDelayMs: 0 } });
      await left.migrate();
      for (let i = 0; i < 500 && left.checkpointer === 'starting'; i++)
        await new Promise((resolve) => setTimeout(resolve, 10));
      if (left.checkpointer !== 'running') throw new Error('not running: ' + left.checkpointer);
      const early = new SqliteStore(${JSON.stringify(`${path}-3`)}, { checkpoints: { startDelayMs: 0 } });
      await early.close();
      const later = new SqliteStore(${JSON.stringify(`${path}-4`)});
      if (later.checkpointer !== 'waiting') throw new Error('started at once: ' + later.checkpointer);
      await later.close();
      console.log('done');
    `;
    const started = Date.now();
    const out = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: join(import.meta.dirname, '../../..'),
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(out.trim()).toBe('done');
    // It ended on its own: nothing but tsx's start-up took time.
    expect(Date.now() - started).toBeLessThan(30_000);
  });
});
