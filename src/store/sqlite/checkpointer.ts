import { closeSync, openSync } from 'node:fs';
import type { DatabaseSync } from 'node:sqlite';
import { Worker } from 'node:worker_threads';
import { KourierError } from '../../core/errors.js';
import type {
  CheckpointerSettings,
  CheckpointMode,
  CheckpointReport,
  FromCheckpointer,
  ToCheckpointer,
} from './checkpoint-protocol.js';
import { readWalIndex } from './checkpoint-worker.js';

/**
 * SQLite's WAL checkpoints, moved off the event loop. By default SQLite checkpoints inside the
 * COMMIT that takes the log past 1,000 pages: it syncs the log, copies the pages into the
 * database file and syncs that, on the thread that committed; and the next commit, finding the
 * log fully copied, starts it over and fsyncs its new header first. So the broker's event loop
 * (and every session's stream) stood still for 3–46 ms a few times a second under load. Here
 * the store's connection has `wal_autocheckpoint = 0`, and a worker thread with its own
 * connection to the same file (./checkpoint-worker.ts) checkpoints instead, in PASSIVE mode,
 * when the log has grown past a threshold or has been quiet a while, and starts a fully copied
 * log over itself, with one page written while the store holds its writes (the hold: new
 * transactions wait, the event loop runs on). `journal_size_limit` cuts the -wal file back
 * when the log starts over, so its size stays bounded over time.
 *
 * A thread, not a second connection on the main thread: node:sqlite is synchronous, so a
 * checkpoint run from this thread would block it just the same. The worker watches the log
 * itself (one pread of the wal-index per poll) rather than being told by the store: the store
 * does not know how many pages its commits wrote (node:sqlite has no WAL hook), and the trigger
 * store and the other rows write on the same connection outside the group commit. The store
 * reads the same header before each group commit's BEGIN and right after it (beforeCommit; a
 * transaction held after BEGIN is rolled back, nothing in it yet) to hold a commit that would
 * start the log over itself: SQLite decides that at BEGIN, from the log as it stands then.
 *
 * Durability is unchanged, whatever the worker does while the group commit's fsync of the WAL
 * (./group-commit.ts) is in flight:
 * - A write's caller is answered after an fsync of the WAL file that began after the write's
 *   COMMIT. A checkpoint never removes or rewrites a frame: a PASSIVE one copies frames into
 *   the database file (the log is untouched), and before it copies it fsyncs the log itself
 *   (SQLite does so at any `synchronous` but OFF), so every frame it copies is already on disk
 *   in the log, acknowledged or not.
 * - The log is only overwritten from its start (a restart, by whichever connection writes next)
 *   or truncated (journal_size_limit, in the commit that restarted it) once every frame of it
 *   is in the database file and the database file has been fsynced: SQLite publishes "all
 *   frames copied" (nBackfill = mxFrame) only after that fsync, and restarts only then, in
 *   either connection. So a frame whose caller was told it is durable is on disk either in the
 *   log or, before the log can lose it, in the database file. An fsync of ours in flight during
 *   a restart or truncation syncs the same file (the group commit keeps one descriptor; the
 *   -wal file is never deleted while the store's connection is open), and covers the frames
 *   written before it began, as before.
 * - A restart writes a new log header, which SQLite fsyncs in that commit before the first new
 *   frame (so a crash cannot pair the old header with frames of the new log and replay a stale
 *   prefix of the old one). The worker's connection runs at NORMAL, which keeps that fsync (only
 *   OFF skips it; nothing here uses OFF). Its commit's own frame (user_version, rewritten
 *   unchanged) is not synced before the hold ends: losing it loses nothing, and a frame the
 *   store commits after it is answered only after an fsync that covers both.
 *
 * The hold is bounded (holdTimeoutMs), and a hold that did not start the log over is not
 * repeated at once: the store's commit then lets SQLite start it over on the connection, with
 * the header's fsync on the event loop, as without a worker. If the worker fails (it cannot
 * start, throws, exits), the store's connection goes back to SQLite's own checkpoints
 * (`wal_autocheckpoint = 1000`) and the failure is reported once as a CheckpointerError: the log
 * keeps being checkpointed, on the event loop again, rather than growing without end. A
 * checkpoint that fails in a live worker (a full disk) is reported and tried again later; it
 * loses nothing (the log still holds what the database does not).
 */

