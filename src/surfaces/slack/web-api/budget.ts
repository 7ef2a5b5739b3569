import type { Clock } from '../../../core/clock.js';
import { InvalidConfigError, KourierError } from '../../../core/errors.js';

/**
 * Slack's rate limits are per method and per workspace (chat.update ≈ 50 a minute for the
 * whole workspace, shared by every thread that streams by editing), so every call the surface
 * makes first takes a token from the budget of its method in its workspace (or channel, for
 * chat.postMessage's one-a-second rule).
 *
 * A budget is a token bucket: `burst` tokens to start with, refilled at `perMinute`. In any
 * 60 seconds at most `perMinute + burst` calls go out, so the defaults keep the sum under
 * Slack's documented figure. Waiters are served in arrival order, urgent ones first; since each
 * answer keeps at most one take outstanding, arrival order is round-robin between threads: no
 * thread gets a second edit while another waits for its first. A 429 pauses the whole budget
 * for Retry-After and empties it, so calls resume at the sustained rate rather than in a burst.
 */

export interface BudgetRate {
  /** Sustained calls a minute. */
  perMinute: number;
  /** Calls that may go at once on top of the sustained rate (at least 1). */
  burst: number;
}

export interface TakeOptions {
  /** Served before every non-urgent waiter (a turn's final edit: the person is waiting on it). */
  urgent?: boolean;
  signal?: AbortSignal;
}

interface Waiter {
  requester: string;
  /** Mutable: a take that becomes urgent while it waits moves ahead (see `promote`). */
  urgent: boolean;
  resolve: () => void;
  reject: (reason: unknown) => void;
  cleanup: () => void;
}

/** Rejects the takes still waiting when a budget is closed. */
export class BudgetClosedError extends KourierError {
  constructor() {
    super('budget_closed', 'the rate budget was closed');
  }
}

export class RateBudget {
  readonly #clock: Clock;
  readonly #perMs: number;
  readonly #capacity: number;
  #tokens: number;
  #refilledAt: number;
  #pausedUntil = 0;
  #queue: Waiter[] = [];
  #pumping = false;
  #closed = new AbortController();

  constructor(rate: BudgetRate, clock: Clock) {
    if (!(rate.perMinute > 0) || !(rate.burst >= 1))
      throw new InvalidConfigError('a rate budget needs perMinute > 0 and burst >= 1');
    this.#clock = clock;
    this.#perMs = rate.perMinute / 60_000;
    this.#capacity = rate.burst;
    this.#tokens = rate.burst;
    this.#refilledAt = clock.now();
  }

  /** How many takes are waiting. */
  get waiting(): number {
    return this.#queue.length;
  }

