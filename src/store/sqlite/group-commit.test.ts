import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, describe, expect, it } from 'vitest';
import { StoreError } from '../../core/errors.js';
import { GroupCommit } from './group-commit.js';

describe('GroupCommit: the writes of one turn of the event loop in one transaction', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  function open(): DatabaseSync {
    const dir = mkdtempSync(join(tmpdir(), 'ak-group-commit-'));
    dirs.push(dir);
    const db = new DatabaseSync(join(dir, 'x.db'));
    db.exec('PRAGMA journal_mode = WAL');
    db.exec('PRAGMA synchronous = FULL');
    db.exec('CREATE TABLE t (v TEXT)');
    return db;
  }

  const values = (db: DatabaseSync) =>
    db
      .prepare('SELECT v FROM t ORDER BY rowid')
      .all()
      .map((r) => r.v);

  it('runs the writes asked for together in one transaction, in order, and answers each after its COMMIT', async () => {
    const db = open();
    const writes = new GroupCommit(db);
    const seen: string[] = [];
    // A second connection sees what is committed: nothing until the group's COMMIT, then all.
    const other = new DatabaseSync(db.location() as string);
    const write = (v: string) => () => {
      db.prepare('INSERT INTO t (v) VALUES (?)').run(v);
      seen.push(`${v}:${db.isTransaction}:${other.prepare('SELECT count(*) AS n FROM t').get()?.n}`);
      return v;
    };
    const all = Promise.all(['a', 'b', 'c'].map((v) => writes.write('insert', write(v))));
    expect(seen).toEqual([]);
    await expect(all).resolves.toEqual(['a', 'b', 'c']);
    // Each ran inside the one open transaction, none of the others visible outside it yet.
    expect(seen).toEqual(['a:true:0', 'b:true:0', 'c:true:0']);
    expect(other.prepare('SELECT count(*) AS n FROM t').get()?.n).toBe(3);
    other.close();
    db.close();
  });

  it('a write that throws rolls back its own savepoint only, and fails with a StoreError', async () => {
    const db = open();
    const writes = new GroupCommit(db);
    const a = writes.write('insert', () => db.prepare("INSERT INTO t (v) VALUES ('a')").run());
    const bad = writes.write('insert', () => {
      db.prepare("INSERT INTO t (v) VALUES ('half')").run();
      throw new Error('stale');
    });
    const c = writes.write('insert', () => db.prepare("INSERT INTO t (v) VALUES ('c')").run());
    await expect(bad).rejects.toBeInstanceOf(StoreError);
    await Promise.all([a, c]);
    expect(values(db)).toEqual(['a', 'c']);
    db.close();
  });

  it('a failed COMMIT fails every write of its transaction, none of which is stored; the next transaction goes on', async () => {
    const db = open();
    const writes = new GroupCommit(db);
    const a = writes.write('insert', () => db.prepare("INSERT INTO t (v) VALUES ('a')").run());
    // b ends the transaction under the group commit's feet: its COMMIT then fails.
    const b = writes.write('insert', () => {
      db.prepare("INSERT INTO t (v) VALUES ('b')").run();
      db.exec('ROLLBACK');
    });
    await expect(a).rejects.toBeInstanceOf(StoreError);
    await expect(b).rejects.toBeInstanceOf(StoreError);
    await writes.write('insert', () => db.prepare("INSERT INTO t (v) VALUES ('c')").run());
    expect(values(db)).toEqual(['c']);
    db.close();
  });

  it('drain() applies the waiting writes at once; a write after the connection closed fails', async () => {
    const db = open();
    const writes = new GroupCommit(db);
    const a = writes.write('insert', () => db.prepare("INSERT INTO t (v) VALUES ('a')").run());
    await writes.drain();
    expect(values(db)).toEqual(['a']);
    await a;
    db.close();
    await expect(writes.write('insert', () => undefined)).rejects.toBeInstanceOf(StoreError);
  });
});
