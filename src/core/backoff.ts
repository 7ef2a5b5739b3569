/**
 * Exponential backoff, the one formula every retry of the broker uses: the n-th retry (0-based)
 * waits `baseMs · 2ⁿ`, capped at `maxMs`. With `jitter` (a fraction, say 0.2) the wait is spread
 * evenly within ±jitter of that, so many clients that failed together do not retry together.
 * Pure: the random source is a parameter.
 */

export interface BackoffPolicy {
  baseMs: number;
  maxMs: number;
  /** Spread each wait within ±jitter of itself (0 or unset: none). */
  jitter?: number;
}

/** Past this many doublings every sane base is over its cap; it keeps 2ⁿ finite. */
const MAX_DOUBLINGS = 30;

/** The wait before retry `retry` (0-based: the first retry waits `baseMs`). */
export function backoffDelay(
  retry: number,
  policy: BackoffPolicy,
  random: () => number = Math.random,
): number {
  const doublings = Math.min(Math.max(0, retry), MAX_DOUBLINGS);
  const wait = Math.min(policy.maxMs, policy.baseMs * 2 ** doublings);
  const jitter = policy.jitter ?? 0;
  return jitter === 0 ? wait : wait * (1 - jitter + random() * 2 * jitter);
}
