import type { Logger } from 'pino';
import type { Clock } from '../../../core/clock.js';
import type { ToolApprovalSettings } from '../../../core/registry.js';
import type { HitlRequest } from '../../../dialects/kagent-v1/index.js';
import type { ApproverGroups } from './approvers.js';
import type { Place } from './payloads.js';
import { GROUP_ID } from './payloads.js';
import type { PromptState } from './state.js';
import type { Gate } from './view.js';
import { WORDS } from './words.js';

/**
 * Who may decide a prompt. A tool approval only a member of the Binding's
 * approverGroups, read from Slack (cached; a failed read refuses); approvals enabled with no
 * groups: nobody in Slack (fail closed), and the prompt says so. An ask_user question is not an
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
 * `agentkourier_approval_refusals_total`). Decisions are counted where they are taken, by the
 * answerer (app/structured-answers.ts).
 */
export interface ApprovalCounters {
  approvalRefused(binding: string, reason: RefusalReason): void;
}

export interface ApprovalGateOptions {
  approvers: ApproverGroups;
  counters?: ApprovalCounters | undefined;
  clock: Clock;
  logger: Logger;
  /** The Bindings, once the app listens (undefined before: no approvals yet). */
  bindings(): ApprovalBindings | undefined;
}

export class ApprovalGate {
  readonly #options: ApprovalGateOptions;

  constructor(options: ApprovalGateOptions) {
    this.#options = options;
  }

  /** Who may press a prompt of this Binding, as the prompt tells it. */
  gate(binding: string, request: HitlRequest): Gate {
    if (request.type === 'ask_user_request') return { kind: 'open', groups: [] };
    const settings = this.#options.bindings()?.get(binding)?.toolApprovals;
    if (settings === undefined) return { kind: 'unavailable' };
    if (!settings.enabled) return { kind: 'disabled' };
    const groups = settings.approverGroups.filter((g) => GROUP_ID.test(g));
    return groups.length === 0 ? { kind: 'no-groups' } : { kind: 'open', groups };
  }

  /**
   * Whether the presser may decide: undefined when they may, else what to tell them (the
   * refusal is logged and counted here).
   */
  async refusal(state: PromptState, place: Place): Promise<string | undefined> {
    if (state.request.type === 'ask_user_request') return undefined;
    // The Binding is read on every press: a change of its groups applies at once.
    const gate = this.gate(state.binding, state.request);
    let reason: RefusalReason;
    let text: string;
    if (gate.kind === 'disabled' || gate.kind === 'unavailable') {
      reason = 'approvals-disabled';
      text = WORDS.disabled;
    } else if (gate.kind === 'no-groups') {
      reason = 'no-approver-groups';
      text = WORDS.noGroups;
    } else {
      const membership = await this.#options.approvers.membership(place.team, gate.groups, place.user);
      if (membership.kind === 'member') return undefined;
      reason = membership.kind === 'unknown' ? 'lookup-failed' : 'not-an-approver';
      text = membership.kind === 'unknown' ? WORDS.lookupFailed : WORDS.notApprover(gate.groups);
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
