import { cutText, cutWithMark } from '../../core/text.js';
import { hitlRequestOf, visibleTools } from '../../dialects/kagent-v1/hitl.js';
import type { AskItemView, ToolCallView } from './view.js';

/**
 * Shows kagent's human-in-the-loop requests (a structured question's payload). The payload is
 * read by the kagent-v1 dialect's own reader (strict, as the answerer is), so the page never
 * offers what the answerer would refuse; texts are cut to what a page can show. Every tool call and every question is kept, though: kagent
 * wants one decision per visible call and one answer per question, so none may be dropped. Building the reply is the kagent-v1 dialect's job; the
 * web chat only collects decisions and answers keyed by what it showed.
 */

/** Pretty arguments longer than this are cut (the page shows them in a scrolling box). */
export const ARGS_MAX_CHARS = 4_000;
const MAX_CHOICES = 50;
const SHORT_MAX = 500;

export type StructuredReading =
  | { kind: 'approval'; hint: string; subagent?: string; tools: ToolCallView[] }
  | { kind: 'ask-user'; items: AskItemView[] }
  | { kind: 'unknown' };

function short(text: string, max = SHORT_MAX): string {
  return cutWithMark(text, max);
}

export function prettyArgs(args: unknown): { text: string; truncated: boolean } {
  let text: string;
  try {
    text = JSON.stringify(args ?? {}, null, 2) ?? 'null';
  } catch {
    text = '[arguments that cannot be shown]';
  }
  if (text.length <= ARGS_MAX_CHARS) return { text, truncated: false };
  return { text: `${cutText(text, ARGS_MAX_CHARS)}\n…`, truncated: true };
}

export function readStructured(payload: unknown): StructuredReading {
  // The kagent-v1 dialect's own reader: the page shows exactly what the answerer would take.
  const request = hitlRequestOf(payload);
  if (request === undefined) return { kind: 'unknown' };
  if (request.type === 'tool_approval_request') {
    const views = visibleTools(request).map((t): ToolCallView => {
      const args = prettyArgs(t.args);
      return { id: t.id, name: short(t.name, 200), args: args.text, argsTruncated: args.truncated };
    });
    const hint = short(request.hint ?? '');
    const subagent = request.nested?.subagent_name;
    return typeof subagent === 'string' && subagent !== ''
      ? { kind: 'approval', hint, subagent: short(subagent, 200), tools: views }
      : { kind: 'approval', hint, tools: views };
  }
  return {
    kind: 'ask-user',
    items: request.questions.map((q) => ({
      question: short(q.question, 4_000),
      choices: q.choices.slice(0, MAX_CHOICES).map((c) => short(c)),
      multiple: q.multiple,
    })),
  };
}

/** The tool calls of an approval as the audit names them (id, call id, name, full arguments). */
export function approvalCalls(
  payload: unknown,
): Array<{ id: string; callId?: string; name: string; args: unknown }> {
  const request = hitlRequestOf(payload);
  if (request?.type !== 'tool_approval_request') return [];
  return visibleTools(request).map((t) => ({
    id: t.id,
    ...(typeof t.call_id === 'string' ? { callId: t.call_id } : {}),
    name: t.name,
    args: t.args,
  }));
}
