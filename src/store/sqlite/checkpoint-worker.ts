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
 * - Fewer, but the log unchanged for `idleMs`: a PASSIVE checkpoint too, so a quiet broker's
 *   log is fully copied and the next write starts it again from the beginning.
 * - The log at `ceilingFrames` or more (a broker that never pauses: a PASSIVE checkpoint with
 *   commits landing during it never leaves the log fully copied, so it is never restarted): a
 *   PASSIVE one, then a RESTART, which holds the write lock while it copies what the PASSIVE
 *   left and waits (at most `restartBusyMs`) for readers, so the next write starts the log
 *   over. The main connection's writes wait for that lock meanwhile; it happens once per
 *   `ceilingFrames`, not once per 1,000 frames as SQLite's own checkpoint did.
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
  // A checkpoint syncs the log before it copies and the database after (any synchronous
  // setting but OFF): say FULL rather than depend on the default.
  db.exec('PRAGMA synchronous = FULL');
  const statements = {
    PASSIVE: db.prepare('PRAGMA wal_checkpoint(PASSIVE)'),
    RESTART: db.prepare('PRAGMA wal_checkpoint(RESTART)'),
  };
  let shm: number | undefined;
  let lastFrame = -1;
  let unchangedSince = performance.now();
  /** After a failed checkpoint the next try waits this long (a full disk stays full a while). */
  let pausedUntil = 0;
  const send = (message: FromCheckpointer) => port.postMessage(message);

  const checkpoint = (mode: CheckpointMode, reason: CheckpointReason, before: WalIndex | undefined) => {
    const started = performance.now();
    try {
      const row = statements[mode].get() as { busy: number; log: number; checkpointed: number };
      const logFrames = Number(row.log);
      const checkpointedFrames = Number(row.checkpointed);
      send({
        kind: 'checkpoint',
        mode,
        reason,
        busy: Number(row.busy) !== 0,
        logFrames,
        checkpointedFrames,
        backfilledFrames: Math.max(0, checkpointedFrames - (before?.nBackfill ?? 0)),
        durationMs: performance.now() - started,
      });
      return Number(row.busy) !== 0 ? 'busy' : 'done';
    } catch (error) {
      pausedUntil = performance.now() + settings.retryMs;
      const e = error as { message?: unknown; code?: unknown; errstr?: unknown };
      send({
        kind: 'checkpoint-failed',
        mode,
        message: String(e.message ?? error),
        ...(typeof e.errstr === 'string' ? { sqlite: e.errstr } : {}),
      });
      return undefined;
    }
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
    if (now < pausedUntil) return;
    const index = look();
    if (index === undefined) {
      // Cannot see the log: checkpoint on the idle clock alone (a no-op when nothing is new).
      if (now - unchangedSince >= settings.idleMs) {
        unchangedSince = now;
        checkpoint('PASSIVE', 'idle', undefined);
      }
      return;
    }
    if (index.mxFrame !== lastFrame) {
      lastFrame = index.mxFrame;
      unchangedSince = now;
    }
    const waiting = index.mxFrame - index.nBackfill;
    if (index.mxFrame >= settings.ceilingFrames) {
      if (waiting > 0 && checkpoint('PASSIVE', 'ceiling', index) === undefined) return;
      // A RESTART that could not finish (a reader held on) is not tried again at once: each
      // try holds the write lock for up to restartBusyMs.
      if (checkpoint('RESTART', 'ceiling', look() ?? index) === 'busy') pausedUntil = now + settings.retryMs;
    } else if (waiting >= settings.thresholdFrames) {
      checkpoint('PASSIVE', 'threshold', index);
    } else if (waiting > 0 && now - unchangedSince >= settings.idleMs) {
      checkpoint('PASSIVE', 'idle', index);
    }
  };

  const timer = setInterval(poll, settings.pollMs);
  port.on('message', (message: ToCheckpointer) => {
    if (message.kind !== 'stop') return;
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