/** SQLite's default autocheckpoint, the fallback when the worker is gone. */
const FALLBACK_AUTOCHECKPOINT_PAGES = 1000;

const DEFAULTS: Omit<CheckpointerSettings, 'path'> = {
  // SQLite's own threshold: about 4 MiB of 4 KiB pages.
  thresholdFrames: 1000,
  // About 40 MiB: a log that has not been able to start over for this long is restarted.
  ceilingFrames: 10_000,
  pollMs: 50,
  idleMs: 1000,
  // Twice the threshold's size.
  journalSizeLimit: 8 * 1024 * 1024,
  restartBusyMs: 100,
  retryMs: 1000,
};

const DEFAULT_START_DELAY_MS = 1000;

/**
 * How long the store holds its writes for the worker at most: a hold costs about one fsync (the
 * new log header's); past this the writes go on, and SQLite starts the log over in the store's
 * next commit, its header's fsync on the event loop, as without a worker.
 */
const DEFAULT_HOLD_TIMEOUT_MS = 250;

/** How long close waits for the worker to finish a checkpoint and stop before ending it. */
const STOP_TIMEOUT_MS = 10_000;

export interface CheckpointerOptions extends Partial<Omit<CheckpointerSettings, 'path'>> {
  /**
   * How long after the store opens the worker starts, in ms (default 1 s): a store open for
   * less (a test, a one-off tool) costs no thread, and a broker's log grows at most a second
   * longer before its first checkpoint.
   */
  startDelayMs?: number;
  /** How long the store holds its writes for the worker at most, in ms (default 250). */
  holdTimeoutMs?: number;
  /** The worker's script (a seam for tests; default ./checkpoint-worker, .ts or .js as this file). */
  script?: URL;
}

/** The checkpointer failed ('sqlite_checkpointer_failed') or one of its checkpoints did ('sqlite_checkpoint_failed'). */
export class CheckpointerError extends KourierError {
  /** The checkpoint's mode, for a failed checkpoint. */
  readonly mode: CheckpointMode | undefined;

  constructor(
    code: 'sqlite_checkpointer_failed' | 'sqlite_checkpoint_failed',
    message: string,
    options: { cause?: unknown; mode?: CheckpointMode } = {},
  ) {
    super(code, message, options.cause === undefined ? {} : { cause: options.cause });
    this.mode = options.mode;
  }
}

export interface CheckpointObserver {
  /** Each checkpoint the worker ran. */
  checkpointed?(report: CheckpointReport): void;
  /** A checkpoint that failed (retried later), or the worker itself (checkpoints are back on the connection). */
  failed?(error: CheckpointerError): void;
}

/** 'waiting': not started yet (startDelayMs); 'fallen-back': SQLite checkpoints on the connection again. */
export type CheckpointerState = 'waiting' | 'starting' | 'running' | 'fallen-back' | 'closed';

export class WalCheckpointer {
  readonly #db: DatabaseSync;
  readonly #settings: CheckpointerSettings;
  readonly #script: URL;
  readonly #path: string;
  readonly #holdTimeoutMs: number;
  #worker: Worker | undefined;
  #exited: Promise<void> = Promise.resolve();
  #startTimer: NodeJS.Timeout | undefined;
  #state: CheckpointerState = 'waiting';
  #stopping = false;
  #observers: CheckpointObserver[] = [];
  /** A worker failure seen before anyone observed: told to the first observer. */
  #unreported: CheckpointerError | undefined;
  /** The store's writes held for the worker (it starts the log over meanwhile). */
  #hold: { id: number; released: Promise<void>; release: () => void } | undefined;
  #holds = 0;
  /** A hold ended since the group commit last found the log not fully copied. */
  #afterHold = false;
  /** No hold starts from a commit before then (the last one did not start the log over). */
  #noHoldBefore = 0;
  /** The wal-index, read before each group commit (one pread). */
  #shm: number | undefined;

