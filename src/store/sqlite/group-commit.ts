import type { DatabaseSync } from 'node:sqlite';
import { storeFailure } from '../rows.js';

/**
 * Group commit for SQLite's durable writes. With synchronous=FULL every transaction ends in an
 * fsync, which costs the same for one small write as for a hundred; the session engine makes
 * many small writes at once (each session's driver records its turn before its send). So writes
 * asked for in the same turn of the event loop are applied together, each in a savepoint of one
 * transaction, and committed with one fsync. Each caller's promise settles only after that
 * commit: a write it was told is done is on disk. A write that fails (a stale version, a
 * missing turn) rolls back its own savepoint only; a commit that fails (disk full, I/O error)
 * fails every write of the batch, none of which is then stored.
 */

interface Pending {
  operation: string;
  body: () => unknown;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

/** Writes per transaction; more wait for the next one, so a burst does not hold the lock long. */
const MAX_BATCH = 256;

export class GroupCommit {
  readonly #db: DatabaseSync;
  readonly #pending: Pending[] = [];
  #scheduled = false;

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
  flushNow(): void {
    while (this.#pending.length > 0) this.#flushBatch();
  }

  #flush(): void {
    this.#scheduled = false;
    this.#flushBatch();
    if (this.#pending.length > 0 && !this.#scheduled) {
      this.#scheduled = true;
      setImmediate(() => this.#flush());
    }
  }

  #flushBatch(): void {
    const batch = this.#pending.splice(0, MAX_BATCH);
    if (batch.length === 0 || !this.#db.isOpen) {
      for (const w of batch)
        w.reject(storeFailure(`sqlite store: ${w.operation}`, new Error('the store is closed')));
      return;
    }
    try {
      this.#db.exec('BEGIN IMMEDIATE');
    } catch (cause) {
      for (const w of batch) w.reject(storeFailure(`sqlite store: ${w.operation}`, cause));
      return;
    }
    const outcomes: Outcome[] = [];
    for (const w of batch) {
      try {
        this.#db.exec('SAVEPOINT write');
      } catch (error) {
        outcomes.push({ ok: false, error });
        continue;
      }
      try {
        outcomes.push({ ok: true, value: w.body() });
        this.#db.exec('RELEASE write');
      } catch (error) {
        outcomes.push({ ok: false, error });
        try {
          this.#db.exec('ROLLBACK TO write');
          this.#db.exec('RELEASE write');
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
      for (const w of batch) w.reject(storeFailure(`sqlite store: ${w.operation}`, cause));
      return;
    }
    batch.forEach((w, i) => {
      const outcome = outcomes[i] as Outcome;
      if (outcome.ok) w.resolve(outcome.value);
      else w.reject(storeFailure(`sqlite store: ${w.operation}`, outcome.error));
    });
  }
}
