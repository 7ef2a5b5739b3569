import type { Logger } from 'pino';
import type { ApprovalAudit, ApprovalAuditSink } from '../../../core/approval-audit.js';
import type { Clock } from '../../../core/clock.js';
import type { Actor } from '../../../core/compose.js';
import { KourierError } from '../../../core/errors.js';
import type { StructuredForm } from '../../../core/question.js';
import type { ToolApprovalSettings } from '../../../core/registry.js';
import type { People } from '../inbound/people.js';
import type { SlackApi } from '../web-api/client.js';
import { GROUP_ID, type Place } from './payloads.js';
import type { PromptState } from './state.js';
import { type Gate, WORDS } from './view.js';

/**
 * Who may decide on a prompt: the approver groups, the gate every press passes, and the audit of
 * what was decided.
 */

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

/**
 * Who may decide a prompt. A tool approval only a person the Binding's approvers name, or
 * a member of its approverGroups, read from Slack (cached; a failed read refuses); approvals
 * enabled with neither: nobody in Slack (fail closed), and the prompt says so. An ask_user question is not an
 * approval: anyone in the thread may answer. Checked on every press, so a change of the
 * Binding's groups applies at once; every refusal is logged and counted.
 */

/** The tool-approval settings of a Binding. `LiveRegistry` is one. */
export interface ApprovalBindings {
  get(ref: string): { toolApprovals: ToolApprovalSettings } | undefined;
}

/** Why a press was refused, for the log line and the refusal metric. */
export type RefusalReason = 'not-an-approver' | 'lookup-failed' | 'no-approver-groups' | 'approvals-disabled';

/**
 * Where refused presses are counted (observability's BrokerMetrics implements it, as
 * `agentkourier_approval_refusals_total`). Decisions are counted where they are taken, from the
 * engine's approval.decided event.
 */
export interface ApprovalCounters {
  approvalRefused(binding: string, reason: RefusalReason): void;
}

export interface ApprovalGateOptions {
  approvers: ApproverGroups;
  counters?: ApprovalCounters | undefined;
  clock: Clock;
  logger: Logger;
  /** The live Bindings: who may approve is read from each one's settings at every press. */
  bindings: ApprovalBindings;
}

export class ApprovalGate {
  readonly #options: ApprovalGateOptions;

  constructor(options: ApprovalGateOptions) {
    this.#options = options;
  }

  /** Who may press a prompt of this Binding, as the prompt tells it. */
  gate(binding: string, form: StructuredForm): Gate {
    if (form.kind === 'ask') return { kind: 'open', groups: [], people: [] };
    const settings = this.#options.bindings.get(binding)?.toolApprovals;
    if (settings === undefined) return { kind: 'unavailable' };
    if (!settings.enabled) return { kind: 'disabled' };
    const groups = settings.approverGroups.filter((g) => GROUP_ID.test(g));
    const people = settings.approvers;
    return groups.length === 0 && people.length === 0
      ? { kind: 'no-groups' }
      : { kind: 'open', groups, people };
  }

  /**
   * Whether the presser may decide: undefined when they may, else what to tell them (the
   * refusal is logged and counted here).
   */
  async refusal(state: PromptState, place: Place): Promise<string | undefined> {
    if (state.form.kind === 'ask') return undefined;
    // The Binding is read on every press: a change of its groups applies at once.
    const gate = this.gate(state.binding, state.form);
    let reason: RefusalReason;
    let text: string;
    if (gate.kind === 'disabled' || gate.kind === 'unavailable') {
      reason = 'approvals-disabled';
      text = WORDS.disabled;
    } else if (gate.kind === 'no-groups') {
      reason = 'no-approver-groups';
      text = WORDS.noGroups;
    } else {
      // Named approvers need no lookup; only for the others are the groups read.
      if (gate.people.includes(place.user)) return undefined;
      const membership =
        gate.groups.length === 0
          ? ({ kind: 'not-member' } as const)
          : await this.#options.approvers.membership(place.team, gate.groups, place.user);
      if (membership.kind === 'member') return undefined;
      reason = membership.kind === 'unknown' ? 'lookup-failed' : 'not-an-approver';
      text = membership.kind === 'unknown' ? WORDS.lookupFailed : WORDS.notApprover(gate);
    }
    this.#options.counters?.approvalRefused(state.binding, reason);
    this.#options.logger.warn(
      {
        audit: 'tool-approval-refused',
        binding: state.binding,
        sessionId: state.sessionId,
        taskId: state.taskId,
        user: place.user,
        reason,
        at: new Date(this.#options.clock.now()).toISOString(),
      },
      'a press on a tool approval was refused',
    );
    return text;
  }
}

/**
 * The audit of tool approvals taken in Slack: one record per decision, each tool call's mark
 * with the person who made it (named where Slack says), handed to the broker's audit sink.
 */
export class ApprovalAuditor {
  readonly #sink: ApprovalAuditSink | undefined;

  constructor(sink: ApprovalAuditSink | undefined) {
    this.#sink = sink;
  }

  /** Audits the decisions of a tool approval the engine took as turn `turnId`. */
  async record(state: PromptState, turnId: string, people: People | undefined): Promise<void> {
    if (state.form.kind !== 'approval') return;
    const tools = state.form.calls;
    // Who decided, by name where Slack says (cached by People; a failed lookup is the bare id).
    const deciders = [...new Set([...state.marks.values()].map((m) => m.by))];
    const known = new Map<string, Actor>();
    await Promise.all(
      deciders.map(async (id) => {
        const actor = await people?.actor(state.key.workspaceId, id).catch(() => undefined);
        if (actor !== undefined) known.set(id, actor);
      }),
    );
    tools.forEach((tool, i) => {
      const mark = state.marks.get(i);
      if (mark === undefined) return;
      const approver: ApprovalAudit['approver'] = { id: mark.by };
      const person = known.get(mark.by);
      if (person?.name !== undefined) approver.name = person.name;
      if (person?.email !== undefined) approver.email = person.email;
      this.#sink?.record({
        binding: state.binding,
        sessionId: state.sessionId,
        surface: state.key.surface,
        workspace: state.key.workspaceId,
        channel: state.channel,
        thread: state.key.threadId,
        prompt: state.ts,
        taskId: state.taskId,
        turnId,
        approver,
        decidedAt: new Date(mark.at).toISOString(),
        tool: { id: tool.id, ...(tool.callId === undefined ? {} : { callId: tool.callId }), name: tool.name },
        argumentsSha256: tool.argsSha256,
        decision: mark.approved === true ? 'approved' : 'denied',
        ...(mark.reason === undefined ? {} : { reason: mark.reason }),
        allAtOnce: mark.allAtOnce === true,
      });
    });
  }
}
