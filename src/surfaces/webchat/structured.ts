import { z } from 'zod';
import { cutText, cutWithMark } from '../../core/text.js';
import type { AskItemView, ToolCallView } from './view.js';

/**
 * Reads kagent's human-in-the-loop requests (a structured question's payload) for display. The
 * payload is the agent's data, so it is parsed, never trusted: unknown fields are ignored, and
 * texts are cut to what a page can show. Every tool call and every question is kept, though: kagent
 * wants one decision per visible call and one answer per question, so none may be dropped. Building the reply is the kagent-v1 dialect's job; the
 * web chat only collects decisions and answers keyed by what it showed.
 */

/** Pretty arguments longer than this are cut (the page shows them in a scrolling box). */
export const ARGS_MAX_CHARS = 4_000;
const MAX_CHOICES = 50;
const SHORT_MAX = 500;

const tool = z.object({ id: z.string().min(1), name: z.string(), args: z.unknown().optional() });

interface Nested {
  subagent_name?: string | null | undefined;
  tools: Array<z.infer<typeof tool>>;
  nested?: Nested | null | undefined;
}

const nested: z.ZodType<Nested> = z.lazy(() =>
  z.object({
    subagent_name: z.string().nullish(),
    tools: z.array(tool).min(1),
    nested: nested.nullish(),
  }),
);

const approvalRequest = z.object({
  type: z.literal('tool_approval_request'),
  hint: z.string().nullish(),
  tools: z.array(tool).min(1),
  nested: nested.nullish(),
});

const askUserRequest = z.object({
  type: z.literal('ask_user_request'),
  questions: z
    .array(
      z.object({
        question: z.string(),
        choices: z.array(z.string()).nullish(),
        multiple: z.boolean().nullish(),
      }),
    )
    .min(1),
});

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

/**
 * The tool calls a person actually authorises: a pause raised by a sub-agent shows the deepest
 * `nested.tools` (kagent: display those, answer with their ids), otherwise `tools`.
 */
function visible(request: z.infer<typeof approvalRequest>): { tools: Nested['tools']; subagent?: string } {
  let tools = request.tools;
  let subagent: string | undefined;
  let level = request.nested;
  while (level !== null && level !== undefined) {
    tools = level.tools;
    if (typeof level.subagent_name === 'string' && level.subagent_name !== '') subagent = level.subagent_name;
    level = level.nested;
  }
  return subagent === undefined ? { tools } : { tools, subagent };
}

export function readStructured(payload: unknown): StructuredReading {
  const approval = approvalRequest.safeParse(payload);
  if (approval.success) {
    const { tools, subagent } = visible(approval.data);
    const views = tools.map((t): ToolCallView => {
      const args = prettyArgs(t.args);
      return { id: t.id, name: short(t.name || 'tool', 200), args: args.text, argsTruncated: args.truncated };
    });
    const hint = short(approval.data.hint ?? '');
    return subagent === undefined
      ? { kind: 'approval', hint, tools: views }
      : { kind: 'approval', hint, subagent: short(subagent, 200), tools: views };
  }
  const ask = askUserRequest.safeParse(payload);
  if (ask.success) {
    return {
      kind: 'ask-user',
      items: ask.data.questions.map((q) => ({
        question: short(q.question, 4_000),
        choices: (q.choices ?? []).slice(0, MAX_CHOICES).map((c) => short(c)),
        multiple: q.multiple ?? false,
      })),
    };
  }
  return { kind: 'unknown' };
}
