import type { Logger } from 'pino';
import type { StoreConfig } from '../config/broker.js';
import type { SessionStore } from '../core/store.js';
import { DatabaseFileWatch, FILE_WATCH_EVERY_MS } from './sqlite/file-watch.js';

/**
 * Whether the session store can be trusted with what the broker acknowledges, for /readyz: a
 * process whose store refuses writes answers every message with an error, so it should not be
 * sent traffic (and the person running it should see why). Two checks, every few seconds:
 *
 * - the store takes a write (SessionStore.probeWrite, a write that changes nothing): refused
 *   after a failed fsync, on a read-only or corrupt file, by a database that cannot commit;
 * - for a SQLite file, the file at the path is still the one opened (./sqlite/file-watch.ts).
 *
 * Each problem is logged once, at error, when it starts, and at info when it is over.
 */
export class StoreReadiness {
  readonly #store: Pick<SessionStore, 'probeWrite'>;
  readonly #logger: Logger;
  readonly #file: DatabaseFileWatch | undefined;
  readonly #timer: NodeJS.Timeout;
  #writeProblem: string | undefined;
  #probing: Promise<void> | undefined;
  #closed = false;

  /** `sqliteFile`: the SQLite file the store opened (not `:memory:`), to watch it too. */
  constructor(
    store: Pick<SessionStore, 'probeWrite'>,
    logger: Logger,
    sqliteFile?: string,
    everyMs = FILE_WATCH_EVERY_MS,
  ) {
    this.#store = store;
    this.#logger = logger;
    this.#file = sqliteFile === undefined ? undefined : new DatabaseFileWatch(sqliteFile, logger, everyMs);
    this.#timer = setInterval(() => void this.probe(), everyMs);
    this.#timer.unref();
    void this.probe();
  }

  /** Why the store cannot be trusted now, or undefined when it can. */
  problem(): string | undefined {
    return this.#file?.problem() ?? this.#writeProblem;
  }

  /**
   * Tries a write now (or waits for the try under way); resolves once the answer is known, which
   * problem() then says.
   */
  probe(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    this.#probing ??= this.#tryWrite().finally(() => {
      this.#probing = undefined;
    });
    return this.#probing;
  }

  async #tryWrite(): Promise<void> {
    try {
      await this.#store.probeWrite();
      if (this.#closed) return;
      if (this.#writeProblem !== undefined) this.#logger.info('the session store takes writes again');
      this.#writeProblem = undefined;
    } catch (error) {
      if (this.#closed) return;
      const why = error instanceof Error ? error.message : String(error);
      const problem = `the session store refuses writes: ${why.slice(0, 300)}`;
      if (this.#writeProblem === undefined) this.#logger.error({ err: { message: why } }, problem);
      this.#writeProblem = problem;
    }
  }

  close(): void {
    this.#closed = true;
    clearInterval(this.#timer);
    this.#file?.close();
  }
}

/** The SQLite file a store configuration names, if it names one (not `:memory:`). */
export function sqliteFileOf(config: StoreConfig): string | undefined {
  return config.kind === 'sqlite' && config.path !== ':memory:' ? config.path : undefined;
}
