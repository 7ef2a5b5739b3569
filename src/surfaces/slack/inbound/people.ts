import type { Logger } from 'pino';
import { type Clock, WAIT_OVER } from '../../../core/clock.js';
import { type Actor, actorFor } from '../../../core/compose.js';
import { cutWithMark } from '../../../core/text.js';
import type { SlackApi, SlackUser } from '../web-api/client.js';

/**
 * Who wrote a message, for the label line `[Slack: Name (U123) <email>]` (S-6) and the actor
 * metadata (S-5). users.info is cached with a TTL (names change rarely, a busy thread would
 * otherwise look the same person up for every message), lookups for the same person share one
 * call, and a lookup that fails or is slow degrades to the bare user ID. An event's ack never
 * waits for a lookup (Slack redelivers after 3 s): the turn is stored with what is cached
 * (known), and the engine asks again, bounded, just before the send (actor, through the surface).
 */

export interface PeopleOptions {
  ttlMs: number;
  /** A failed lookup is not tried again for this long. */
  failureTtlMs: number;
  /** Past this the turn goes on with the user ID; the lookup still fills the cache. */
  lookupTimeoutMs: number;
  maxEntries: number;
}

export const DEFAULT_PEOPLE_OPTIONS: PeopleOptions = {
  ttlMs: 15 * 60_000,
  failureTtlMs: 60_000,
  lookupTimeoutMs: 1_200,
  maxEntries: 10_000,
};

export class People {
  readonly #api: SlackApi;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #options: PeopleOptions;
  readonly #cache = new Map<string, { actor: Actor; expiresAt: number }>();
  readonly #inflight = new Map<string, Promise<Actor>>();

  constructor(api: SlackApi, clock: Clock, logger: Logger, options: Partial<PeopleOptions> = {}) {
    this.#api = api;
    this.#clock = clock;
    this.#logger = logger;
    this.#options = { ...DEFAULT_PEOPLE_OPTIONS, ...options };
  }

  /**
   * The person as known now, without waiting: the cached actor, else the bare user ID, and a
   * lookup started for the send (actor(), which the engine asks through the surface before the
   * turn goes out). What an event's ack uses: Slack redelivers after 3 s.
   */
  known(team: string, userId: string): Actor {
    const cached = this.#cached(team, userId);
    if (cached !== undefined) return cached;
    this.#start(team, userId)?.catch(() => undefined);
    return bare(userId);
  }

  /** The person, looked up with users.info if not cached; at most lookupTimeoutMs of waiting. */
  async actor(team: string, userId: string): Promise<Actor> {
    const cached = this.#cached(team, userId);
    if (cached !== undefined) return cached;
    const lookup = this.#start(team, userId);
    if (lookup === undefined) return bare(userId);
    const timeout = new AbortController();
    try {
      return await Promise.race([
        lookup,
        this.#clock.sleep(this.#options.lookupTimeoutMs, timeout.signal).then(
          () => bare(userId),
          () => bare(userId),
        ),
      ]);
    } finally {
      timeout.abort(WAIT_OVER);
    }
  }

  #cached(team: string, userId: string): Actor | undefined {
    const cached = this.#cache.get(`${team}:${userId}`);
    return cached !== undefined && cached.expiresAt > this.#clock.now() ? cached.actor : undefined;
  }

  /** The lookup under way for the person, or a new one; undefined when the budget is spent. */
  #start(team: string, userId: string): Promise<Actor> | undefined {
    const key = `${team}:${userId}`;
    let lookup = this.#inflight.get(key);
    if (lookup === undefined) {
      // With users.info's budget spent (a storm of events from people not cached yet), a
      // lookup would wait for the next token: the label goes out with the user ID (the contract
      // allows it), and nothing is looked up.
      if (!this.#api.reserve('users.info', team)) return undefined;
      lookup = this.#lookup(team, userId, key).finally(() => this.#inflight.delete(key));
      this.#inflight.set(key, lookup);
    }
    return lookup;
  }

  async #lookup(team: string, userId: string, key: string): Promise<Actor> {
    let actor: Actor;
    let ttl = this.#options.ttlMs;
    try {
      actor = actorOf(await this.#api.userInfo({ team, requester: 'users.info', prepaid: true }, userId));
    } catch (error) {
      this.#logger.warn(
        { userId, err: error instanceof Error ? { name: error.name } : undefined },
        'users.info failed; labelling with the user ID',
      );
      actor = bare(userId);
      ttl = this.#options.failureTtlMs;
    }
    if (this.#cache.size >= this.#options.maxEntries) {
      const oldest = this.#cache.keys().next();
      if (oldest.done !== true) this.#cache.delete(oldest.value);
    }
    this.#cache.set(key, { actor, expiresAt: this.#clock.now() + ttl });
    return actor;
  }
}

/** The label and actor of a person known only by ID. */
export function bare(userId: string): Actor {
  return { id: userId, label: actorFor('Slack', { id: cutWithMark(userId, 32) }).label };
}

export function actorOf(user: SlackUser): Actor {
  const profile = user.profile ?? {};
  const name = firstNonEmpty(profile.display_name, profile.real_name, user.real_name, user.name);
  // Slack's ids are short; a longer one is not Slack's and is cut as before.
  return { ...actorFor('Slack', { id: cutWithMark(user.id, 32), name, email: profile.email }), id: user.id };
}

function firstNonEmpty(...values: Array<string | undefined>): string | undefined {
  return values.find((v) => v !== undefined && v.trim() !== '');
}
