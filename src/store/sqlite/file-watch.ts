import { closeSync, openSync, readSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Logger } from 'pino';

/** How often the file is looked at when nothing asks (readiness asks on its own schedule too). */
export const FILE_WATCH_EVERY_MS = 5_000;

/**
 * Whether the SQLite file the store opened is still the file at its path. SQLite keeps writing
 * to the file it opened: when that file is deleted (`rm state.db*`) or replaced, every write
 * still succeeds and is lost at the next start, quietly. This compares the file's identity
 * (device and inode) at open with the path's, on a timer and whenever readiness asks, logs an
 * error once when it changes, and gives readiness the reason. A file overwritten in place keeps
 * its identity: its first bytes are no longer the header every SQLite database starts with
 * (SQLite's documented file format), and SQLite refuses writes once it reads past its cache.
 */
export class DatabaseFileWatch {
  readonly #path: string;
  readonly #logger: Logger;
  readonly #identity: string | undefined;
  readonly #timer: NodeJS.Timeout;
  #told: string | undefined;

  /** Call right after the store opened `path` (a file, not `:memory:`). */
  constructor(path: string, logger: Logger, everyMs = FILE_WATCH_EVERY_MS) {
    this.#path = resolve(path);
    this.#logger = logger;
    this.#identity = identityOf(this.#path);
    this.#timer = setInterval(() => this.problem(), everyMs);
    this.#timer.unref();
  }

  /** Why the store's file cannot be trusted now, or undefined when it is the file opened. */
  problem(): string | undefined {
    if (this.#identity === undefined) return undefined;
    const now = identityOf(this.#path);
    const problem =
      now === undefined
        ? `the session store's file ${this.#path} was deleted while open; what is written now would be lost at the next start`
        : now !== this.#identity
          ? `the session store's file ${this.#path} was replaced while open; what is written now goes to the old file`
          : !startsLikeSqlite(this.#path)
            ? `the session store's file ${this.#path} was overwritten while open: it is no longer a SQLite database`
            : undefined;
    if (problem !== undefined && problem !== this.#told) this.#logger.error({ path: this.#path }, problem);
    this.#told = problem;
    return problem;
  }

  close(): void {
    clearInterval(this.#timer);
  }
}

function identityOf(path: string): string | undefined {
  try {
    const s = statSync(path);
    return `${s.dev}:${s.ino}`;
  } catch {
    return undefined;
  }
}

/** The 16 bytes every SQLite database file starts with (its file format's header string). */
const SQLITE_HEADER = Buffer.from('SQLite format 3\0', 'latin1');

/** Whether the file starts with SQLite's header; true when it is too short to tell (new). */
function startsLikeSqlite(path: string): boolean {
  let fd: number | undefined;
  try {
    fd = openSync(path, 'r');
    const head = Buffer.alloc(SQLITE_HEADER.length);
    const read = readSync(fd, head, 0, head.length, 0);
    return read === 0 || (read === head.length && head.equals(SQLITE_HEADER));
  } catch {
    return true;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}
