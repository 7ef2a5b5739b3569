import { closeSync, fsync, openSync } from 'node:fs';
import type { DatabaseSync, StatementSync } from 'node:sqlite';
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
 *
 * A transaction's writes run back to back on the event loop, so they are cut in slices of
 * about 2 ms: when a slice's time is up the transaction commits with the writes it ran, the
 * loop turns (the streams' I/O that arrived meanwhile is read), and the rest go, first in line
 * and in their order, into the next transaction. Each is answered after its own transaction's
 * fsync, as before; one fsync usually covers several slices.
 *
 * The fsync runs off the event loop. With synchronous=FULL, SQLite would fsync the WAL inside
 * COMMIT, on this thread, and every stream of every session would stand still for as long as
 * the disk takes (milliseconds on a busy disk, for each batch). So when given the WAL file, a
 * batch commits with synchronous=NORMAL (the frames are appended, not synced; set back to FULL
 * at once, so the trigger store's own transactions keep FULL), then the WAL file is fsynced on
 * libuv's thread pool, and only then is any caller of the batch answered: a write is still on
 * disk before the caller is told it is done, and so before the effect it guards. One fsync
 * covers every frame written before it began, so batches committed while one runs wait for the
 * next (which also covers them all). The WAL is append-only between checkpoints, and SQLite
 * syncs it before each checkpoint, so nothing a caller was told is durable can be overwritten
 * before it is on disk; checkpoints run on a thread of their own, concurrently with this fsync
 * (./checkpointer.ts says why that holds there too), and may hold a transaction (the `gate`,
 * asked before BEGIN and after it) while they start the log over. A failed fsync fails its batches and every write after it: after a
 * failed fsync the kernel may have dropped the pages, so nothing written since can be trusted
 * to be on disk (the broker must restart).
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

/**
 * How long one transaction's writes may run on the event loop before it commits and lets the
 * loop turn (the rest wait for the next transaction, after the I/O that arrived meanwhile): a
 * burst of 256 writes ran back to back for 15 ms and more (over 100 ms on a busy machine), and
 * every stream of every session waited.
 */
const DEFAULT_SLICE_MS = 2;

export interface GroupCommitOptions {
  /**
   * The WAL file to fsync after each batch, off the event loop (synchronous=FULL on a file).
   * Unset: each COMMIT is as durable as the connection's synchronous setting makes it.
   */
  walPath?: string;
  /** The fsync used on the WAL file (a seam for tests; default node:fs's, on the thread pool). */
  fsync?: (fd: number, done: (error: NodeJS.ErrnoException | null) => void) => void;
  /** The time one transaction's writes may take on the event loop (default 2 ms; a seam for tests). */
  sliceMs?: number;
  /** The clock the slice is measured with, in ms (default performance.now; a seam for tests). */
  now?: () => number;
  /**
   * Asked before each transaction: a promise to wait for before it begins (the WAL checkpointer
   * holding the writes while it starts the log over, ./checkpointer.ts), or undefined.
   */
  gate?: () => Promise<void> | undefined;
}

export class GroupCommit {
  readonly #db: DatabaseSync;
  readonly #pending: Pending[] = [];
  readonly #walPath: string | undefined;
  readonly #fsync: NonNullable<GroupCommitOptions['fsync']>;
  readonly #sliceMs: number;
  readonly #now: () => number;
  readonly #gate: (() => Promise<void> | undefined) | undefined;
  #scheduled = false;
  #statements: { savepoint: StatementSync; release: StatementSync; rollbackTo: StatementSync } | undefined;
  /** The WAL file, opened after the first commit (SQLite creates it). */
  #walFd: number | undefined;
  /** Batches committed and waiting for an fsync that begins after their commit. */
  readonly #unsynced: Array<(error: unknown) => void> = [];
  #syncing: Promise<void> | undefined;
  /** Set by a failed fsync: every later write fails with it. */
  #broken: unknown;
  /** How many writes of the batch #apply has run (what a failed transaction took with it). */
  #applied = 0;

  constructor(db: DatabaseSync, options: GroupCommitOptions = {}) {
    this.#db = db;
    this.#walPath = options.walPath;
    this.#fsync = options.fsync ?? fsync;
    this.#sliceMs = options.sliceMs ?? DEFAULT_SLICE_MS;
    this.#now = options.now ?? (() => performance.now());
    this.#gate = options.gate;
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

  /**
   * Applies every waiting write now and waits until every one is durable (before the database
   * is closed); then lets the WAL file go.
   */
  async drain(): Promise<void> {
    // Not gated: closing, the writes go now.
    while (this.#pending.length > 0) this.#flushBatch(false);
    while (this.#syncing !== undefined) await this.#syncing;
    if (this.#walFd !== undefined) {
      closeSync(this.#walFd);
      this.#walFd = undefined;
    }
  }

  #flush(): void {
    const wait = this.#pending.length > 0 ? this.#gate?.() : undefined;
    if (wait !== undefined) {
      // Still scheduled: writes asked for meanwhile join the batch that runs after the wait.
      void wait.then(() => setImmediate(() => this.#flush()));
      return;
    }
    this.#scheduled = false;
    const held = this.#flushBatch(true);
    if (held !== undefined) {
      this.#scheduled = true;
      void held.then(() => setImmediate(() => this.#flush()));
      return;
    }
    if (this.#pending.length > 0 && !this.#scheduled) {
      this.#scheduled = true;
      setImmediate(() => this.#flush());
    }
  }

  /** One transaction; a promise when the gate held it after BEGIN (the batch is back in line). */
  #flushBatch(gated: boolean): Promise<void> | undefined {
    const batch = this.#pending.splice(0, MAX_BATCH);
    if (batch.length === 0) return;
    if (!this.#db.isOpen || this.#broken !== undefined) {
      const cause = this.#broken ?? new Error('the store is closed');
      for (const w of batch) w.reject(storeFailure(`sqlite store: ${w.operation}`, cause));
      return;
    }
    const deferSync = this.#walPath !== undefined;
    let outcomes: Outcome[];
    try {
      if (deferSync) this.#db.exec('PRAGMA synchronous = NORMAL');
      try {
        const applied = this.#apply(batch, gated);
        if (!Array.isArray(applied)) {
          // Rolled back before any write ran: the whole batch waits, first in line.
          this.#pending.unshift(...batch);
          return applied;
        }
        outcomes = applied;
      } finally {
        if (deferSync) this.#db.exec('PRAGMA synchronous = FULL');
      }
    } catch (cause) {
      // Writes the slice had not reached were not run: they go back, first in line, for the
      // next transaction (unless none ran: a transaction that cannot begin fails them all).
      if (this.#applied > 0) this.#pending.unshift(...batch.splice(this.#applied));
      for (const w of batch) w.reject(storeFailure(`sqlite store: ${w.operation}`, cause));
      return;
    }
    // The writes past the slice were not run: first in line for the next transaction.
    if (outcomes.length < batch.length) this.#pending.unshift(...batch.splice(outcomes.length));
    const answer = (syncError: unknown): void => {
      batch.forEach((w, i) => {
        const outcome = outcomes[i] as Outcome;
        if (syncError !== undefined) w.reject(storeFailure(`sqlite store: ${w.operation}`, syncError));
        else if (outcome.ok) w.resolve(outcome.value);
        else w.reject(storeFailure(`sqlite store: ${w.operation}`, outcome.error));
      });
    };
    if (!deferSync) answer(undefined);
    else this.#afterSync(answer);
  }

  /**
   * One transaction: each write in its own savepoint, the first ones of the batch until the
   * slice's time is up (one at least). Returns their outcomes; throws when the transaction fails.
   */
  #apply(batch: Pending[], gated: boolean): Outcome[] | Promise<void> {
    this.#applied = 0;
    this.#db.exec('BEGIN IMMEDIATE');
    // Asked again now that this transaction has its snapshot: what decides whether its commit
    // starts the log over is the log as it stood at BEGIN, which the check before could miss.
    const wait = gated ? this.#gate?.() : undefined;
    if (wait !== undefined) {
      this.#db.exec('ROLLBACK');
      return wait;
    }
    const until = this.#now() + this.#sliceMs;
    // Prepared once: a savepoint per write is parsed once, not at every write.
    this.#statements ??= {
      savepoint: this.#db.prepare('SAVEPOINT write'),
      release: this.#db.prepare('RELEASE write'),
      rollbackTo: this.#db.prepare('ROLLBACK TO write'),
    };
    const { savepoint, release, rollbackTo } = this.#statements;
    const outcomes: Outcome[] = [];
    for (const w of batch) {
      if (outcomes.length > 0 && this.#now() >= until) break;
      this.#applied++;
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

  /** Calls `done` once an fsync of the WAL that began after now has finished (or failed). */
  #afterSync(done: (error: unknown) => void): void {
    this.#unsynced.push(done);
    if (this.#syncing === undefined) this.#startSync();
  }

  #startSync(): void {
    const run = this.#sync();
    this.#syncing = run;
    void run.then(() => {
      this.#syncing = undefined;
      // Asked for after the loop below had looked for the last time.
      if (this.#unsynced.length > 0) this.#startSync();
    });
  }

  /** fsyncs until no batch waits; never rejects (a failure is handed to the waiting batches). */
  async #sync(): Promise<void> {
    while (this.#unsynced.length > 0) {
      const waiting = this.#unsynced.splice(0);
      let error: unknown = this.#broken;
      if (error === undefined) {
        try {
          this.#walFd ??= openSync(this.#walPath as string, 'r+');
          const fd = this.#walFd;
          await new Promise<void>((resolve, reject) =>
            this.#fsync(fd, (e) => (e === null ? resolve() : reject(e))),
          );
        } catch (cause) {
          error = cause;
          this.#broken ??= cause;
        }
      }
      for (const done of waiting) done(error);
    }
  }
}
