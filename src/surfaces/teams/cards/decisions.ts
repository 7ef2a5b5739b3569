import type { Logger } from 'pino';
import type { ApprovalAuditSink } from '../../../core/approval-audit.js';
import type { Actor } from '../../../core/compose.js';
import type { ChatInbound } from '../../../core/inbound.js';
import type { StructuredForm, StructuredReply } from '../../../core/question.js';
import type { LiveBinding } from '../../../core/registry.js';
import { type SessionKey, sessionIdOf } from '../../../core/store.js';
import type { TeamsSender } from '../sender.js';
import type { TeamsApprovers } from './approvers.js';
import {
  CALL_INPUT,
  type CardAttachment,
  decidedCard,
  ITEM_INPUT,
  refusalCard,
  VERB_DECIDE,
} from './question-card.js';

/**
 * A press of a question card's action (`adaptiveCard/action`): the answer of the question the
 * session waits on, taken once, by whoever may. The session and Binding come from the
 * conversation the press came from, never from the card's data (which only names the question
 * and carries the inputs). A tool approval is taken only from an approver for Teams
 * (./approvers.ts); anyone else gets the card back with a line saying so, and nothing is
 * decided. Once taken, the prompt message becomes the decided card for everyone; the presser
 * gets it as the invoke's answer.
 */

export const CARD_WORDS = {
  stale: 'This question is no longer waiting for an answer.',
  alreadyDecided: 'This was already decided.',
  notApprover:
    'Only the approvers named for this agent can approve or deny these tool calls. Your press changed nothing.',
  lookupFailed:
    'Agent Kourier could not check who may approve just now, so your press was not taken. Please try again in a moment.',
  noApprovers: 'No approvers are set for this agent in Teams, so nobody can approve tool calls here.',
  stopping: 'The agent’s task is being stopped, so your answer was not sent.',
  failed: 'Agent Kourier could not record your answer just now. Please press again in a moment.',
};

export interface Press {
  key: SessionKey;
  binding: LiveBinding;
  /** The prompt message the card is in. */
  promptId: string | undefined;
  actor: Actor;
  /** The presser's Entra object id and Teams id, for the approver check. */
  aadObjectId: string | undefined;
  memberId: string;
  data: Record<string, unknown>;
}

/** Where refused presses are counted (`agentkourier_approval_refusals_total`, as for Slack). */
export interface RefusalCounter {
  approvalRefused(binding: string, reason: 'not-an-approver' | 'lookup-failed' | 'no-approver-groups'): void;
}

export interface DecisionDeps {
  inbound: Pick<ChatInbound, 'answer' | 'findSession'>;
  counters?: RefusalCounter;
  approvers: TeamsApprovers;
  sender: TeamsSender;
  audit?: ApprovalAuditSink;
  logger: Logger;
}

export class TeamsDecisions {
  readonly #d: DecisionDeps;

  constructor(deps: DecisionDeps) {
    this.#d = deps;
  }