  /** Resolves when this call may go out. Keep at most one take outstanding per requester. */
  take(requester: string, options: TakeOptions = {}): Promise<void> {
    const { signal } = options;
    if (this.#closed.signal.aborted) return Promise.reject(new BudgetClosedError());
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise<void>((resolve, reject) => {
      const onAbort = (): void => {
        this.#queue = this.#queue.filter((w) => w !== waiter);
        reject(signal?.reason);
      };
      const waiter: Waiter = {
        requester,
        urgent: options.urgent === true,
        resolve,
        reject,
        cleanup: () => signal?.removeEventListener('abort', onAbort),
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#queue.push(waiter);
      void this.#pump();
    });
  }

  /** Takes a token only if one is free now and nobody waits: for calls that have a fallback. */
  tryTake(): boolean {
    this.#refill();
    if (this.#queue.length > 0 || this.#clock.now() < this.#pausedUntil || this.#tokens < 1) return false;
    this.#tokens -= 1;
    return true;
  }

  /** A requester's waiting takes become urgent (its answer just finished while it waited). */
  promote(requester: string): void {
    for (const waiter of this.#queue) if (waiter.requester === requester) waiter.urgent = true;
  }

  /** Gives back a token taken for a call that was not made after all. */
  refund(): void {
    this.#refill();
    this.#tokens = Math.min(this.#capacity, this.#tokens + 1);
    void this.#pump();
  }

  /** Slack said 429: nothing goes out for `ms`, and the bucket starts again from empty. */
  pause(ms: number): void {
    this.#refill();
    this.#pausedUntil = Math.max(this.#pausedUntil, this.#clock.now() + Math.max(0, ms));
    this.#tokens = 0;
  }

  /** Rejects every waiting take and any later one. */
  close(): void {
    this.#closed.abort(new BudgetClosedError());
    for (const waiter of this.#queue.splice(0)) {
      waiter.cleanup();
      waiter.reject(new BudgetClosedError());
    }
  }

  #refill(): void {
    const now = this.#clock.now();
    const from = Math.max(this.#refilledAt, Math.min(now, this.#pausedUntil));
    if (now > from) this.#tokens = Math.min(this.#capacity, this.#tokens + (now - from) * this.#perMs);
    this.#refilledAt = now;
  }

  async #pump(): Promise<void> {
    if (this.#pumping) return;
    this.#pumping = true;
    try {
      while (this.#queue.length > 0 && !this.#closed.signal.aborted) {
        this.#refill();
        const now = this.#clock.now();
        if (now < this.#pausedUntil) {
          await this.#clock.sleep(this.#pausedUntil - now, this.#closed.signal);
          continue;
        }
        if (this.#tokens >= 1) {
          const index = this.#queue.findIndex((w) => w.urgent);
          const [waiter] = this.#queue.splice(index === -1 ? 0 : index, 1);
          if (waiter === undefined) continue;
          this.#tokens -= 1;
          waiter.cleanup();
          waiter.resolve();
          continue;
        }
        await this.#clock.sleep(
          Math.max(1, Math.ceil((1 - this.#tokens) / this.#perMs)),
          this.#closed.signal,
        );
      }
    } catch {
      // Closed while sleeping: close() has rejected the waiters.
    } finally {
      this.#pumping = false;
    }
  }
}

/** Where a method's budget is shared: the whole workspace, or each channel. */
export interface MethodBudget extends BudgetRate {
  scope: 'workspace' | 'channel';
}

/**
 * Slack's tiers (https://docs.slack.dev/apis/web-api/rate-limits), kept a little under the
 * documented figure so that `perMinute + burst` stays within it.
 */
export const DEFAULT_METHOD_BUDGETS: Readonly<Record<string, MethodBudget>> = {
  // Tier 3, about 50 a minute for the whole workspace, whatever the number of threads.
  'chat.update': { scope: 'workspace', perMinute: 45, burst: 5 },
  // About one a second per channel, with short bursts.
  'chat.postMessage': { scope: 'channel', perMinute: 50, burst: 3 },
  'chat.postEphemeral': { scope: 'workspace', perMinute: 90, burst: 10 },
  'chat.delete': { scope: 'workspace', perMinute: 45, burst: 5 },
  // Tier 2, 20 a minute. Half of it is burst: answers that begin together (a channel's
  // questions, an alert's threads) all stream, where a thread that finds no token now is
  // answered by edits from chat.update's budget, which every such thread shares.
  'chat.startStream': { scope: 'workspace', perMinute: 10, burst: 10 },
  // Tier 4.
  'chat.appendStream': { scope: 'workspace', perMinute: 90, burst: 10 },
  // Tier 2, split as the starts are: streams that began together end together, and each
  // stop carries its answer's last words.
  'chat.stopStream': { scope: 'workspace', perMinute: 10, burst: 10 },
  'reactions.add': { scope: 'workspace', perMinute: 45, burst: 5 },
  // Tier 2.
  'reactions.remove': { scope: 'workspace', perMinute: 16, burst: 4 },
  'users.info': { scope: 'workspace', perMinute: 90, burst: 10 },
  'conversations.replies': { scope: 'workspace', perMinute: 45, burst: 5 },
  // Tier 3 (internal apps); only a trigger's post retried after a crash calls it.
  'conversations.history': { scope: 'workspace', perMinute: 45, burst: 5 },
  // Tier 2; cached per group, so only a press after the cache expires calls it.
  'usergroups.users.list': { scope: 'workspace', perMinute: 16, burst: 4 },
  // Tier 4: a modal opens in answer to a press, within the press's 3-second trigger.
  'views.open': { scope: 'workspace', perMinute: 90, burst: 10 },
  // Tier 3 each, their own allowances (not chat.update's): a session's status and its title.
  'agents.sessions.setStatus': { scope: 'workspace', perMinute: 45, burst: 5 },
  'agents.sessions.rename': { scope: 'workspace', perMinute: 45, burst: 5 },
  // Tier 4: a DM's suggested prompts, when a person opens it.
  'assistant.threads.setSuggestedPrompts': { scope: 'workspace', perMinute: 90, burst: 10 },
  // Tier 4: who may stop a task in a channel (a stop press is rare).
  'conversations.members': { scope: 'workspace', perMinute: 90, burst: 10 },
};

const UNLISTED: MethodBudget = { scope: 'workspace', perMinute: 45, burst: 5 };

/** The budgets of every method, workspace and channel, created on first use. */
export class BudgetBook {
  readonly #clock: Clock;
  readonly #rates: Readonly<Record<string, MethodBudget>>;
  readonly #budgets = new Map<string, RateBudget>();
  #closed = false;

  constructor(clock: Clock, overrides: Readonly<Record<string, MethodBudget>> = {}) {
    this.#clock = clock;
    this.#rates = { ...DEFAULT_METHOD_BUDGETS, ...overrides };
  }

  for(method: string, workspace: string, channel: string | undefined): RateBudget {
    const rate = this.#rates[method] ?? UNLISTED;
    const key =
      rate.scope === 'channel' && channel !== undefined
        ? `${workspace}\n${method}\n${channel}`
        : `${workspace}\n${method}`;
    let budget = this.#budgets.get(key);
    if (budget === undefined) {
      budget = new RateBudget(rate, this.#clock);
      // Once the book is closed every budget is, the ones first asked for after too: a call
      // made after the stop began fails at once instead of waiting for a fresh allowance.
      if (this.#closed) budget.close();
      this.#budgets.set(key, budget);
    }
    return budget;
  }

  /** Moves a requester's waiting takes ahead, in every budget. */
  promote(requester: string): void {
    for (const budget of this.#budgets.values()) budget.promote(requester);
  }

  close(): void {
    this.#closed = true;
    for (const budget of this.#budgets.values()) budget.close();
  }
}
