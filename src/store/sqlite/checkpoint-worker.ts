import { closeSync, openSync, readSync } from 'node:fs';
import { endianness } from 'node:os';
import { DatabaseSync } from 'node:sqlite';
import { parentPort, workerData } from 'node:worker_threads';
import type {
  CheckpointerSettings,
  CheckpointMode,
  CheckpointReason,
  FromCheckpointer,
  ToCheckpointer,
} from './checkpoint-protocol.js';

/**
 * The WAL checkpointer's thread (started by ./checkpointer.ts): its own connection to the
 * store's file, so a checkpoint's page copies and fsyncs run here and never on the broker's
 * event loop (node:sqlite is synchronous: the same work on a second connection of the main
 * thread would still stop it).
 *
 * It looks at the log every `pollMs` by reading the wal-index header, the first 136 bytes of
 * the `-shm` file: `mxFrame` (the last frame of the log) and `nBackfill` (the frames already
 * copied into the database). SQLite documents this layout (its "WAL-mode file format" page)
 * and keeps it stable because processes of different versions share the file; reading it takes
 * one pread and no lock, and nothing on the main thread. A read that does not check out (the
 * two copies of the header differ mid-update, an unknown version) only changes when a
 * checkpoint runs, never what it does: the worker then checkpoints on the idle clock instead.
 *
 * - `thresholdFrames` or more not yet copied: a PASSIVE checkpoint, which takes no lock a
 *   writer waits for (it copies what no reader still needs and returns).
 * - Fewer, but the log unchanged for `idleMs`: a PASSIVE checkpoint too.
 * - The log fully copied: it is started over here, not by the store's next commit. SQLite
 *   starts a fully copied log over in the next write transaction, and that commit writes and
 *   fsyncs a new log header first: on the store's connection that fsync would stand still on
 *   the event loop (p50 24 ms on the development machine's busy disk), once per log. So the
 *   worker asks the store to hold its writes (`hold`; the store's event loop keeps running,
 *   only new transactions wait), and once `held`, writes one page itself (the database's
 *   user_version, rewritten unchanged): SQLite starts the log over in that commit, with the
 *   header's fsync on this thread. Then `release`.
 * - The log at `ceilingFrames` or more (a broker that never pauses: PASSIVE checkpoints with
 *   commits landing during them never leave the log fully copied): a PASSIVE checkpoint, then
 *   a hold, in which a second PASSIVE copies the rest (no writer can add to it) and the log is
 *   started over as above.
 *
 * This file imports only Node's modules (types aside): it runs as it is from the sources
 * (Node strips the types) and from dist/.
 */

/** The wal-index header's version field, the same since SQLite 3.7.0. */
const WAL_INDEX_VERSION = 3007000;
const HEADER_BYTES = 48;
/** Two copies of the header, then the checkpoint info, whose first field is nBackfill. */
const NBACKFILL_OFFSET = 2 * HEADER_BYTES;
const READ_BYTES = NBACKFILL_OFFSET + 4;

export interface WalIndex {
  /** The last valid frame of the log (0: empty, or started over). */
  mxFrame: number;
  /** The frames already copied into the database file. */
  nBackfill: number;
}

/** Reads mxFrame and nBackfill from the wal-index (`<db>-shm`); undefined if it does not check out. */
export function readWalIndex(fd: number): WalIndex | undefined {
  const bytes = Buffer.alloc(READ_BYTES);
  // Two tries: a writer may be between the header's two copies.
  for (let attempt = 0; attempt < 2; attempt++) {
    if (readSync(fd, bytes, 0, READ_BYTES, 0) < READ_BYTES) return undefined;
    const first = bytes.subarray(0, HEADER_BYTES);
    if (!first.equals(bytes.subarray(HEADER_BYTES, NBACKFILL_OFFSET))) continue;
    // The wal-index is in the machine's own byte order.
    const u32 = (offset: number) =>
      endianness() === 'LE' ? bytes.readUInt32LE(offset) : bytes.readUInt32BE(offset);
    if (u32(0) !== WAL_INDEX_VERSION || bytes[12] !== 1) return undefined;
    return { mxFrame: u32(16), nBackfill: u32(NBACKFILL_OFFSET) };
  }
  return undefined;
}

