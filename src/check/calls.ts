import { setTimeout as wait } from 'node:timers/promises';
import type { Outcome } from './observations.js';

/**
 * Bounds on the checker's calls. Each call gets `timeoutMs` plus a second of grace: the client's
 * own headers timer (the DT-6 limit, never longer than `timeoutMs`) must fire first, so a late
 * header is reported as a late header and not as a slow call. The run as a whole has a budget
 * too, so the checker ends even if an agent finds a way to stretch every call.
 */

export const GRACE_MS = 1000;
/** The whole run: about as many calls as the checker makes, each at its bound. */
export const RUN_BUDGET_CALLS = 14;

export interface Budget {
  timeoutMs: number;
  /** Aborts when the whole run's budget is spent. */
  run: AbortSignal;
}

export function callSignal(budget: Budget): AbortSignal {
  return AbortSignal.any([AbortSignal.timeout(budget.timeoutMs + GRACE_MS), budget.run]);
}

/** Runs one bounded call and records its outcome; never throws. */
export async function attempt<T>(
  budget: Budget,
  call: (signal: AbortSignal) => Promise<T>,
): Promise<Outcome<T>> {
  const signal = callSignal(budget);
  const started = performance.now();
  try {
    const value = await call(signal);
    return { ok: true, value, ms: Math.round(performance.now() - started) };
  } catch (error) {
    return { ok: false, error, ms: Math.round(performance.now() - started), timedOut: signal.aborted };
  }
}

/** Waits `ms`, or less when the signal aborts (never rejects). */
export async function sleep(ms: number, signal: AbortSignal): Promise<void> {
  await wait(ms, undefined, { signal }).catch(() => undefined);
}
