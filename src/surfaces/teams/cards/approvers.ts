import type { Logger } from 'pino';
import { z } from 'zod';
import { GraphRefusedError } from '../errors.js';

/**
 * Who may approve a tool call in Teams: the people a Binding names for Teams (Microsoft
 * Entra object ids, or emails matched against the person's email or UPN from the conversation's
 * member lookup), and the members of the Entra groups it names, asked of Microsoft Graph
 * (`POST /v1.0/users/{id}/checkMemberGroups`, transitive, up to 20 groups a call; the app needs
 * the application permissions GroupMember.Read.All and User.Read.All, with admin consent). An
 * answer is kept for five minutes per person and list of groups; a lookup that fails is not
 * kept and never counts as membership: the press is refused (fail closed).
 */

export interface TeamsApproverSettings {
  /** Entra group object ids. */
  approverGroups: readonly string[];
  /** Entra user object ids, or emails. */
  approvers: readonly string[];
}

export interface Approver {
  aadObjectId: string | undefined;
  /** Email and UPN, when the member lookup said (lower case). */
  addresses: readonly string[];
}

export type ApproverVerdict = 'approver' | 'not-approver' | 'unknown';

const TTL_MS = 5 * 60_000;
const MAX_CACHED = 10_000;
const GROUPS_PER_CALL = 20;
const TIMEOUT_MS = 10_000;

const checkResponse = z.object({ value: z.array(z.string().max(64)).max(GROUPS_PER_CALL) });

export class TeamsApprovers {
  readonly #graphUrl: string;
  readonly #token: () => Promise<string>;
  readonly #logger: Logger;
  readonly #cache = new Map<string, { member: boolean; until: number }>();

  constructor(o: { graphUrl: string; token: () => Promise<string>; logger: Logger }) {
    this.#graphUrl = o.graphUrl.replace(/\/+$/, '');
    this.#token = o.token;
    this.#logger = o.logger;
  }

  async verdict(person: Approver, settings: TeamsApproverSettings): Promise<ApproverVerdict> {
    const named = new Set(settings.approvers.map((a) => a.toLowerCase()));
    if (person.aadObjectId !== undefined && named.has(person.aadObjectId.toLowerCase())) return 'approver';
    if (person.addresses.some((a) => named.has(a))) return 'approver';
    if (settings.approverGroups.length === 0 || person.aadObjectId === undefined) return 'not-approver';
    const key = `${person.aadObjectId}\n${[...settings.approverGroups].sort().join(',')}`;
    const cached = this.#cache.get(key);
    if (cached !== undefined && cached.until > Date.now()) return cached.member ? 'approver' : 'not-approver';
    try {
      const member = await this.#inAnyGroup(person.aadObjectId, settings.approverGroups);
      if (this.#cache.size >= MAX_CACHED) this.#cache.delete(this.#cache.keys().next().value as string);
      this.#cache.set(key, { member, until: Date.now() + TTL_MS });
      return member ? 'approver' : 'not-approver';
    } catch (error) {
      this.#logger.warn(
        { err: error instanceof Error ? error.name : typeof error },
        'Microsoft Graph did not say whether a person is in an approver group; the press is refused',
      );
      return 'unknown';
    }
  }

  async #inAnyGroup(userId: string, groups: readonly string[]): Promise<boolean> {
    const token = await this.#token();
    for (let i = 0; i < groups.length; i += GROUPS_PER_CALL) {
      const groupIds = groups.slice(i, i + GROUPS_PER_CALL);
      const res = await fetch(
        `${this.#graphUrl}/v1.0/users/${encodeURIComponent(userId)}/checkMemberGroups`,
        {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: JSON.stringify({ groupIds }),
          signal: AbortSignal.timeout(TIMEOUT_MS),
        },
      );
      if (!res.ok) throw new GraphRefusedError(res.status);
      const parsed = checkResponse.safeParse(await res.json());
      if (!parsed.success) throw new GraphRefusedError(res.status);
      if (parsed.data.value.some((g) => groupIds.includes(g))) return true;
    }
    return false;
  }
}
