import { z } from 'zod';
import { textLength } from '../../core/text.js';

/** What the API accepts: every body is validated here before anything else reads it. */

/** The engine's own limit for a chat message (SessionEngine maxTextLength's default). */
export const TEXT_MAX_CHARS = 40_000;
const REASON_MAX_CHARS = 2_000;

/**
 * At most `max` characters in the unit of core/text.ts (UTF-16 units), the engine's and the
 * page's: zod's own `max` counts code points, so a text it accepts could be cut by the engine.
 */
function atMost(max: number) {
  return z
    .string({ error: 'must be a string' })
    .refine((s) => textLength(s) <= max, `must be at most ${max} characters`);
}

const text = atMost(TEXT_MAX_CHARS).refine((s) => s.trim() !== '', 'must not be blank');

export const createThreadBody = z.strictObject({
  binding: z.string({ error: 'must be a string naming a Binding (namespace/name)' }).min(1).max(300),
  text,
});

export const postMessageBody = z.strictObject({ text });

const decision = z.strictObject({
  /** The tool call's approval id, as the thread shows it. */
  id: z.string().min(1).max(500),
  approved: z.boolean({ error: 'must be true or false' }),
  reason: atMost(REASON_MAX_CHARS).optional(),
});

/**
 * One body for every prompt, with exactly one of: `text` (a text question), `answers` (kagent's
 * ask_user: one list of strings per question, in order) or `decisions` (one per tool call).
 */
export const answerBody = z
  .strictObject({
    text: text.optional(),
    answers: z
      .array(z.array(atMost(TEXT_MAX_CHARS)).max(100, 'too many entries'))
      .min(1)
      .max(100)
      .optional(),
    decisions: z.array(decision).min(1).max(500).optional(),
  })
  .refine(
    (b) => [b.text, b.answers, b.decisions].filter((v) => v !== undefined).length === 1,
    'give exactly one of text, answers or decisions',
  );

export type AnswerBody = z.infer<typeof answerBody>;
export type DecisionInput = z.infer<typeof decision>;

export const threadListQuery = z.strictObject({ binding: z.string().min(1).max(300).optional() });
