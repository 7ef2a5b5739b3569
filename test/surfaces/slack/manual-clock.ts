import type { Clock } from '../../../src/core/clock.js';

/** Time that moves only when a test moves it; sleepers wake in order as it passes them. */
export class ManualClock implements Clock {
  #now: number;
  #timers: Array<{ at: number; resolve: () => void }> = [];

  constructor(start = 1_000_000) {
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise((resolve, reject) => {
      const timer = { at: this.#now + Math.max(0, ms), resolve };
      this.#timers.push(timer);
      signal?.addEventListener(
        'abort',
        () => {
          this.#timers = this.#timers.filter((t) => t !== timer);
          reject(signal.reason);
        },
        { once: true },
      );
    });
  }

  /** Moves time forward in steps of at most `step` ms, letting woken code run between them. */
  async advance(ms: number, step = 10): Promise<void> {
    const end = this.#now + ms;
    await settle();
    while (this.#now < end) {
      this.#now = Math.min(end, this.#now + step);
      const due = this.#timers.filter((t) => t.at <= this.#now);
      this.#timers = this.#timers.filter((t) => t.at > this.#now);
      for (const t of due) t.resolve();
      await settle();
    }
  }
}

/** Lets pending promise callbacks run. */
export async function settle(): Promise<void> {
  for (let i = 0; i < 50; i++) await Promise.resolve();
}
