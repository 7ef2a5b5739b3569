import { ReplyShapeError } from '../../core/errors.js';
import type { BuiltReply, StructuredReply, ToolDecision } from '../../core/question.js';
import { cut, visibleText } from './display.js';
import {
  type AskUserRequest,
  type AskUserResponse,
  askUserAnswerId,
  type HitlRequest,
  hitlRequestOf,
  KAGENT_HITL_EXTENSION,
  RESPONSE_TYPES,
  type ToolApproval,
  type ToolApprovalResponse,
  visibleTools,
} from './hitl.js';

/**
 * The extension's replies, built as `engine.answer` takes them: `metadata` is sent
 * as the message's metadata (the response under the extension's URI), `text` is the one text
 * part, for display and logs, with no label line (S-6).
 *
 * The builders refuse what kagent would refuse, before anything is sent: kagent rejects a
 * reply with a missing, repeated or unknown id, and leaving an id out must never read as
 * approval.
 */

export type HitlReplyErrorCode =
  | 'hitl_wrong_request'
  | 'hitl_missing_decision'
  | 'hitl_duplicate_decision'
  | 'hitl_unknown_decision'
  | 'hitl_answer_count'
  | 'hitl_answer_shape';

/** A reply that does not fit its request. `message` names ids only, never agent text. */
export class HitlReplyError extends ReplyShapeError {
  declare readonly code: HitlReplyErrorCode;
  constructor(code: HitlReplyErrorCode, message: string) {
    super(code, message);
  }
}

export type HitlReply = BuiltReply;

const TEXT_NAME_MAX = 80;
const TEXT_PART_MAX = 500;

function line(text: string, max: number): string {
  return cut(visibleText(text).replace(/\s+/g, ' ').trim(), max);
}

/** One decision per visible tool call, in the request's order. */
export function toolApprovalResponse(request: HitlRequest, decisions: readonly ToolDecision[]): HitlReply {
  if (request.type !== 'tool_approval_request') {
    throw new HitlReplyError('hitl_wrong_request', 'a tool approval answers only a tool approval request');
  }
  const tools = visibleTools(request);
  const byId = new Map<string, ToolDecision>();
  for (const decision of decisions) {
    if (byId.has(decision.id)) {
      throw new HitlReplyError('hitl_duplicate_decision', `tool call ${decision.id} is decided twice`);
    }
    byId.set(decision.id, decision);
  }
  const known = new Set(tools.map((t) => t.id));
  const unknown = decisions.filter((d) => !known.has(d.id)).map((d) => d.id);
  if (unknown.length > 0) {
    throw new HitlReplyError('hitl_unknown_decision', `no pending tool call has id ${unknown.join(', ')}`);
  }
  const approvals: ToolApproval[] = [];
  const lines: string[] = [];
  for (const tool of tools) {
    const decision = byId.get(tool.id);
    if (decision === undefined) {
      throw new HitlReplyError('hitl_missing_decision', `tool call ${tool.id} has no decision`);
    }
    const approval: ToolApproval = { id: tool.id, approved: decision.approved };
    const reason = decision.reason?.trim() ?? '';
    if (!decision.approved && reason !== '') approval.rejection_reason = reason;
    approvals.push(approval);
    const toolName = line(tool.name, TEXT_NAME_MAX);
    if (decision.approved) lines.push(`Approved ${toolName}`);
    else
      lines.push(reason === '' ? `Denied ${toolName}` : `Denied ${toolName}: ${line(reason, TEXT_PART_MAX)}`);
  }
  const response: ToolApprovalResponse = { type: 'tool_approval_response', approvals };
  return { text: lines.join('\n'), metadata: { [KAGENT_HITL_EXTENSION]: response } };
}

/**
 * One answer per question, in order; each answer is a list of strings (choices picked, or one
 * free text). A single-select question takes at most one.
 */
export function askUserResponse(request: HitlRequest, answers: readonly (readonly string[])[]): HitlReply {
  if (request.type !== 'ask_user_request') {
    throw new HitlReplyError('hitl_wrong_request', 'answers answer only an ask_user request');
  }
  return buildAskUser(request, answers);
}

function buildAskUser(request: AskUserRequest, answers: readonly (readonly string[])[]): HitlReply {
  if (answers.length !== request.questions.length) {
    throw new HitlReplyError(
      'hitl_answer_count',
      `${request.questions.length} question(s) need as many answers, got ${answers.length}`,
    );
  }
  const lines: string[] = [];
  const out: Array<{ answer: string[] }> = [];
  request.questions.forEach((question, i) => {
    const answer = answers[i] ?? [];
    if (!answer.every((a) => typeof a === 'string')) {
      throw new HitlReplyError('hitl_answer_shape', `answer ${i + 1} holds something other than text`);
    }
    if (!question.multiple && answer.length > 1) {
      throw new HitlReplyError(
        'hitl_answer_shape',
        `question ${i + 1} takes one answer, got ${answer.length}`,
      );
    }
    out.push({ answer: [...answer] });
    const said = answer.length === 0 ? '(no answer)' : answer.map((a) => line(a, TEXT_PART_MAX)).join(', ');
    lines.push(`${line(question.question, TEXT_PART_MAX)} → ${said}`);
  });
  const response: AskUserResponse = { type: 'ask_user_response', id: askUserAnswerId(request), answers: out };
  return { text: lines.join('\n'), metadata: { [KAGENT_HITL_EXTENSION]: response } };
}

/** A person's reply to a kagent request (the question's reply data), as kagent's message. */
export function buildReply(request: unknown, answer: StructuredReply): HitlReply {
  const read = hitlRequestOf(request);
  if (read === undefined)
    throw new HitlReplyError('hitl_wrong_request', 'the question this answers is not a kagent request');
  return answer.type === 'tool_approval'
    ? toolApprovalResponse(read, answer.decisions)
    : askUserResponse(read, answer.answers);
}

/** The extensions a message speaks: the HITL URI when its metadata carries a HITL response. */
export function messageExtensions(metadata: Record<string, unknown> | null): string[] {
  const value = metadata?.[KAGENT_HITL_EXTENSION];
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return [];
  const type = (value as Record<string, unknown>).type;
  return typeof type === 'string' && RESPONSE_TYPES.has(type) ? [KAGENT_HITL_EXTENSION] : [];
}
