/**
 * What the WAL checkpointer's thread (./checkpoint-worker.ts) and the store's side of it
 * (./checkpointer.ts) say to each other. Types only: the worker imports nothing at run time
 * but Node's own modules.
 */

export type CheckpointMode = 'PASSIVE' | 'RESTART';

/** Why a checkpoint ran: the log past the threshold, a quiet log, or the log past its ceiling. */
export type CheckpointReason = 'threshold' | 'idle' | 'ceiling';

export interface CheckpointerSettings {
  /** The database file (its `-wal` and `-shm` sit beside it). */
  path: string;
  /** Frames not yet copied into the database that start a checkpoint. */
  thresholdFrames: number;
  /** A log this long (frames since it last started over) is restarted, not only copied. */
  ceilingFrames: number;
  /** How often the worker reads the wal-index, in ms. */
  pollMs: number;
  /** A log unchanged this long, with frames not yet copied, is checkpointed, in ms. */
  idleMs: number;
  /** How long a RESTART waits for readers (and holds the write lock meanwhile), in ms. */
  restartBusyMs: number;
  /** After a failed (or unfinished RESTART) checkpoint, the pause before the next try, in ms. */
  retryMs: number;
}

/** One checkpoint, as SQLite reported it (`PRAGMA wal_checkpoint`). */
export interface CheckpointReport {
  mode: CheckpointMode;
  reason: CheckpointReason;
  /** SQLite could not finish it (a reader or, for a RESTART, the write lock): tried again later. */
  busy: boolean;
  /** Frames in the log. */
  logFrames: number;
  /** Frames of the log now in the database file. */
  checkpointedFrames: number;
  /** Frames this checkpoint copied. */
  backfilledFrames: number;
  durationMs: number;
}

export type FromCheckpointer =
  | { kind: 'ready' }
  | ({ kind: 'checkpoint' } & CheckpointReport)
  | { kind: 'checkpoint-failed'; mode: CheckpointMode; message: string; sqlite?: string };

export type ToCheckpointer = { kind: 'stop' };
