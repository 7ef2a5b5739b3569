import type { StructuredReply } from '../../../core/ports.js';
import { type HitlTool, visibleTools } from '../../../dialects/kagent-v1/index.js';
import { REASON_ACTION, REASON_BLOCK, readAnswerModal } from './modals.js';
import type { PromptState } from './state.js';
import type { PromptAction } from './token.js';

/**
 * What a press or a submitted modal does to a prompt's marks, the decisions collected until
 * every item has one. Pure over the prompt's state: the desk (desk.ts) says so in Slack
 * and sends the answer once the marks are complete.
 */

export type MarkOutcome =
  /** These items were decided by this press. */
  | { kind: 'marked'; added: number[] }
  /** What was pressed is decided already (by `by`, when known). */
  | { kind: 'decided'; by: string | undefined }
  /** A modal asks first: why the tool calls are denied, or the answers in words. */
  | { kind: 'modal'; tools: HitlTool[] }
  /** Nothing to do (a press that does not fit the prompt). */
  | { kind: 'none' };

/** Longest denial reason kept, as the modal shows it. */
const REASON_MAX = 500;

/** A press of one of the prompt's buttons, by `user` at `now`. */
export function markPress(state: PromptState, action: PromptAction, user: string, now: number): MarkOutcome {
  const tools = visibleTools(state.request);
  switch (action.kind) {
    case 'approve': {
      const mark = state.marks.get(action.index);
      if (mark !== undefined) return { kind: 'decided', by: mark.by };
      state.marks.set(action.index, { approved: true, by: user, at: now });
      return { kind: 'marked', added: [action.index] };
    }
    case 'approve-all': {
      const rest = undecided(state, tools);
      if (rest.length === 0) return { kind: 'decided', by: state.decidedBy };
      for (const i of rest) state.marks.set(i, { approved: true, by: user, at: now, allAtOnce: true });
      return { kind: 'marked', added: rest };
    }
    case 'deny':
    case 'deny-all': {
      const picked = action.kind === 'deny' ? [action.index] : undecided(state, tools);
      const decided = picked.map((i) => state.marks.get(i)).find((m) => m !== undefined);
      if (decided !== undefined || picked.length === 0)
        return { kind: 'decided', by: decided?.by ?? state.decidedBy };
      return {
        kind: 'modal',
        tools: picked.map((i) => tools[i]).filter((t): t is HitlTool => t !== undefined),
      };
    }
    case 'choice': {
      if (state.request.type !== 'ask_user_request') return { kind: 'none' };
      const mark = state.marks.get(action.question);
      if (mark !== undefined) return { kind: 'decided', by: mark.by };
      const choice = state.request.questions[action.question]?.choices[action.choice];
      if (choice === undefined) return { kind: 'none' };
      state.marks.set(action.question, { answer: [choice], by: user, at: now });
      return { kind: 'marked', added: [action.question] };
    }
    case 'answer':
      return state.request.type === 'ask_user_request' ? { kind: 'modal', tools: [] } : { kind: 'none' };
  }
}

/** A submitted deny or answer modal (its input `values`), by `user` at `now`. */
export function markSubmission(
  state: PromptState,
  action: PromptAction,
  values: Record<string, Record<string, unknown>>,
  user: string,
  now: number,
): MarkOutcome {
  if (action.kind === 'deny' || action.kind === 'deny-all') {
    const raw = (values[REASON_BLOCK]?.[REASON_ACTION] as { value?: string | null } | undefined)?.value;
    const reason = typeof raw === 'string' ? raw.trim().slice(0, REASON_MAX) : '';
    const picked = action.kind === 'deny' ? [action.index] : undecided(state, visibleTools(state.request));
    const decided = picked.map((i) => state.marks.get(i)).find((m) => m !== undefined);
    if (decided !== undefined || picked.length === 0)
      return { kind: 'decided', by: decided?.by ?? state.decidedBy };
    for (const i of picked)
      state.marks.set(i, {
        approved: false,
        by: user,
        at: now,
        ...(reason === '' ? {} : { reason }),
        ...(action.kind === 'deny-all' ? { allAtOnce: true } : {}),
      });
    return { kind: 'marked', added: picked };
  }
  if (action.kind === 'answer' && state.request.type === 'ask_user_request') {
    const read = readAnswerModal(state.request, values);
    if ('errors' in read) return { kind: 'none' };
    const filled: number[] = [];
    read.answers.forEach((answer, i) => {
      if (state.marks.has(i)) return;
      state.marks.set(i, { answer, by: user, at: now });
      filled.push(i);
    });
    return filled.length === 0 ? { kind: 'decided', by: state.decidedBy } : { kind: 'marked', added: filled };
  }
  return { kind: 'none' };
}

/** Whether every item of the prompt has a mark: the answer can be sent. */
export function complete(state: PromptState): boolean {
  const count =
    state.request.type === 'ask_user_request'
      ? state.request.questions.length
      : visibleTools(state.request).length;
  return state.marks.size >= count;
}

/** The structured reply a prompt's marks make, once every item has one. */
export function replyOf(state: PromptState): StructuredReply {
  if (state.request.type === 'tool_approval_request') {
    return {
      type: 'tool_approval',
      decisions: visibleTools(state.request).map((tool, i) => {
        const mark = state.marks.get(i);
        return {
          id: tool.id,
          approved: mark?.approved === true,
          ...(mark?.reason === undefined ? {} : { reason: mark.reason }),
        };
      }),
    };
  }
  return {
    type: 'ask_user',
    answers: state.request.questions.map((_q, i) => [...(state.marks.get(i)?.answer ?? [])]),
  };
}

function undecided(state: PromptState, tools: readonly HitlTool[]): number[] {
  return tools.map((_t, i) => i).filter((i) => !state.marks.has(i));
}
