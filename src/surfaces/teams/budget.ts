import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Teams' documented limits for a bot in one conversation (a chat, or a channel's thread): 7
 * sends in 1 s, 8 in 2 s, 60 in 30 s and 1,800 in an hour, edits counted with sends (Teams:
 * "all requests are subject to the same policy"). Every call the surface makes in a
 * conversation takes its place here first, so Teams has no reason to answer 429; when it does
 * anyway (other replicas, the platform's own load), `hold` keeps the conversation quiet for
 * what `Retry-After` said.
 */

export const TEAMS_THREAD_LIMITS: ReadonlyArray<{ windowMs: number; max: number }> = [
  { windowMs: 1_000, max: 7 },
  { windowMs: 2_000, max: 8 },
  { windowMs: 30_000, max: 60 },
  { windowMs: 3_600_000, max: 1_800 },
];

interface Lane {
  hits: number[];
  heldUntil: number;
  /** Calls waiting their turn, in order. */
  queue: Promise<void>;
}

export class ThreadBudget {
  readonly #lanes = new Map<string, Lane>();
  readonly #now: () => number;
  readonly #limits: ReadonlyArray<{ windowMs: number; max: number }>;

  constructor(now: () => number = Date.now, limits = TEAMS_THREAD_LIMITS) {
    this.#now = now;
    this.#limits = limits;
  }

  /** Waits until one more call fits the conversation's limits, and counts it. In order per conversation. */
  take(conversation: string, signal?: AbortSignal): Promise<void> {
    const lane = this.#lane(conversation);
    const mine = lane.queue.then(() => this.#wait(lane, signal));
    // A waiter given up does not hold the ones behind it.
    lane.queue = mine.catch(() => undefined);
    return mine;
  }

  /** Teams said to wait: nothing more goes to the conversation before `retryAfterMs` from now. */
  hold(conversation: string, retryAfterMs: number): void {
    const lane = this.#lane(conversation);
    lane.heldUntil = Math.max(lane.heldUntil, this.#now() + retryAfterMs);
  }

  /** How long a call would wait now (0: it goes at once). */
  delay(conversation: string): number {
    return this.#delayOf(this.#lane(conversation), this.#now());
  }

  async #wait(lane: Lane, signal?: AbortSignal): Promise<void> {
    for (;;) {
      const now = this.#now();
      const wait = this.#delayOf(lane, now);
      if (wait <= 0) {
        lane.hits.push(now);
        return;
      }
      await sleep(wait, undefined, signal === undefined ? {} : { signal });
    }
  }

  #delayOf(lane: Lane, now: number): number {
    const longest = this.#limits.at(-1)?.windowMs ?? 0;
    while (lane.hits.length > 0 && (lane.hits[0] ?? 0) <= now - longest) lane.hits.shift();
    let wait = lane.heldUntil - now;
    for (const { windowMs, max } of this.#limits) {
      let inWindow = 0;
      for (let i = lane.hits.length - 1; i >= 0 && (lane.hits[i] ?? 0) > now - windowMs; i--) inWindow++;
      if (inWindow >= max) {
        const oldest = lane.hits[lane.hits.length - max] ?? now;
        wait = Math.max(wait, oldest + windowMs - now + 1);
      }
    }
    return wait;
  }

  #lane(conversation: string): Lane {
    let lane = this.#lanes.get(conversation);
    if (lane === undefined) {
      lane = { hits: [], heldUntil: 0, queue: Promise.resolve() };
      this.#lanes.set(conversation, lane);
    }
    return lane;
  }

  /** Drops lanes with nothing counted in the last hour (called now and then). */
  prune(): void {
    const now = this.#now();
    for (const [key, lane] of this.#lanes) {
      const last = lane.hits.at(-1) ?? 0;
      if (last <= now - 3_600_000 && lane.heldUntil <= now) this.#lanes.delete(key);
    }
  }
}
