import type { Actor } from '../../core/compose.js';
import type { AnswerResult } from '../../core/ports.js';
import type { SessionKey } from '../../core/store.js';
import { WebChatRequestError } from './errors.js';
import type { DecisionInput } from './schemas.js';
import type { ApprovalView, DecisionView, QuestionView } from './view.js';

/**
 * Structured answers (kagent's human-in-the-loop): the web chat checks a reply against the
 * prompt it showed, then hands it to the composition root, which builds the dialect's message
 * (the kagent-v1 builders) and gives it to the engine (`SessionEngine.answer`).
 */

export interface ToolDecision {
  /** The approval id of the tool call, as shown (kagent's `tools[].id` or `nested.tools[].id`). */
  id: string;
  approved: boolean;
  /** Why it was denied; only on a denial. */
  reason?: string;
}

export type StructuredReply =
  /** One decision per tool call shown, in the order shown. */
  | { type: 'tool_approval'; decisions: ToolDecision[] }
  /** One list of strings per ask_user question, positional. */
  | { type: 'ask_user'; answers: string[][] };

export interface StructuredAnswerRequest {
  key: SessionKey;
  binding: string;
  questionKey: string;
  /** The question's payload as the engine gave it (kagent's request), for the builder. */
  payload: unknown;
  reply: StructuredReply;
  actor: Actor;
  /** A short human summary of the reply (shown in the thread); the builder may reuse it. */
  summary: string;
}

/**
 * Given by the composition root: builds the dialect's reply and calls `engine.answer`, returning
 * its result (accepted, duplicate or stale).
 */
export type AnswerStructured = (request: StructuredAnswerRequest) => Promise<AnswerResult>;

/** Checks decisions against the tool calls shown: each one exactly once, no others. */
export function checkDecisions(approval: ApprovalView, input: readonly DecisionInput[]): ToolDecision[] {
  const byId = new Map<string, DecisionInput>();
  for (const d of input) {
    if (byId.has(d.id)) throw invalid(`decisions: tool call ${d.id} is decided twice`);
    if (d.approved && d.reason !== undefined)
      throw invalid(`decisions: a reason is only given with a denial (${d.id})`);
    byId.set(d.id, d);
  }
  const known = new Set(approval.tools.map((t) => t.id));
  for (const id of byId.keys())
    if (!known.has(id)) throw invalid(`decisions: no tool call ${id} in this approval`);
  return approval.tools.map((tool) => {
    const d = byId.get(tool.id);
    if (d === undefined) throw invalid(`decisions: tool call ${tool.id} (${tool.name}) needs a decision`);
    const reason = d.reason?.trim();
    return d.approved || reason === undefined || reason === ''
      ? { id: d.id, approved: d.approved }
      : { id: d.id, approved: false, reason };
  });
}

/** Checks ask_user answers: one per question, and one choice at most where only one is taken. */
export function checkAnswers(question: QuestionView, answers: readonly string[][]): string[][] {
  if (answers.length !== question.items.length) {
    throw invalid(`answers: give one list per question (${question.items.length}), not ${answers.length}`);
  }
  return answers.map((answer, i) => {
    const cleaned = answer.map((a) => a.trim()).filter((a) => a !== '');
    if (question.items[i]?.multiple !== true && cleaned.length > 1) {
      throw invalid(`answers.${i}: this question takes one answer`);
    }
    return cleaned;
  });
}

export function summariseDecisions(approval: ApprovalView, decisions: readonly DecisionView[]): string {
  const names = new Map(approval.tools.map((t) => [t.id, t.name]));
  return decisions
    .map((d) => {
      const name = names.get(d.id) ?? d.id;
      if (d.approved) return `Approved ${name}`;
      return d.reason === undefined ? `Denied ${name}` : `Denied ${name}: ${d.reason}`;
    })
    .join('\n');
}

export function summariseAnswers(question: QuestionView, answers: readonly string[][]): string {
  if (answers.length === 1) return (answers[0] ?? []).join(', ') || '(no answer)';
  return answers
    .map((a, i) => `${question.items[i]?.question ?? `Question ${i + 1}`}: ${a.join(', ') || '(no answer)'}`)
    .join('\n');
}

function invalid(message: string): WebChatRequestError {
  return new WebChatRequestError(400, 'invalid_request', message);
}
