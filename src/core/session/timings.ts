import { backoffDelay } from '../backoff.js';

/**
 * The engine's durations, from the agent contract. Injectable so tests run the same code with
 * milliseconds instead of minutes.
 */
export interface EngineTimings {
  /** First retry delay; doubles per attempt up to retryMaxMs. */
  retryBaseMs: number;
  /** M-3: the backoff of GetTask polling and retries stops growing here. */
  retryMaxMs: number;
  /** R-1, E-6, DT-2, M-5: a turn that cannot be sent or found fails after this long. */
  giveUpAfterMs: number;
  /** E-3: the thread is told the agent is busy after this long. */
  busyNoticeAfterMs: number;
  /** GetTask settles a turn this long after a stream ended without a settled task. */
  settleDelayMs: number;
  /** M-4: a task with no sign of life this long after its stream was lost is cancelled. */
  noSignOfLifeMs: number;
  /** M-4: how many times a cancel is tried before it is reported as failed. */
  cancelAttempts: number;
  /**
   * Several replicas: how long a session lease lasts; renewed at a third of it. With the scan it
   * bounds how long the turns of a replica that died wait for another: lease + scan.
   */
  leaseTtlMs: number;
  /** How often sessions with work are looked for (orphans of a dead replica, replies). */
  scanIntervalMs: number;
}

export const DEFAULT_TIMINGS: EngineTimings = {
  retryBaseMs: 1_000,
  retryMaxMs: 60_000,
  giveUpAfterMs: 15 * 60_000,
  busyNoticeAfterMs: 2 * 60_000,
  settleDelayMs: 1_000,
  noSignOfLifeMs: 60 * 60_000,
  cancelAttempts: 3,
  // A dead replica's turns go on within lease + scan, under 10 s. Renewal is one statement per
  // replica whatever its sessions, so a short lease costs little; a replica whose store does not
  // answer for a whole lease stops driving. The scan stays at 5 s: every 2 s, two replicas'
  // first chunks waited far longer (docs/performance.md, "A year on one replica").
  leaseTtlMs: 4_500,
  scanIntervalMs: 5_000,
};

/** The engine's backoff for the n-th retry (0-based), at least the agent's Retry-After. */
export function backoff(timings: EngineTimings, attempt: number, retryAfterMs?: number): number {
  const wait = backoffDelay(attempt, { baseMs: timings.retryBaseMs, maxMs: timings.retryMaxMs });
  return Math.max(wait, retryAfterMs ?? 0);
}
