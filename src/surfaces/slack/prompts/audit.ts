import type { Logger } from 'pino';
import type { Actor } from '../../../core/compose.js';
import { visibleTools } from '../../../dialects/kagent-v1/index.js';
import type { People } from '../inbound/people.js';
import { errorName } from '../web-api/errors.js';
import type { PromptState } from './state.js';
import { argumentsHash } from './token.js';

/**
 * The audit of tool approvals: every decision sent to an agent is one record — who decided
 * what on which tool call, with a digest of its arguments — written as a log line and given
 * to `onDecision` listeners (the cluster's controller records a Kubernetes Event on the
 * Binding). Counted as a metric by the answerer that sent it.
 */

/** One decision on one tool call, as sent to the agent: the audit record. */
export interface ApprovalAudit {
  binding: string;
  sessionId: string;
  workspace: string;
  channel: string;
  threadTs: string;
  /** The prompt message. */
  promptTs: string;
  taskId: string;
  /** The answer turn that carried it to the agent. */
  turnId: string;
  approver: { id: string; name?: string; email?: string };
  /** When the person decided (ISO 8601). */
  decidedAt: string;
  tool: { id: string; callId: string; name: string };
  /** sha256 (hex) of the call's arguments as canonical JSON (sorted keys). */
  argumentsSha256: string;
  decision: 'approved' | 'denied';
  reason?: string;
  /** Decided with Approve all / Deny all. */
  allAtOnce: boolean;
}

export type DecisionListener = (audit: ApprovalAudit) => void;

export class ApprovalAuditor {
  readonly #logger: Logger;
  readonly #listeners = new Set<DecisionListener>();

  constructor(logger: Logger) {
    this.#logger = logger;
  }

  /** Calls `listener` with every decision sent to an agent; returns an unsubscribe. */
  onDecision(listener: DecisionListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Audits the decisions of a tool approval the engine took as turn `turnId`. */
  async record(state: PromptState, turnId: string, people: People | undefined): Promise<void> {
    if (state.request.type !== 'tool_approval_request') return;
    const tools = visibleTools(state.request);
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
      const audit: ApprovalAudit = {
        binding: state.binding,
        sessionId: state.sessionId,
        workspace: state.key.workspaceId,
        channel: state.channel,
        threadTs: state.key.threadId,
        promptTs: state.ts,
        taskId: state.taskId,
        turnId,
        approver,
        decidedAt: new Date(mark.at).toISOString(),
        tool: { id: tool.id, callId: tool.call_id, name: tool.name },
        argumentsSha256: argumentsHash(tool.args),
        decision: mark.approved === true ? 'approved' : 'denied',
        ...(mark.reason === undefined ? {} : { reason: mark.reason }),
        allAtOnce: mark.allAtOnce === true,
      };
      this.#logger.info({ audit: 'tool-approval', ...audit }, 'tool approval decision');
      for (const listener of this.#listeners) {
        try {
          listener(audit);
        } catch (error) {
          this.#logger.warn({ err: errorName(error) }, 'an approval decision listener failed');
        }
      }
    });
  }
}
