import type { AgentCardInfo } from '../a2a/card.js';
import { backoffDelay } from '../core/backoff.js';
import type { CardState } from './reconcile/binding.js';
import { acceptedCard, type CardOutcome, refusedCard, sameOutcome } from './reconcile/card.js';
import { kubeTime } from './status.js';

/**
 * When to read a Binding's agent card, and what came of it. A failed read is retried with
 * capped exponential backoff (and shows in status meanwhile); an accepted card is read again
 * every `recheckMs`, so an agent that stops advertising streaming is noticed. A new client
 * configuration (URL, credentials, headers) always reads it at once (DT-8).
 */

export interface CardTimings {
  retryBaseMs: number;
  retryMaxMs: number;
  recheckMs: number;
}

export const DEFAULT_CARD_TIMINGS: CardTimings = {
  retryBaseMs: 2_000,
  retryMaxMs: 5 * 60_000,
  recheckMs: 10 * 60_000,
};

/** What the checker needs of a client: A2AClient has both. */
export interface CardSource {
  card(): Promise<AgentCardInfo>;
  invalidateCard(): void;
}

interface Memo {
  fingerprint: string;
  state: CardState;
  failures: number;
  nextAt: number;
}

export interface CardCheckResult {
  state: CardState;
  /** When to check again, in ms from now. */
  nextInMs: number;
}

export class CardChecker {
  readonly #timings: CardTimings;
  readonly #now: () => number;
  readonly #memos = new Map<string, Memo>();

  readonly #onRead: ((ref: string, outcome: CardOutcome) => void) | undefined;

  /** `onRead` hears every card actually read (not the remembered results), for metrics. */
  constructor(
    timings: CardTimings,
    now: () => number = Date.now,
    onRead?: (ref: string, outcome: CardOutcome) => void,
  ) {
    this.#timings = timings;
    this.#now = now;
    this.#onRead = onRead;
  }

  /** The last result for this client configuration, without reading anything. */
  current(ref: string, fingerprint: string): CardState | undefined {
    const memo = this.#memos.get(ref);
    return memo?.fingerprint === fingerprint ? memo.state : undefined;
  }

  /** Whether a read is due: no result for this configuration yet, or its time has come. */
  due(ref: string, fingerprint: string): boolean {
    const memo = this.#memos.get(ref);
    return memo === undefined || memo.fingerprint !== fingerprint || this.#now() >= memo.nextAt;
  }

  /** Reads the card when one is due; otherwise returns the remembered result. */
  async check(ref: string, source: CardSource, fingerprint: string): Promise<CardCheckResult> {
    const memo = this.#memos.get(ref);
    const now = this.#now();
    if (memo !== undefined && memo.fingerprint === fingerprint && now < memo.nextAt) {
      return { state: memo.state, nextInMs: memo.nextAt - now };
    }
    const sameConfig = memo !== undefined && memo.fingerprint === fingerprint;
    // A periodic re-read must not be served from the client's cache.
    if (sameConfig && memo.state.outcome.ok) source.invalidateCard();
    let outcome: CardOutcome;
    try {
      outcome = acceptedCard(await source.card());
    } catch (error) {
      outcome = refusedCard(error);
    }
    this.#onRead?.(ref, outcome);
    const at = this.#now();
    const unchanged = sameConfig && sameOutcome(memo.state.outcome, outcome);
    const failures = outcome.ok ? 0 : (sameConfig ? memo.failures : 0) + 1;
    const wait = outcome.ok
      ? this.#timings.recheckMs
      : backoffDelay(failures - 1, { baseMs: this.#timings.retryBaseMs, maxMs: this.#timings.retryMaxMs });
    const state: CardState = { outcome, since: unchanged ? memo.state.since : kubeTime(new Date(at)) };
    this.#memos.set(ref, { fingerprint, state, failures, nextAt: at + wait });
    return { state, nextInMs: wait };
  }

  forget(ref: string): void {
    this.#memos.delete(ref);
  }

  /** Forgets every result (a new leader reads every card again). */
  clear(): void {
    this.#memos.clear();
  }
}
