import type { Logger } from 'pino';
import type { Clock } from '../../../core/clock.js';
import { KourierError } from '../../../core/errors.js';
import type { SlackApi } from '../web-api/client.js';
import { GROUP_ID } from './payloads.js';

/**
 * Who may approve a tool call: the members of the Binding's approverGroups, Slack user
 * groups read with usergroups.users.list. A group's members are cached with a TTL (kagent's own
 * Slack bot keeps them 5 minutes), and lookups of one group share one call. A lookup that fails
 * is not cached and never counts as membership: the press is refused (fail closed).
 */

export interface ApproverOptions {
  /** How long a group's member list is trusted. */
  ttlMs: number;
  maxGroups: number;
}

export const DEFAULT_APPROVER_OPTIONS: ApproverOptions = { ttlMs: 5 * 60_000, maxGroups: 1_000 };

export type Membership =
  | { kind: 'member'; group: string }
  | { kind: 'not-member' }
  /** No group lists the person and at least one could not be read: nobody knows. */
  | { kind: 'unknown'; failed: string[] };

export class ApproverLookupError extends KourierError {
  constructor(readonly group: string) {
    super('approver_lookup_failed', `the members of user group ${group} could not be read`);
  }
}

export class ApproverGroups {
  readonly #api: SlackApi;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #options: ApproverOptions;
  readonly #cache = new Map<string, { members: ReadonlySet<string>; expiresAt: number }>();
  readonly #inflight = new Map<string, Promise<ReadonlySet<string>>>();

  constructor(api: SlackApi, clock: Clock, logger: Logger, options: Partial<ApproverOptions> = {}) {
    this.#api = api;
    this.#clock = clock;
    this.#logger = logger;
    this.#options = { ...DEFAULT_APPROVER_OPTIONS, ...options };
  }

  /** Whether `userId` is in one of `groups` of workspace `team`. */
  async membership(team: string, groups: readonly string[], userId: string): Promise<Membership> {
    const failed: string[] = [];
    // A cached yes answers at once; the others are read together.
    const results = await Promise.all(
      groups.map(async (group) => {
        try {
          return { group, members: await this.members(team, group) };
        } catch {
          failed.push(group);
          return { group, members: undefined };
        }
      }),
    );
    const hit = results.find((r) => r.members?.has(userId) === true);
    if (hit !== undefined) return { kind: 'member', group: hit.group };
    return failed.length > 0 ? { kind: 'unknown', failed } : { kind: 'not-member' };
  }

  /** The members of a group; throws ApproverLookupError when Slack cannot say. */
  async members(team: string, group: string): Promise<ReadonlySet<string>> {
    if (!GROUP_ID.test(group)) throw new ApproverLookupError(group);
    const key = `${team}:${group}`;
    const cached = this.#cache.get(key);
    if (cached !== undefined && cached.expiresAt > this.#clock.now()) return cached.members;
    let lookup = this.#inflight.get(key);
    if (lookup === undefined) {
      lookup = this.#lookup(team, group, key).finally(() => this.#inflight.delete(key));
      this.#inflight.set(key, lookup);
    }
    return lookup;
  }

  /** Forgets every cached member list (the Binding's groups changed). */
  clear(): void {
    this.#cache.clear();
  }

  async #lookup(team: string, group: string, key: string): Promise<ReadonlySet<string>> {
    let users: string[];
    try {
      users = await this.#api.userGroupMembers({ team, requester: 'usergroups.users.list' }, group);
    } catch (error) {
      this.#logger.warn(
        {
          group,
          err: error instanceof KourierError ? error.code : error instanceof Error ? error.name : 'error',
        },
        'could not read the members of an approver group; presses are refused until it can be read',
      );
      throw new ApproverLookupError(group);
    }
    if (this.#cache.size >= this.#options.maxGroups) {
      const oldest = this.#cache.keys().next();
      if (oldest.done !== true) this.#cache.delete(oldest.value);
    }
    const members = new Set(users);
    this.#cache.set(key, { members, expiresAt: this.#clock.now() + this.#options.ttlMs });
    return members;
  }
}
