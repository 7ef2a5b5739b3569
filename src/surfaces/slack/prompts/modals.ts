import type { StructuredForm, ToolCallToDecide } from '../../../core/question.js';
import { visibleText } from '../../../core/text.js';
import { BUTTON_MAX, cut, NAME_MAX, plain, REASON_MAX, SECTION_MAX } from './view.js';

/**
 * The modals a prompt opens: why tool calls are denied, and ask_user's answers in a
 * person's own words; where a modal came from travels in its private metadata, and what it was
 * given is read back from its state. Like the prompt, the agent's words go into `plain_text`.
 */

export const DENY_CALLBACK = 'agentkourier.deny';
export const ANSWER_CALLBACK = 'agentkourier.answer';

export interface ModalPlace {
  team: string;
  channel: string;
  threadTs: string;
  messageTs: string;
  /** The token of the press that opened the modal (deny one, deny all, answer). */
  token: string;
}

export function encodePlace(place: ModalPlace): string {
  return JSON.stringify({
    t: place.team,
    c: place.channel,
    h: place.threadTs,
    m: place.messageTs,
    k: place.token,
  });
}

export function decodePlace(metadata: string): ModalPlace | undefined {
  try {
    const v = JSON.parse(metadata) as Record<string, unknown>;
    const fields = [v.t, v.c, v.h, v.m, v.k];
    if (!fields.every((f) => typeof f === 'string' && f !== '' && f.length < 200)) return undefined;
    return {
      team: v.t as string,
      channel: v.c as string,
      threadTs: v.h as string,
      messageTs: v.m as string,
      token: v.k as string,
    };
  } catch {
    return undefined;
  }
}

export const REASON_BLOCK = 'reason';
export const REASON_ACTION = 'reason';

/** The modal that asks why a tool call (or every undecided one) is denied. */
export function denyModal(tools: readonly ToolCallToDecide[], place: ModalPlace): Record<string, unknown> {
  const names = tools.map((t) => cut(visibleText(t.name), NAME_MAX)).join(', ');
  const what = tools.length === 1 ? `Deny ${names}?` : `Deny ${tools.length} tool calls? ${names}`;
  return {
    type: 'modal',
    callback_id: DENY_CALLBACK,
    private_metadata: encodePlace(place),
    title: plain(tools.length === 1 ? 'Deny a tool call' : 'Deny tool calls'),
    submit: plain('Deny'),
    close: plain('Cancel'),
    blocks: [
      { type: 'section', text: plain(cut(what, SECTION_MAX)) },
      {
        type: 'input',
        block_id: REASON_BLOCK,
        optional: true,
        label: plain('Reason (the agent reads it)'),
        element: {
          type: 'plain_text_input',
          action_id: REASON_ACTION,
          multiline: true,
          max_length: REASON_MAX,
        },
      },
    ],
  };
}

/** The modal that answers ask_user questions: a pick of the choices and/or words, per question. */
export function answerModal(
  form: StructuredForm & { kind: 'ask' },
  place: ModalPlace,
): Record<string, unknown> {
  const blocks: Array<Record<string, unknown>> = [];
  form.items.forEach((q, i) => {
    blocks.push({ type: 'section', text: plain(cut(visibleText(q.question), 1_500)) });
    if (q.choices.length > 0) {
      const options = q.choices
        .slice(0, 100)
        .map((c, j) => ({ text: plain(cut(visibleText(c), BUTTON_MAX)), value: String(j) }));
      blocks.push({
        type: 'input',
        block_id: `q${i}.pick`,
        optional: true,
        label: plain(q.multiple ? 'Pick any' : 'Pick one'),
        element: {
          type: q.multiple ? 'multi_static_select' : 'static_select',
          action_id: 'pick',
          options,
        },
      });
    }
    blocks.push({
      type: 'input',
      block_id: `q${i}.text`,
      optional: q.choices.length > 0,
      label: plain(q.choices.length > 0 ? 'Or answer in your own words' : 'Your answer'),
      element: { type: 'plain_text_input', action_id: 'text', multiline: true, max_length: 2_000 },
    });
  });
  return {
    type: 'modal',
    callback_id: ANSWER_CALLBACK,
    private_metadata: encodePlace(place),
    title: plain('Answer the agent'),
    submit: plain('Send'),
    close: plain('Cancel'),
    blocks,
  };
}

/**
 * The answers a submitted answer modal holds, one list per question, or the errors to show in
 * it (by block id).
 */
export function readAnswerModal(
  form: StructuredForm & { kind: 'ask' },
  values: Record<string, Record<string, unknown>>,
): { answers: string[][] } | { errors: Record<string, string> } {
  const answers: string[][] = [];
  const errors: Record<string, string> = {};
  form.items.forEach((q, i) => {
    const picked: string[] = [];
    const pick = values[`q${i}.pick`]?.pick as
      | { selected_option?: { value?: string } | null; selected_options?: Array<{ value?: string }> }
      | undefined;
    const chosen = [
      ...(pick?.selected_option ? [pick.selected_option] : []),
      ...(pick?.selected_options ?? []),
    ];
    for (const option of chosen) {
      const choice = q.choices[Number(option.value)];
      if (choice !== undefined && /^\d+$/.test(option.value ?? '')) picked.push(choice);
    }
    const typed = ((values[`q${i}.text`]?.text as { value?: string | null } | undefined)?.value ?? '').trim();
    if (typed !== '') picked.push(typed);
    if (picked.length === 0) errors[`q${i}.text`] = 'Please answer this question.';
    else if (!q.multiple && picked.length > 1)
      errors[`q${i}.text`] = 'This question takes one answer: pick one or type one.';
    answers.push(picked);
  });
  return Object.keys(errors).length > 0 ? { errors } : { answers };
}