  constructor(db: DatabaseSync, path: string, options: CheckpointerOptions = {}) {
    this.#db = db;
    const { script, startDelayMs, holdTimeoutMs, ...rest } = options;
    this.#holdTimeoutMs = holdTimeoutMs ?? DEFAULT_HOLD_TIMEOUT_MS;
    this.#path = path;
    this.#settings = { ...DEFAULTS, ...rest, path };
    this.#script = script ?? defaultScript();
    db.exec('PRAGMA wal_autocheckpoint = 0');
    db.exec(`PRAGMA journal_size_limit = ${Math.trunc(this.#settings.journalSizeLimit)}`);
    const delay = startDelayMs ?? DEFAULT_START_DELAY_MS;
    if (delay <= 0) this.#start();
    else {
      this.#startTimer = setTimeout(() => this.#start(), delay);
      this.#startTimer.unref();
    }
  }

  #start(): void {
    this.#startTimer = undefined;
    if (this.#state !== 'waiting') return;
    this.#state = 'starting';
    let worker: Worker;
    try {
      worker = new Worker(this.#script, {
        workerData: { kind: 'ak-checkpointer', settings: this.#settings },
        // The worker needs no flag of the broker's (a loader, --cpu-prof, --expose-gc).
        execArgv: [],
      });
    } catch (error) {
      this.#fail(error);
      return;
    }
    this.#worker = worker;
    worker.on('message', (message: FromCheckpointer) => this.#receive(message));
    worker.on('error', (error) => this.#fail(error));
    this.#exited = new Promise((resolve) => {
      worker.once('exit', (code) => {
        if (!this.#stopping) this.#fail(new Error(`the checkpointer thread exited (code ${code})`));
        resolve();
      });
    });
    // Never what keeps a process alive: close() stops it, and a process that ends stops it too
    // (after the listeners: adding one takes a reference again).
    worker.unref();
  }

  /** 'running' once the worker is up; 'fallen-back' when SQLite checkpoints on the connection again. */
  get state(): CheckpointerState {
    return this.#state;
  }

  /**
   * Asked by the group commit before each transaction: undefined to go on, or a promise to wait
   * for first. It waits while the store's writes are held for the worker, and starts a hold
   * when the log is fully copied, since the commit would then start the log over itself, with
   * the new header's fsync on the event loop. The worker starts it over instead (it usually
   * has asked already: this covers the moment between its checkpoint and its ask).
   */
  beforeCommit(): Promise<void> | undefined {
    if (this.#hold !== undefined) return this.#hold.released;
    if (this.#state !== 'running' || performance.now() < this.#noHoldBefore) return undefined;
    let index: ReturnType<typeof readWalIndex>;
    try {
      this.#shm ??= openSync(`${this.#path}-shm`, 'r');
      index = readWalIndex(this.#shm);
    } catch {
      return undefined;
    }
    if (index === undefined || index.mxFrame === 0 || index.nBackfill !== index.mxFrame) {
      this.#afterHold = false;
      return undefined;
    }
    if (this.#afterHold) {
      // The last hold ended with the log still fully copied (not started over): go on, and let
      // SQLite start it over in this commit rather than hold again and again.
      this.#afterHold = false;
      this.#noHoldBefore = performance.now() + this.#settings.retryMs;
      return undefined;
    }
    return this.#startHold();
  }

  /** Holds the store's writes until the worker releases them (or holdTimeoutMs passes). */
  #startHold(): Promise<void> {
    if (this.#hold !== undefined) return this.#hold.released;
    const id = ++this.#holds;
    let release = (): void => undefined;
    const released = new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        // The worker did not answer: go on, and do not hold again for a while.
        this.#noHoldBefore = performance.now() + this.#settings.retryMs;
        release();
      }, this.#holdTimeoutMs);
      release = () => {
        clearTimeout(timer);
        if (this.#hold?.id === id) this.#hold = undefined;
        this.#afterHold = true;
        resolve();
      };
    });
    this.#hold = { id, released, release };
    const held: ToCheckpointer = { kind: 'held', id };
    this.#worker?.postMessage(held);
    return released;
  }

  observe(observer: CheckpointObserver): void {
    this.#observers.push(observer);
    if (this.#unreported !== undefined) {
      observer.failed?.(this.#unreported);
      this.#unreported = undefined;
    }
  }

  /**
   * Stops the worker (before the connection closes): a running one is asked to stop and waited
   * for, so a checkpoint it is running finishes; one still loading has run none and is ended.
   */
  async close(): Promise<void> {
    if (this.#state === 'closed') return;
    const was = this.#state;
    this.#stopping = true;
    this.#state = 'closed';
    this.#hold?.release();
    if (this.#startTimer !== undefined) clearTimeout(this.#startTimer);
    if (this.#shm !== undefined) closeSync(this.#shm);
    this.#shm = undefined;
    const worker = this.#worker;
    if (worker === undefined) return;
    if (was === 'starting') {
      await worker.terminate();
    } else {
      const stop: ToCheckpointer = { kind: 'stop' };
      worker.postMessage(stop);
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<'late'>((resolve) => {
        timer = setTimeout(() => resolve('late'), STOP_TIMEOUT_MS);
      });
      if ((await Promise.race([this.#exited, late])) === 'late') await worker.terminate();
      clearTimeout(timer);
    }
    await this.#exited;
  }

  #receive(message: FromCheckpointer): void {
    if (message.kind === 'ready') {
      if (this.#state === 'starting') this.#state = 'running';
    } else if (message.kind === 'hold') {
      // Granted at once: no transaction of this connection is running between two turns of the loop.
      if (this.#state === 'running') void this.#startHold();
    } else if (message.kind === 'release') {
      if (this.#hold?.id === message.id) this.#hold.release();
    } else if (message.kind === 'checkpoint') {
      const { kind: _, ...report } = message;
      if (report.mode === 'restart' && report.busy)
        this.#noHoldBefore = performance.now() + this.#settings.retryMs;
      for (const o of this.#observers) o.checkpointed?.(report);
    } else {
      const detail =
        message.sqlite === undefined ? message.message : `${message.message} (${message.sqlite})`;
      this.#report(
        new CheckpointerError(
          'sqlite_checkpoint_failed',
          `sqlite ${message.mode} checkpoint failed: ${detail}`,
          { mode: message.mode },
        ),
      );
    }
  }

  #fail(cause: unknown): void {
    if (this.#stopping || this.#state === 'fallen-back') return;
    this.#state = 'fallen-back';
    this.#hold?.release();
    // Back to SQLite's own checkpoints, on the connection: the log must not grow forever.
    if (this.#db.isOpen) this.#db.exec(`PRAGMA wal_autocheckpoint = ${FALLBACK_AUTOCHECKPOINT_PAGES}`);
    void this.#worker?.terminate();
    const detail = cause instanceof Error ? cause.message : String(cause);
    const error = new CheckpointerError(
      'sqlite_checkpointer_failed',
      `the sqlite checkpointer failed, checkpoints run on the store's connection again: ${detail.slice(0, 300)}`,
      { cause },
    );
    if (this.#observers.length === 0) this.#unreported = error;
    this.#report(error);
  }

  #report(error: CheckpointerError): void {
    for (const o of this.#observers) o.failed?.(error);
  }
}

/** The worker beside this module: .ts when run from the sources (Node strips the types), .js from dist/. */
function defaultScript(): URL {
  const extension = import.meta.url.endsWith('.ts') ? 'ts' : 'js';
  return new URL(`./checkpoint-worker.${extension}`, import.meta.url);
}
