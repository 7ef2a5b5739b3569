import type { ToolDecision } from '../../core/ports.js';
import { WebChatRequestError } from './errors.js';
import type { DecisionInput } from './schemas.js';
import type { ApprovalView, DecisionView, QuestionView } from './view.js';

/**
 * Structured answers (kagent's human-in-the-loop): the web chat checks a reply against the
 * prompt it showed, then hands it to the answerer the composition root gave it (core's
 * AnswerStructured port), which builds the dialect's message and gives it to the engine.
 */

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
