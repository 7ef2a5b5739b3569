import { DatabaseSync, type StatementSync } from 'node:sqlite';
import { migrations } from '../migrations.js';
import { storeFailure } from '../rows.js';

/**
 * The SQLite file as both stores on it use it (the session store, ./sqlite-store.ts, and the
 * trigger store, ./steps-runner.ts): opened with the pragmas every write relies on,
 * migrated, and written in BEGIN IMMEDIATE transactions through cached statements.
 */

/** How long a writer waits for another connection's write lock before failing (SQLITE_BUSY). */
const BUSY_TIMEOUT_MS = 5000;

export function openDatabase(path: string): DatabaseSync {
  let db: DatabaseSync | undefined;
  try {
    db = new DatabaseSync(path);
    // WAL: readers do not block the writer and a commit is one append to the log.
    db.exec('PRAGMA journal_mode = WAL');
    // Every write of this store guards an effect that follows it (record, then send): FULL
    // makes each one durable against a power cut, not only against a crash of the process
    // (test/faults/power-loss.test.ts cuts the power under it).
    db.exec('PRAGMA synchronous = FULL');
    db.exec(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`);
    // Turns must belong to a session that exists (node:sqlite turns this on by default, but
    // say it rather than depend on that).
    db.exec('PRAGMA foreign_keys = ON');
  } catch (cause) {
    if (db?.isOpen) db.close();
    throw storeFailure('sqlite store: open', cause);
  }
  return db;
}

/** The durability settings in force, as SQLite reports them. */
export function durabilityOf(db: DatabaseSync): {
  journalMode: string;
  synchronous: 'off' | 'normal' | 'full' | 'extra';
} {
  const journal = db.prepare('PRAGMA journal_mode').get();
  const sync = Number(db.prepare('PRAGMA synchronous').get()?.synchronous);
  const levels = ['off', 'normal', 'full', 'extra'] as const;
  return { journalMode: String(journal?.journal_mode), synchronous: levels[sync] ?? 'off' };
}

/** Applies the migrations not yet recorded in schema_migrations, in one transaction. */
export function migrateDatabase(db: DatabaseSync): void {
  immediate(db, () => {
    db.exec(
      `CREATE TABLE IF NOT EXISTS schema_migrations (
         version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL
       ) STRICT`,
    );
    const done = new Set(
      db
        .prepare('SELECT version FROM schema_migrations')
        .all()
        .map((row) => row.version),
    );
    for (const migration of migrations) {
      if (done.has(migration.version)) continue;
      db.exec(migration.sqlite);
      db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(
        migration.version,
        migration.name,
        Date.now(),
      );
    }
  });
}

/**
 * Runs `body` in a BEGIN IMMEDIATE transaction: the write lock is taken up front, so another
 * connection to the same file waits out busy_timeout instead of failing when a read lock would
 * have to be upgraded halfway through.
 */
export function immediate<T>(db: DatabaseSync, body: () => T): T {
  db.exec('BEGIN IMMEDIATE');
  try {
    const result = body();
    db.exec('COMMIT');
    return result;
  } catch (error) {
    // The original error is what the caller needs; a failed rollback (the connection is
    // broken) would only hide it.
    try {
      if (db.isTransaction) db.exec('ROLLBACK');
    } catch {}
    throw error;
  }
}

/** Prepared statements by their text, prepared once (`prepareAs` rewrites a text first). */
export class Statements {
  readonly #db: DatabaseSync;
  readonly #prepareAs: (sql: string) => string;
  readonly #cache = new Map<string, StatementSync>();

  constructor(db: DatabaseSync, prepareAs: (sql: string) => string = (sql) => sql) {
    this.#db = db;
    this.#prepareAs = prepareAs;
  }

  get(sql: string): StatementSync {
    let statement = this.#cache.get(sql);
    if (statement === undefined) {
      statement = this.#db.prepare(this.#prepareAs(sql));
      this.#cache.set(sql, statement);
    }
    return statement;
  }

  clear(): void {
    this.#cache.clear();
  }
}
