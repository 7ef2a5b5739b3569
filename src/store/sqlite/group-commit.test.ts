import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, describe, expect, it } from 'vitest';
import { StoreError } from '../../core/errors.js';
import { GroupCommit } from './group-commit.js';

type Done = (error: NodeJS.ErrnoException | null) => void;

/** An fsync the test finishes by hand, so it can look at what was answered meanwhile. */
function heldFsync() {
  const held: Done[] = [];
  return {
    fsync: (_fd: number, done: Done) => {
      held.push(done);
    },
    held,
  };
}

const ticks = async (n = 5) => {
  for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve));
};

describe('GroupCommit with the WAL fsynced off the event loop', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  function open(): { db: DatabaseSync; walPath: string } {
    const dir = mkdtempSync(join(tmpdir(), 'ak-group-commit-'));
    dirs.push(dir);
    const path = join(dir, 'x.db');
    const db = new DatabaseSync(path);
    db.exec('PRAGMA journal_mode = WAL');
    db.exec('PRAGMA synchronous = FULL');
    db.exec('CREATE TABLE t (v TEXT)');
    return { db, walPath: `${path}-wal` };
  }

  const insert = (db: DatabaseSync, v: string) => () => {
    db.prepare('INSERT INTO t (v) VALUES (?)').run(v);
    return v;
  };

  it('answers a write only once the fsync of the WAL after its commit has finished', async () => {
    const { db, walPath } = open();
    const sync = heldFsync();
    const writes = new GroupCommit(db, { walPath, fsync: sync.fsync });
    let answered = false;
    const write = writes.write('insert', insert(db, 'a')).then((v) => {
      answered = true;
      return v;
    });
    await ticks();
    // Committed (visible), its fsync asked for, and nobody told yet.
    expect(db.prepare('SELECT count(*) AS n FROM t').get()?.n).toBe(1);
    expect(sync.held).toHaveLength(1);
    expect(answered).toBe(false);
    sync.held[0]?.(null);
    await expect(write).resolves.toBe('a');
    // Between batches the connection is back at FULL (the trigger store's own commits).
    expect(db.prepare('PRAGMA synchronous').get()?.synchronous).toBe(2);
    db.close();
  });

  it('makes a batch committed while an fsync runs wait for the next fsync', async () => {
    const { db, walPath } = open();
    const sync = heldFsync();
    const writes = new GroupCommit(db, { walPath, fsync: sync.fsync });
    const first = writes.write('insert', insert(db, 'a'));
    await ticks();
    let secondAnswered = false;
    const second = writes.write('insert', insert(db, 'b')).then(() => {
      secondAnswered = true;
    });
    await ticks();
    expect(sync.held).toHaveLength(1);
    // The running fsync may have begun before b's frames were written: it does not answer b.
    sync.held[0]?.(null);
    await first;
    await ticks();
    expect(secondAnswered).toBe(false);
    expect(sync.held).toHaveLength(2);
    sync.held[1]?.(null);
    await second;
    db.close();
  });

  it('fails the writes of a failed fsync, and every write after it, with a StoreError', async () => {
    const { db, walPath } = open();
    const sync = heldFsync();
    const writes = new GroupCommit(db, { walPath, fsync: sync.fsync });
    const first = writes.write('insert', insert(db, 'a'));
    await ticks();
    const eio = Object.assign(new Error('EIO: i/o error, fsync'), { code: 'EIO' });
    sync.held[0]?.(eio);
    await expect(first).rejects.toBeInstanceOf(StoreError);
    // After a failed fsync the kernel may have dropped pages: nothing later is trusted either.
    await expect(writes.write('insert', insert(db, 'b'))).rejects.toBeInstanceOf(StoreError);
    expect(sync.held).toHaveLength(1);
    db.close();
  });

  it('drain() applies the waiting writes and resolves only once they are durable', async () => {
    const { db, walPath } = open();
    const sync = heldFsync();
    const writes = new GroupCommit(db, { walPath, fsync: sync.fsync });
    const write = writes.write('insert', insert(db, 'a'));
    let drained = false;
    const draining = writes.drain().then(() => {
      drained = true;
    });
    await ticks();
    expect(drained).toBe(false);
    sync.held[0]?.(null);
    await draining;
    await expect(write).resolves.toBe('a');
    db.close();
  });

  it('with the real fsync, answers writes (the WAL file opened after the first commit)', async () => {
    const { db, walPath } = open();
    const writes = new GroupCommit(db, { walPath });
    await expect(
      Promise.all(['a', 'b', 'c'].map((v) => writes.write('insert', insert(db, v)))),
    ).resolves.toEqual(['a', 'b', 'c']);
    await writes.drain();
    db.close();
  });

  /** A clock the writes' bodies move: each write takes 1 ms of it. */
  function slowWrites(db: DatabaseSync) {
    const clock = { t: 0 };
    const order: string[] = [];
    const write = (v: string, also?: () => void) => () => {
      order.push(v);
      db.prepare('INSERT INTO t (v) VALUES (?)').run(v);
      also?.();
      clock.t += 1;
      return v;
    };
    return { now: () => clock.t, order, write };
  }

  it('cuts a burst into 2 ms slices: the loop turns between, order kept, each answered after its own fsync', async () => {
    const { db, walPath } = open();
    const sync = heldFsync();
    const slow = slowWrites(db);
    const writes = new GroupCommit(db, { walPath, fsync: sync.fsync, sliceMs: 2, now: slow.now });
    const answered: string[] = [];
    const all = ['a', 'b', 'c', 'd', 'e'].map((v) =>
      writes
        .write(
          'insert',
          slow.write(v, v === 'a' ? () => setImmediate(() => slow.order.push('loop')) : undefined),
        )
        .then((x) => {
          answered.push(x);
        }),
    );
    await ticks(10);
    // Three transactions (a b | c d | e), with what the loop had waiting run after the first.
    expect(slow.order).toEqual(['a', 'b', 'loop', 'c', 'd', 'e']);
    expect(db.prepare('SELECT count(*) AS n FROM t').get()?.n).toBe(5);
    // The first fsync began after the first transaction only: it answers a and b, no more.
    expect(sync.held).toHaveLength(1);
    expect(answered).toEqual([]);
    sync.held[0]?.(null);
    await ticks();
    expect(answered).toEqual(['a', 'b']);
    sync.held[1]?.(null);
    await Promise.all(all);
    expect(answered).toEqual(['a', 'b', 'c', 'd', 'e']);
    db.close();
  });

  it('a failed transaction fails the writes it ran; those past its slice run in the next one', async () => {
    const { db, walPath } = open();
    const slow = slowWrites(db);
    const writes = new GroupCommit(db, { walPath, sliceMs: 2, now: slow.now });
    // b ends the transaction under the group commit's feet: its COMMIT then fails.
    const a = writes.write('insert', slow.write('a'));
    const b = writes.write(
      'insert',
      slow.write('b', () => db.exec('ROLLBACK')),
    );
    const c = writes.write('insert', slow.write('c'));
    await expect(a).rejects.toBeInstanceOf(StoreError);
    await expect(b).rejects.toBeInstanceOf(StoreError);
    await expect(c).resolves.toBe('c');
    expect(
      db
        .prepare('SELECT v FROM t')
        .all()
        .map((r) => r.v),
    ).toEqual(['c']);
    await writes.drain();
    db.close();
  });

  it('waits for its gate before a transaction and again after BEGIN, rolling back and keeping the batch in order', async () => {
    const { db } = open();
    const asked: string[] = [];
    let release = (): void => undefined;
    let holdAt: number | undefined = 2; // the second ask: the one after BEGIN
    const writes = new GroupCommit(db, {
      gate: () => {
        asked.push(db.isTransaction ? 'in transaction' : 'before');
        if (asked.length !== holdAt) return undefined;
        holdAt = undefined;
        return new Promise<void>((resolve) => {
          release = resolve;
        });
      },
    });
    const a = writes.write('insert', insert(db, 'a'));
    const b = writes.write('insert', insert(db, 'b'));
    await ticks();
    // Held after BEGIN: rolled back, nothing written, the lock let go.
    expect(asked).toEqual(['before', 'in transaction']);
    expect(db.isTransaction).toBe(false);
    expect(db.prepare('SELECT count(*) AS n FROM t').get()?.n).toBe(0);
    const c = writes.write('insert', insert(db, 'c'));
    release();
    await expect(Promise.all([a, b, c])).resolves.toEqual(['a', 'b', 'c']);
    expect(
      db
        .prepare('SELECT v FROM t ORDER BY rowid')
        .all()
        .map((r) => r.v),
    ).toEqual(['a', 'b', 'c']);
    db.close();
  });
});