function run(settings: CheckpointerSettings, port: NonNullable<typeof parentPort>): void {
  const db = new DatabaseSync(settings.path);
  db.exec(`PRAGMA busy_timeout = ${settings.restartBusyMs}`);
  db.exec(`PRAGMA journal_size_limit = ${Math.trunc(settings.journalSizeLimit)}`);
  // A checkpoint syncs the log before it copies and the database after at any synchronous
  // setting but OFF, and so does the new header of a log started over. NORMAL, not FULL, for
  // the one-page restart write itself: it changes nothing, so it need not be synced before
  // the hold ends (the store's next fsync of the log covers it anyway).
  db.exec('PRAGMA synchronous = NORMAL');
  const passive = db.prepare('PRAGMA wal_checkpoint(PASSIVE)');
  const userVersion = db.prepare('PRAGMA user_version');
  let shm: number | undefined;
  let lastFrame = -1;
  let unchangedSince = performance.now();
  /** After a failed checkpoint the next try waits this long (a full disk stays full a while). */
  let pausedUntil = 0;
  /** A hold asked for and not yet granted: nothing else runs meanwhile. */
  let holdAsked = false;
  /** When a fully copied log may be asked to start over again (after a restart that did not happen). */
  let restartAfter = 0;
  const send = (message: FromCheckpointer) => port.postMessage(message);

  const report = (
    mode: CheckpointMode,
    reason: CheckpointReason,
    started: number,
    fields: {
      busy: boolean;
      logFrames: number;
      checkpointedFrames: number;
      backfilledFrames: number;
    },
  ) => send({ kind: 'checkpoint', mode, reason, ...fields, durationMs: performance.now() - started });

  const failed = (mode: CheckpointMode, error: unknown) => {
    pausedUntil = performance.now() + settings.retryMs;
    const e = error as { message?: unknown; errstr?: unknown };
    send({
      kind: 'checkpoint-failed',
      mode,
      message: String(e.message ?? error),
      ...(typeof e.errstr === 'string' ? { sqlite: e.errstr } : {}),
    });
  };

  /** A PASSIVE checkpoint; whether the log is now fully copied (undefined: it failed). */
  const checkpoint = (reason: CheckpointReason, before: WalIndex | undefined): boolean | undefined => {
    const started = performance.now();
    try {
      const row = passive.get() as { busy: number; log: number; checkpointed: number };
      const logFrames = Number(row.log);
      const checkpointedFrames = Number(row.checkpointed);
      const busy = Number(row.busy) !== 0;
      report('PASSIVE', reason, started, {
        busy,
        logFrames,
        checkpointedFrames,
        backfilledFrames: Math.max(0, checkpointedFrames - (before?.nBackfill ?? 0)),
      });
      return !busy && logFrames > 0 && checkpointedFrames === logFrames;
    } catch (error) {
      failed('PASSIVE', error);
      return undefined;
    }
  };

  /** One page written (user_version, unchanged): SQLite starts a fully copied log over in its commit. */
  const restart = (reason: CheckpointReason, before: WalIndex) => {
    const started = performance.now();
    try {
      db.exec('BEGIN IMMEDIATE');
      try {
        const version = Math.trunc(Number((userVersion.get() as { user_version: number }).user_version));
        db.exec(`PRAGMA user_version = ${version}`);
        db.exec('COMMIT');
      } catch (error) {
        if (db.isTransaction) db.exec('ROLLBACK');
        throw error;
      }
      const after = look();
      // Started over: the log now holds only this write's frames.
      const restarted = after !== undefined && after.mxFrame < before.mxFrame;
      if (!restarted) restartAfter = performance.now() + settings.retryMs;
      report('restart', reason, started, {
        busy: !restarted,
        logFrames: before.mxFrame,
        checkpointedFrames: before.nBackfill,
        backfilledFrames: 0,
      });
    } catch (error) {
      failed('restart', error);
    }
  };

  const askHold = () => {
    if (holdAsked || performance.now() < restartAfter) return;
    holdAsked = true;
    send({ kind: 'hold' });
  };

  /** The store holds its writes: copy what is left, start the log over, let them go. */
  const held = (id: number) => {
    holdAsked = false;
    const index = look();
    if (index !== undefined && index.mxFrame > 0) {
      const reason: CheckpointReason = index.mxFrame >= settings.ceilingFrames ? 'ceiling' : 'hold';
      const copied = index.nBackfill === index.mxFrame || checkpoint(reason, index) === true;
      if (copied) restart(reason, look() ?? index);
      // Not copied to the end (a reader on an older snapshot): ask again later, not at once.
      else restartAfter = performance.now() + settings.retryMs;
    }
    send({ kind: 'release', id });
  };

  const look = (): WalIndex | undefined => {
    try {
      shm ??= openSync(`${settings.path}-shm`, 'r');
      return readWalIndex(shm);
    } catch {
      return undefined;
    }
  };

  const poll = () => {
    const now = performance.now();
    if (now < pausedUntil || holdAsked) return;
    const index = look();
    if (index === undefined) {
      // Cannot see the log: checkpoint on the idle clock alone (a no-op when nothing is new);
      // SQLite's next write then starts a fully copied log over (on the store's connection).
      if (now - unchangedSince >= settings.idleMs) {
        unchangedSince = now;
        checkpoint('idle', undefined);
      }
      return;
    }
    if (index.mxFrame !== lastFrame) {
      lastFrame = index.mxFrame;
      unchangedSince = now;
    }
    const waiting = index.mxFrame - index.nBackfill;
    if (index.mxFrame >= settings.ceilingFrames) {
      // Copy what can be copied without a hold, then hold for the rest and the restart.
      if (waiting > 0 && checkpoint('ceiling', index) === undefined) return;
      askHold();
    } else if (
      waiting >= settings.thresholdFrames ||
      (waiting > 0 && now - unchangedSince >= settings.idleMs)
    ) {
      if (checkpoint(waiting >= settings.thresholdFrames ? 'threshold' : 'idle', index) === true) askHold();
    } else if (waiting === 0 && index.mxFrame > 0) {
      // Fully copied and not started over yet (a hold that timed out, a reader in the way).
      askHold();
    }
  };

  const timer = setInterval(poll, settings.pollMs);
  port.on('message', (message: ToCheckpointer) => {
    if (message.kind === 'held') {
      held(message.id);
      return;
    }
    clearInterval(timer);
    if (shm !== undefined) closeSync(shm);
    db.close();
    port.close();
  });
  send({ kind: 'ready' });
}

// Imported by a test (for readWalIndex), this file does nothing; started as the worker, it runs.
if (parentPort !== null && (workerData as { kind?: unknown } | undefined)?.kind === 'ak-checkpointer') {
  run((workerData as { settings: CheckpointerSettings }).settings, parentPort);
}
