import { setTimeout as rest } from 'node:timers/promises';
import type { Clock } from './clock.js';
import type { Erased, Forgotten, RetentionStore } from './retention-store.js';

/**
 * The retention sweep: every `everyMs`, threads idle longer than `days` are forgotten, in
 * batches of `batch` threads (one short transaction each), then web chat threads as long idle,
 * then the words of settled turns older than an hour (WORDS_KEPT_MS) are cleared, then forgotten
 * marks older than `days` go. After each batch the sweep rests as long as the
 * batch took, so however many threads a sweep forgets, turns have the event loop (and SQLite's
 * one writer) at least half the time, and never wait behind more than one batch. Each replica
 * sweeps; a thread is forgotten once whoever gets there first. With `days` 0 nothing is
 * forgotten, and the store's size is still measured.
 *
 * An erasure that found a thread still answering was kept by the store: every `erasuresEveryMs`
 * (and before each sweep, whatever `days` is) the sweeper runs the kept erasures again, so the
 * words go soon after the answer ends. With none kept, that is one read of an empty table.
 */

export interface RetentionSettings {
  days: number;
  /** Threads per transaction. */
  batch?: number;
  everyMs?: number;
  /** The first sweep, after the start (leave the start alone). */
  firstAfterMs?: number;
  /** How often the erasures waiting for an answer to end are run again. */
  erasuresEveryMs?: number;
}

/** What a sweep tells the metrics: rows forgotten, and the store's size after it. */
export interface RetentionObserver {
  swept(kind: 'threads' | 'turns' | 'feedback' | 'webchat_threads' | 'words', rows: number): void;
  /** A kept erasure ran again: what it erased this time, and what still waits. */
  erased?(erased: Erased): void;
  measured(size: { threads: number; bytes: number }): void;
  failed(error: unknown): void;
}

export interface SweepTotals extends Forgotten {
  webchatThreads: number;
  /** Settled turns whose words were cleared. */
  words: number;
  marksPruned: number;
}

const DAY_MS = 24 * 60 * 60 * 1000;
/**
 * How long a settled turn keeps its words: past the moments a person may still act on its
 * answer (a second press on a decided approval names who decided from it), nothing reads them.
 */
export const WORDS_KEPT_MS = 60 * 60 * 1000;
/** The longest rest between two batches (a batch slowed by a busy database does not stall the sweep). */
const MAX_REST_MS = 1_000;

/** Rests as long as the batch begun at `started` took. */
function restAfter(started: number): Promise<void> {
  return rest(Math.min(MAX_REST_MS, performance.now() - started));
}

export class RetentionSweeper {
  readonly #store: RetentionStore;
  readonly #days: number;
  readonly #batch: number;
  readonly #everyMs: number;
  readonly #firstAfterMs: number;
  readonly #erasuresEveryMs: number;
  readonly #clock: Clock;
  readonly #observer: RetentionObserver;
  readonly #alongside: Array<(before: number) => void> = [];
  #timer: NodeJS.Timeout | undefined;
  #erasuresTimer: NodeJS.Timeout | undefined;
  #running: Promise<unknown> | undefined;
  #erasing: Promise<unknown> | undefined;
  #stopped = false;

  constructor(store: RetentionStore, settings: RetentionSettings, clock: Clock, observer: RetentionObserver) {
    this.#store = store;
    this.#days = settings.days;
    // Small batches: on a million-thread SQLite file, 50 threads a batch held the event loop a
    // fraction of what 200 did, at the same cost per thread (docs/performance.md, "A year").
    this.#batch = settings.batch ?? 50;
    this.#everyMs = settings.everyMs ?? 60 * 60 * 1000;
    this.#firstAfterMs = settings.firstAfterMs ?? 60 * 1000;
    this.#erasuresEveryMs = settings.erasuresEveryMs ?? 30 * 1000;
    this.#clock = clock;
    this.#observer = observer;
  }

  /**
   * Runs `forget` with each sweep's cut (not with 0 days): what a surface holds in memory of the
   * threads the sweep forgets (the web chat's page) goes with them.
   */
  alongside(forget: (before: number) => void): void {
    this.#alongside.push(forget);
  }

  start(): void {
    const tick = () => {
      this.#running = this.sweep().catch((error: unknown) => this.#observer.failed(error));
    };
    this.#timer = setTimeout(() => {
      tick();
      this.#timer = setInterval(tick, this.#everyMs);
      this.#timer.unref();
    }, this.#firstAfterMs);
    this.#timer.unref();
    this.#erasuresTimer = setInterval(() => {
      if (this.#erasing !== undefined) return;
      this.#erasing = this.replayErasures()
        .catch((error: unknown) => this.#observer.failed(error))
        .finally(() => {
          this.#erasing = undefined;
        });
    }, this.#erasuresEveryMs);
    this.#erasuresTimer.unref();
  }

  /** Stops between two batches: a sweep under way finishes the batch it is in. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    clearInterval(this.#timer);
    clearInterval(this.#erasuresTimer);
    await Promise.all([this.#running, this.#erasing]);
  }

  /**
   * Runs every kept erasure again (the store keeps one while something of the person's is still
   * answering, and drops it once a run leaves nothing waiting); how many finished.
   */
  async replayErasures(): Promise<number> {
    let finished = 0;
    for (const person of await this.#store.pendingErasures()) {
      if (this.#stopped) break;
      const erased = await this.#store.erasePerson(person, this.#clock.now());
      this.#observer.erased?.(erased);
      if (erased.waiting === 0) finished += 1;
    }
    return finished;
  }

  /** One sweep, to the end (or the stop); what it forgot. */
  async sweep(): Promise<SweepTotals> {
    const totals: SweepTotals = {
      threads: 0,
      turns: 0,
      feedback: 0,
      webchatThreads: 0,
      words: 0,
      marksPruned: 0,
    };
    await this.replayErasures();
    if (this.#days > 0) {
      const now = this.#clock.now();
      const before = now - this.#days * DAY_MS;
      await this.#inBatches(async () => {
        const gone = await this.#store.forgetIdleThreads(before, this.#batch, now);
        totals.threads += gone.threads;
        totals.turns += gone.turns;
        totals.feedback += gone.feedback;
        this.#observer.swept('threads', gone.threads);
        this.#observer.swept('turns', gone.turns);
        this.#observer.swept('feedback', gone.feedback);
        return gone.threads;
      });
      await this.#inBatches(async () => {
        const gone = await this.#store.forgetIdleTranscripts(before, this.#batch);
        totals.webchatThreads += gone;
        this.#observer.swept('webchat_threads', gone);
        return gone;
      });
      // The words of the turns that stay: cleared once their turn has been settled a while.
      const wordsBefore = now - WORDS_KEPT_MS;
      await this.#inBatches(async () => {
        const cleared = await this.#store.clearSettledWords(wordsBefore, this.#batch);
        totals.words += cleared;
        this.#observer.swept('words', cleared);
        return cleared;
      });
      totals.marksPruned = await this.#store.pruneForgotten(before);
      for (const forget of this.#alongside) forget(before);
    }
    this.#observer.measured(await this.#store.size());
    return totals;
  }

  /** Runs `batch` (which says how many rows it took) until one takes fewer than a batch, resting between. */
  async #inBatches(batch: () => Promise<number>): Promise<void> {
    for (;;) {
      const started = performance.now();
      if ((await batch()) < this.#batch || this.#stopped) return;
      await restAfter(started);
    }
  }
}
