import { setTimeout as sleep } from 'node:timers/promises';
import { type Actor, actorFor } from '../../core/compose.js';
import type { SessionKey } from '../../core/store.js';
import type { MemberInfo } from './sender.js';

/**
 * Who wrote a Teams message, for the label line `[Teams: Name (Entra object id) <email>]` (S-6)
 * and the actor metadata (S-5), as Slack's label has it. The activity carries the name and the
 * Entra object id; the email (or the UPN) comes from the conversation's member lookup, cached
 * per person for a while, one lookup per person at a time. A message waits for the lookup at
 * most `waitMs` (Teams waits for the app's answer far longer than Slack, but a slow lookup
 * still should not hold a turn): past it the turn goes with the name, and the engine asks
 * again, bounded, just before the send (the surface's `person`).
 */

export interface TeamsPeopleOptions {
  ttlMs: number;
  failureTtlMs: number;
  waitMs: number;
  maxEntries: number;
}

export const DEFAULT_TEAMS_PEOPLE: TeamsPeopleOptions = {
  ttlMs: 15 * 60_000,
  failureTtlMs: 60_000,
  waitMs: 1_200,
  maxEntries: 10_000,
};

type Lookup = (key: SessionKey, memberId: string, signal: AbortSignal) => Promise<MemberInfo | undefined>;

export class TeamsPeople {
  readonly #lookup: Lookup;
  readonly #o: TeamsPeopleOptions;
  readonly #cache = new Map<string, { info: MemberInfo | undefined; until: number }>();
  readonly #pending = new Map<string, Promise<MemberInfo | undefined>>();

  constructor(lookup: Lookup, options: Partial<TeamsPeopleOptions> = {}) {
    this.#lookup = lookup;
    this.#o = { ...DEFAULT_TEAMS_PEOPLE, ...options };
  }

  /** The person with their email when it is known (or learnt within the wait); their name otherwise. */
  async actor(
    key: SessionKey,
    person: { memberId: string; aadObjectId: string | undefined; name: string | undefined },
  ): Promise<Actor> {
    const id = person.aadObjectId ?? person.memberId;
    const info = await Promise.race([
      this.member(key, person.memberId),
      sleep(this.#o.waitMs, undefined, { ref: false }),
    ]);
    return actorFor('Teams', {
      id,
      name: person.name ?? info?.name,
      email: info?.email ?? info?.userPrincipalName,
    });
  }

  /** The member as the lookup said, cached; undefined when it could not say. */
  member(key: SessionKey, memberId: string): Promise<MemberInfo | undefined> {
    const cacheKey = `${key.workspaceId}\n${memberId}`;
    const cached = this.#cache.get(cacheKey);
    if (cached !== undefined && cached.until > Date.now()) return Promise.resolve(cached.info);
    let pending = this.#pending.get(cacheKey);
    if (pending === undefined) {
      pending = this.#lookup(key, memberId, AbortSignal.timeout(10_000))
        .catch(() => undefined)
        .then((info) => {
          if (this.#cache.size >= this.#o.maxEntries)
            this.#cache.delete(this.#cache.keys().next().value as string);
          const ttl = info === undefined ? this.#o.failureTtlMs : this.#o.ttlMs;
          this.#cache.set(cacheKey, { info, until: Date.now() + ttl });
          return info;
        })
        .finally(() => this.#pending.delete(cacheKey));
      this.#pending.set(cacheKey, pending);
    }
    return pending;
  }
}
