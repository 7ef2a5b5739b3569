import type { DatabaseSync, StatementSync } from 'node:sqlite';
import { storeFailure } from '../rows.js';

/**
 * Group commit for SQLite's durable writes. With synchronous=FULL every COMMIT ends in an fsync
 * of the WAL, which costs the same for one small write as for a hundred; the session engine
 * makes many small writes at once (each session's driver records its turn before its send). So
 * the writes asked for in one turn of the event loop run in one transaction, each in a savepoint
 * of its own, and one COMMIT makes them all durable. Each caller's promise settles only after
 * that COMMIT returned: a write it was told is done is on disk, before the effect it guards.
 *
 * A write that fails (a stale version, a missing turn) rolls back its own savepoint only; a
 * COMMIT that fails (disk full, I/O error) fails every write of the transaction, none of which
 * is then stored. SQLite's own checkpoints (wal_autocheckpoint) copy the log back into the
 * database as part of a commit, under the same durability.
 */

interface Pending {
  operation: string;
  body: () => unknown;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

export class GroupCommit {
  readonly #db: DatabaseSync;
  #pending: Pending[] = [];
  #scheduled = false;
  #statements: { savepoint: StatementSync; release: StatementSync; rollbackTo: StatementSync } | undefined;

  constructor(db: DatabaseSync) {
    this.#db = db;
  }

  /** Runs `body` in the next group transaction; resolves with its result once that is durable. */
  write<T>(operation: string, body: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#pending.push({ operation, body, resolve: resolve as (value: unknown) => void, reject });
      if (!this.#scheduled) {
        this.#scheduled = true;
        setImmediate(() => this.#flush());
      }
    });
  }

  /** Applies every waiting write now (before the database is closed). */
  async drain(): Promise<void> {
    this.#flush();
  }

  #flush(): void {
    this.#scheduled = false;
    const batch = this.#pending;
    if (batch.length === 0) return;
    this.#pending = [];
    if (!this.#db.isOpen) {
      for (const w of batch)
        w.reject(storeFailure(`sqlite store: ${w.operation}`, new Error('the store is closed')));
      return;
    }
    let outcomes: Outcome[];
    try {
      outcomes = this.#apply(batch);
    } catch (cause) {
      for (const w of batch) w.reject(storeFailure(`sqlite store: ${w.operation}`, cause));
      return;
    }
    batch.forEach((w, i) => {
      const outcome = outcomes[i] as Outcome;
      if (outcome.ok) w.resolve(outcome.value);
      else w.reject(storeFailure(`sqlite store: ${w.operation}`, outcome.error));
    });
  }

  /** One transaction, each write in its own savepoint; throws when the transaction fails. */
  #apply(batch: Pending[]): Outcome[] {
    this.#db.exec('BEGIN IMMEDIATE');
    this.#statements ??= {
      savepoint: this.#db.prepare('SAVEPOINT write'),
      release: this.#db.prepare('RELEASE write'),
      rollbackTo: this.#db.prepare('ROLLBACK TO write'),
    };
    const { savepoint, release, rollbackTo } = this.#statements;
    const outcomes: Outcome[] = [];
    for (const w of batch) {
      try {
        savepoint.run();
      } catch (error) {
        outcomes.push({ ok: false, error });
        continue;
      }
      try {
        outcomes.push({ ok: true, value: w.body() });
        release.run();
      } catch (error) {
        outcomes.push({ ok: false, error });
        try {
          rollbackTo.run();
          release.run();
        } catch {
          // The transaction itself is broken: the COMMIT below fails and says so.
        }
      }
    }
    try {
      this.#db.exec('COMMIT');
    } catch (cause) {
      try {
        if (this.#db.isTransaction) this.#db.exec('ROLLBACK');
      } catch {}
      throw cause;
    }
    return outcomes;
  }
}
