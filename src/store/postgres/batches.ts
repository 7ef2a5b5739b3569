/**
 * Batches of one kind of statement: calls made while the previous batch runs are sent together,
 * as one statement over arrays, so a thousand sessions reading their rows (or taking their
 * leases) cost a few round trips, not a thousand. A call alone is sent at once (on the next
 * microtask): batching adds no wait when the store is not busy. Each caller is answered when
 * the statement that carries its call has returned — for a write, when it is committed — and a
 * failed statement fails every call it carried.
 *
 * Two calls with a key in common never share a statement (an upsert cannot touch one row
 * twice): the later one waits for the next batch, so calls on one key still run in order. A read may
 * instead be `shared`: a second read of a key already waiting for the next batch gets the same
 * answer (both were asked before that statement started, so both see every write committed
 * before them).
 */
export interface BatchOptions<I> {
  /** The most calls one statement carries. */
  max: number;
  /** What a call touches (a session, a turn); a shared read has exactly one key. */
  keysOf: (item: I) => readonly string[];
  /** Reads: a call whose key is already waiting gets that call's answer. */
  shared?: boolean;
  /**
   * Whether a failed statement surely wrote nothing (the server refused it), so that each of
   * its calls can be run again alone for an answer of its own: one bad call then fails alone.
   * Unset, or false (a lost connection: a write's outcome is unknown), every call gets the error.
   */
  retryAlone?: (error: unknown) => boolean;
}

interface Waiting<I, R> {
  item: I;
  keys: readonly string[];
  resolve: (result: R) => void;
  reject: (error: unknown) => void;
  promise: Promise<R>;
}

export class Batcher<I, R> {
  readonly #run: (items: I[]) => Promise<R[]>;
  readonly #options: BatchOptions<I>;
  #waiting: Waiting<I, R>[] = [];
  /** Shared reads waiting, by key (only when `shared`). */
  readonly #waitingByKey = new Map<string, Waiting<I, R>>();
  #running = false;
  #scheduled = false;

  constructor(run: (items: I[]) => Promise<R[]>, options: BatchOptions<I>) {
    this.#run = run;
    this.#options = options;
  }

  submit(item: I): Promise<R> {
    const keys = this.#options.keysOf(item);
    const key = keys.join('\u0000');
    if (this.#options.shared === true) {
      const same = this.#waitingByKey.get(key);
      if (same !== undefined) return same.promise;
    }
    let resolve!: (result: R) => void;
    let reject!: (error: unknown) => void;
    const promise = new Promise<R>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    const waiting = { item, keys, resolve, reject, promise };
    this.#waiting.push(waiting);
    if (this.#options.shared === true) this.#waitingByKey.set(key, waiting);
    this.#schedule();
    return promise;
  }

  #schedule(): void {
    if (this.#running || this.#scheduled || this.#waiting.length === 0) return;
    this.#scheduled = true;
    queueMicrotask(() => {
      this.#scheduled = false;
      void this.#flush();
    });
  }

  async #flush(): Promise<void> {
    if (this.#running) return;
    this.#running = true;
    const batch: Waiting<I, R>[] = [];
    const keys = new Set<string>();
    const later: Waiting<I, R>[] = [];
    // Keys of calls left waiting: a later call on the same key waits behind them, in order.
    const blocked = new Set<string>();
    for (const waiting of this.#waiting) {
      const free =
        batch.length < this.#options.max && waiting.keys.every((k) => !keys.has(k) && !blocked.has(k));
      if (free) {
        batch.push(waiting);
        for (const k of waiting.keys) keys.add(k);
        if (this.#options.shared === true) this.#waitingByKey.delete(waiting.keys.join('\u0000'));
      } else {
        later.push(waiting);
        for (const k of waiting.keys) blocked.add(k);
      }
    }
    this.#waiting = later;
    try {
      const results = await this.#run(batch.map((w) => w.item));
      batch.forEach((w, i) => {
        w.resolve(results[i] as R);
      });
    } catch (error) {
      if (batch.length > 1 && this.#options.retryAlone?.(error) === true) {
        await Promise.all(
          batch.map(async (w) => {
            try {
              w.resolve((await this.#run([w.item]))[0] as R);
            } catch (alone) {
              w.reject(alone);
            }
          }),
        );
      } else {
        for (const w of batch) w.reject(error);
      }
    } finally {
      this.#running = false;
      this.#schedule();
    }
  }
}
