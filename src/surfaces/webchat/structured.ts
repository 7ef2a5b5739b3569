import type { StructuredForm } from '../../core/question.js';
import { cutWithMark, visibleText } from '../../core/text.js';
import type { AskItemView, ToolCallView } from './view.js';

/**
 * A structured question's neutral form (core/question.ts) as the page shows it: texts made
 * visible and cut to what a page shows comfortably. Every tool call and every question is kept
 * (one decision per call, one answer per question), and choices keep their exact text, since an
 * answer sends them back as they are.
 */

const SHORT_MAX = 500;
const NAME_MAX = 200;
const QUESTION_MAX = 4_000;

export type StructuredReading =
  | { kind: 'approval'; hint: string; subagent?: string; tools: ToolCallView[] }
  | { kind: 'ask-user'; items: AskItemView[] }
  | { kind: 'unknown' };

function short(text: string, max = SHORT_MAX): string {
  return cutWithMark(visibleText(text), max);
}

export function readStructured(form: StructuredForm | undefined): StructuredReading {
  if (form === undefined) return { kind: 'unknown' };
  if (form.kind === 'approval') {
    const tools = form.calls.map(
      (call): ToolCallView => ({
        id: call.id,
        name: short(call.name, NAME_MAX),
        args: visibleText(call.args),
        argsTruncated: call.argsCut,
      }),
    );
    const hint = short(form.hint);
    return form.subagent === undefined
      ? { kind: 'approval', hint, tools }
      : { kind: 'approval', hint, subagent: short(form.subagent, NAME_MAX), tools };
  }
  return {
    kind: 'ask-user',
    items: form.items.map((item) => ({
      question: short(item.question, QUESTION_MAX),
      choices: [...item.choices],
      multiple: item.multiple,
    })),
  };
}
