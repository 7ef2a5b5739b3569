/**
 * Teams' documented rules the fake Bot Connector enforces, each with its source. Where Teams'
 * behaviour is not documented the choice is marked "assumed" and errs on the strict side.
 */

/**
 * Per bot per conversation (a chat, or a channel's thread): learn.microsoft.com, "Optimize your
 * bot with rate limiting and best practices in Teams" — 7 in 1 s, 8 in 2 s, 60 in 30 s, 1,800 in
 * 3,600 s for sends; edits are "subject to the same policy" (counted with sends, assumed).
 */
export const THREAD_LIMITS: ReadonlyArray<{ windowMs: number; max: number }> = [
  { windowMs: 1_000, max: 7 },
  { windowMs: 2_000, max: 8 },
  { windowMs: 30_000, max: 60 },
  { windowMs: 3_600_000, max: 1_800 },
];

/**
 * Streaming ("Stream bot messages", learn.microsoft.com/microsoftteams/platform/bots/streaming-ux):
 * personal chats only; one request a second; two minutes at most; informative text up to 1,000
 * characters; a stop by the user or the time limit answers the next request 403
 * `ContentStreamNotAllowed`.
 */
export const STREAM_LIMIT_MS = 120_000;
export const STREAM_PACE_MS = 1_000;
export const INFORMATIVE_MAX = 1_000;
/** The SDK's timers and ours are not Teams' clock: a request this early counts as on time (assumed). */
export const PACE_TOLERANCE_MS = 100;

/** The words Teams answers with, which the SDK matches (its streamingResponse.js). */
export const STREAM_TIMED_OUT = 'Content stream finished due to exceeded streaming time.';
export const STREAM_CANCELLED = 'Content stream was cancelled by user.';

/** A message's size limit: about 28 KB including its cards (Teams' "message too large" limit, assumed 28,000 bytes). */
export const MESSAGE_MAX_BYTES = 28_000;

/** Sliding windows per key: how long to wait before one more hit fits every window, or 0. */
export class Windows {
  readonly #hits = new Map<string, number[]>();

  wait(key: string, now: number): number {
    const list = (this.#hits.get(key) ?? []).filter((t) => t > now - 3_600_000);
    this.#hits.set(key, list);
    let wait = 0;
    for (const { windowMs, max } of THREAD_LIMITS) {
      const inWindow = list.filter((t) => t > now - windowMs);
      if (inWindow.length >= max) {
        const oldest = inWindow[inWindow.length - max] ?? now;
        wait = Math.max(wait, oldest + windowMs - now);
      }
    }
    return wait;
  }

  hit(key: string, now: number): void {
    const list = this.#hits.get(key) ?? [];
    list.push(now);
    this.#hits.set(key, list);
  }
}