  /** Takes the press; the card to answer it with. */
  async press(p: Press): Promise<CardAttachment> {
    if (p.data.verb !== undefined && p.data.verb !== VERB_DECIDE)
      return refusalCard(undefined, CARD_WORDS.stale);
    const session = await this.#d.inbound.findSession(sessionIdOf(p.key));
    const pending = session?.question;
    const form = pending?.form;
    if (pending === undefined || pending === null || form === undefined || pending.questionKey !== p.data.q) {
      return refusalCard(undefined, CARD_WORDS.stale);
    }
    const question = { kind: 'structured' as const, text: '', key: pending.questionKey, form };
    if (form.kind === 'approval') {
      const refusal = await this.#gate(p);
      if (refusal !== undefined) {
        this.#d.logger.warn(
          {
            audit: 'tool-approval-refused',
            binding: p.binding.ref,
            sessionId: sessionIdOf(p.key),
            user: p.actor.id,
          },
          'a press on a tool approval in Teams was refused',
        );
        return refusalCard(question, refusal);
      }
    }
    const reply = replyOf(form, p.data);
    const result = await this.#d.inbound
      .answer({ key: p.key, binding: p.binding.ref, questionKey: pending.questionKey, actor: p.actor, reply })
      .catch((error: unknown) => {
        this.#d.logger.error(
          { err: error instanceof Error ? error.name : typeof error },
          'a Teams card answer failed',
        );
        return undefined;
      });
    if (result === undefined) return refusalCard(question, CARD_WORDS.failed);
    if (result.status === 'stale') return refusalCard(undefined, CARD_WORDS.stale);
    if (result.status === 'closed') return refusalCard(undefined, CARD_WORDS.stopping);
    if (result.status === 'duplicate') return refusalCard(undefined, CARD_WORDS.alreadyDecided);
    const decided = decidedCard(form, linesOf(form, reply), p.actor.name ?? p.actor.id);
    if (p.promptId !== undefined) {
      // Everyone sees the decision: the prompt message itself becomes the decided card.
      await this.#d.sender
        .edit(p.key, p.promptId, { type: 'message', attachments: [decided] })
        .catch((error: unknown) =>
          this.#d.logger.warn(
            { err: error instanceof Error ? error.name : typeof error },
            'the decided card was not shown',
          ),
        );
    }
    if (form.kind === 'approval' && reply.type === 'tool_approval')
      this.#audit(p, form, reply, result.turnId, pending.taskId);
    return decided;
  }

  /** Why the presser may not decide a tool approval; undefined when they may. */
  async #gate(p: Press): Promise<string | undefined> {
    const settings = p.binding.toolApprovals.perSurface?.teams;
    if (settings === undefined || settings.approverGroups.length + settings.approvers.length === 0) {
      this.#d.counters?.approvalRefused(p.binding.ref, 'no-approver-groups');
      return CARD_WORDS.noApprovers;
    }
    const addresses: string[] = [];
    if (settings.approvers.some((a) => a.includes('@'))) {
      const member = await this.#d.sender.member(p.key, p.memberId, AbortSignal.timeout(3_000));
      for (const a of [member?.email, member?.userPrincipalName])
        if (a !== undefined) addresses.push(a.toLowerCase());
    }
    const verdict = await this.#d.approvers.verdict({ aadObjectId: p.aadObjectId, addresses }, settings);
    if (verdict === 'approver') return undefined;
    this.#d.counters?.approvalRefused(
      p.binding.ref,
      verdict === 'unknown' ? 'lookup-failed' : 'not-an-approver',
    );
    return verdict === 'unknown' ? CARD_WORDS.lookupFailed : CARD_WORDS.notApprover;
  }

  #audit(
    p: Press,
    form: Extract<StructuredForm, { kind: 'approval' }>,
    reply: { decisions: Array<{ id: string; approved: boolean }> },
    turnId: string,
    taskId: string,
  ): void {
    const at = new Date().toISOString();
    for (const d of reply.decisions) {
      const call = form.calls.find((c) => c.id === d.id);
      if (call === undefined) continue;
      this.#d.audit?.record({
        binding: p.binding.ref,
        sessionId: sessionIdOf(p.key),
        surface: p.key.surface,
        workspace: p.key.workspaceId,
        channel: p.key.channelId,
        thread: p.key.threadId,
        prompt: p.promptId ?? '',
        taskId,
        turnId,
        approver: { id: p.actor.id, ...(p.actor.name === undefined ? {} : { name: p.actor.name }) },
        decidedAt: at,
        tool: { id: call.id, ...(call.callId === undefined ? {} : { callId: call.callId }), name: call.name },
        argumentsSha256: call.argsSha256,
        decision: d.approved ? 'approved' : 'denied',
        allAtOnce: false,
      });
    }
  }
}

/** The reply the card's inputs make: a decision per call (approve unless denied), or the answers. */
export function replyOf(form: StructuredForm, data: Record<string, unknown>): StructuredReply {
  const input = (name: string): string => {
    const v = data[name];
    return typeof v === 'string' ? v.slice(0, 4_000) : '';
  };
  if (form.kind === 'approval') {
    return {
      type: 'tool_approval',
      decisions: form.calls.map((c, i) => ({ id: c.id, approved: input(`${CALL_INPUT}${i}`) !== 'deny' })),
    };
  }
  return {
    type: 'ask_user',
    answers: form.items.map((item, i) => {
      const value = input(`${ITEM_INPUT}${i}`);
      if (item.choices.length === 0) return value === '' ? [] : [value];
      // A multi-select's values come comma separated; only the choices offered are taken.
      const picked = item.multiple ? value.split(',') : [value];
      return picked.filter((v) => item.choices.some((c) => c.slice(0, 200) === v));
    }),
  };
}

function linesOf(form: StructuredForm, reply: StructuredReply): string[] {
  if (form.kind === 'approval' && reply.type === 'tool_approval') {
    return reply.decisions.map((d) => {
      const call = form.calls.find((c) => c.id === d.id);
      return `${d.approved ? 'Approved' : 'Denied'}: ${call?.name ?? d.id}`;
    });
  }
  if (form.kind === 'ask' && reply.type === 'ask_user') {
    return form.items.map(
      (item, i) => `${item.question}: ${(reply.answers[i] ?? []).join(', ') || '(no answer)'}`,
    );
  }
  return [];
}
