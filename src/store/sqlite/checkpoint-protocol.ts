/**
 * What the WAL checkpointer's thread (./checkpoint-worker.ts) and the store's side of it
 * (./checkpointer.ts) say to each other. Types only: the worker imports nothing at run time
 * but Node's own modules.
 */

/**
 * 'PASSIVE': a checkpoint (`PRAGMA wal_checkpoint(PASSIVE)`); 'restart': the worker's own
 * one-page write that starts a fully copied log over, while the store holds its writes.
 */
export type CheckpointMode = 'PASSIVE' | 'restart';

/**
 * Why it ran: the log past the threshold, a quiet log, the log past its ceiling, or a hold
 * the store started (its next commit would have started the log over itself).
 */
export type CheckpointReason = 'threshold' | 'idle' | 'ceiling' | 'hold';

export interface CheckpointerSettings {
  /** The database file (its `-wal` and `-shm` sit beside it). */
  path: string;
  /** Frames not yet copied into the database that start a checkpoint. */
  thresholdFrames: number;
  /** A log this long (frames since it last started over) is started over, not only copied. */
  ceilingFrames: number;
  /** How often the worker reads the wal-index, in ms. */
  pollMs: number;
  /** A log unchanged this long, with frames not yet copied, is checkpointed, in ms. */
  idleMs: number;
  /**
   * `journal_size_limit` in bytes: the -wal file is cut back to it by the commit that starts the
   * log over (the worker's, so both connections have it).
   */
  journalSizeLimit: number;
  /** How long the worker's restart write waits for the write lock, in ms. */
  restartBusyMs: number;
  /** After a failed checkpoint or a restart that did not happen, the pause before the next try, in ms. */
  retryMs: number;
}

/** One checkpoint, as SQLite reported it (`PRAGMA wal_checkpoint`). */
export interface CheckpointReport {
  mode: CheckpointMode;
  reason: CheckpointReason;
  /** Not finished: a reader held on (PASSIVE), or the log did not start over (restart); tried again later. */
  busy: boolean;
  /** Frames in the log. */
  logFrames: number;
  /** Frames of the log now in the database file. */
  checkpointedFrames: number;
  /** Frames this checkpoint copied. */
  backfilledFrames: number;
  durationMs: number;
}

/**
 * `hold`: the worker asks the store to hold its writes (the log is fully copied, or at its
 * ceiling); `held`: the store holds them until `release` with the same id (or a timeout).
 */
export type FromCheckpointer =
  | { kind: 'ready' }
  | { kind: 'hold' }
  | { kind: 'release'; id: number }
  | ({ kind: 'checkpoint' } & CheckpointReport)
  | { kind: 'checkpoint-failed'; mode: CheckpointMode; message: string; sqlite?: string };

export type ToCheckpointer = { kind: 'held'; id: number } | { kind: 'stop' };
