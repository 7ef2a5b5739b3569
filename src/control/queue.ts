import { backoffDelay } from '../core/backoff.js';

/**
 * A work queue keyed by object (as pepr's per-key queues and client-go's workqueue): one
 * reconcile per key at a time, keys in parallel; a key added while it waits runs once, a key
 * added while it runs runs once more afterwards. A failed reconcile is retried with capped
 * exponential backoff; a success forgets the failures.
 */

export interface QueueOptions {
  /** Reconciles running at once across keys. */
  concurrency: number;
  retryBaseMs: number;
  retryMaxMs: number;
  /** Called when a reconcile threw; the key is retried after `delayMs`. */
  onError: (key: string, error: unknown, delayMs: number) => void;
}

export type Reconcile = (key: string, signal: AbortSignal) => Promise<void>;

export class KeyedQueue {
  readonly #reconcile: Reconcile;
  readonly #o: QueueOptions;
  /** Keys waiting to run, in order. */
  readonly #pending: string[] = [];
  readonly #pendingSet = new Set<string>();
  readonly #running = new Set<string>();
  /** Keys added again while running. */
  readonly #dirty = new Set<string>();
  readonly #timers = new Map<string, { at: number; timer: NodeJS.Timeout }>();
  readonly #failures = new Map<string, number>();
  readonly #inFlight = new Set<Promise<void>>();
  readonly #abort = new AbortController();
  #stopped = false;

  constructor(reconcile: Reconcile, options: QueueOptions) {
    this.#reconcile = reconcile;
    this.#o = options;
  }

  add(key: string): void {
    if (this.#stopped) return;
    if (this.#running.has(key)) {
      this.#dirty.add(key);
      return;
    }
    if (this.#pendingSet.has(key)) return;
    this.#pendingSet.add(key);
    this.#pending.push(key);
    this.#pump();
  }

  /** Adds the key after `ms`; an earlier pending timer for the key wins over a later one. */
  addAfter(key: string, ms: number): void {
    if (this.#stopped) return;
    if (ms <= 0) {
      this.add(key);
      return;
    }
    const at = Date.now() + ms;
    const existing = this.#timers.get(key);
    if (existing !== undefined && existing.at <= at) return;
    if (existing !== undefined) clearTimeout(existing.timer);
    const timer = setTimeout(() => {
      this.#timers.delete(key);
      this.add(key);
    }, ms);
    timer.unref();
    this.#timers.set(key, { at, timer });
  }

  /** Drops a key's pending retry timer and failure count (its object is gone). */
  forget(key: string): void {
    const t = this.#timers.get(key);
    if (t !== undefined) clearTimeout(t.timer);
    this.#timers.delete(key);
    this.#failures.delete(key);
  }

  get size(): number {
    return this.#pending.length + this.#running.size;
  }

  /** Resolves once nothing is waiting or running (tests, and graceful shutdown). */
  async idle(): Promise<void> {
    while (this.size > 0) await Promise.race([...this.#inFlight, new Promise((r) => setTimeout(r, 10))]);
  }

  /** Stops taking work, aborts running reconciles' signal and waits for them to return. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#abort.abort();
    for (const { timer } of this.#timers.values()) clearTimeout(timer);
    this.#timers.clear();
    this.#pending.length = 0;
    this.#pendingSet.clear();
    await Promise.allSettled([...this.#inFlight]);
  }

  #pump(): void {
    while (!this.#stopped && this.#running.size < this.#o.concurrency && this.#pending.length > 0) {
      const key = this.#pending.shift();
      if (key === undefined) break;
      this.#pendingSet.delete(key);
      this.#running.add(key);
      const run = this.#run(key);
      this.#inFlight.add(run);
      void run.finally(() => this.#inFlight.delete(run));
    }
  }

  async #run(key: string): Promise<void> {
    try {
      await this.#reconcile(key, this.#abort.signal);
      this.#failures.delete(key);
    } catch (error) {
      if (!this.#stopped) {
        const failures = (this.#failures.get(key) ?? 0) + 1;
        this.#failures.set(key, failures);
        const delay = backoffDelay(failures - 1, { baseMs: this.#o.retryBaseMs, maxMs: this.#o.retryMaxMs });
        this.#o.onError(key, error, delay);
        this.addAfter(key, delay);
      }
    } finally {
      this.#running.delete(key);
      if (this.#dirty.delete(key)) this.add(key);
      this.#pump();
    }
  }
}
