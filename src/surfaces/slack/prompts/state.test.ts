import { describe, expect, it } from 'vitest';
import type { StructuredForm } from '../../../core/question.js';
import { REASON_ACTION, REASON_BLOCK } from './modals.js';
import { complete, markPress, markSubmission, openPrompt, type PromptState, replyOf } from './state.js';

const approval = {
  kind: 'approval',
  hint: '',
  calls: [0, 1, 2].map((i) => ({
    id: `conf-${i}`,
    callId: `call-${i}`,
    name: `tool_${i}`,
    args: '{}',
    argsCut: false,
    argsSha256: 'x',
  })),
} satisfies StructuredForm;
const askUser: StructuredForm = {
  kind: 'ask',
  items: [
    { question: 'Which cluster?', choices: ['prod', 'staging'], multiple: false },
    { question: 'Anything else?', choices: [], multiple: false },
  ],
};

function prompt(form: StructuredForm): PromptState {
  return openPrompt({
    sessionId: 's',
    key: { surface: 'slack', workspaceId: 'T1', channelId: 'C1', threadId: '1.0' },
    binding: 'team/agent',
    questionKey: 'q',
    taskId: 'task',
    form,
    channel: 'C1',
    ts: '2.0',
    gate: { kind: 'open', groups: ['S1'], people: [] },
  });
}

const reason = (text: string) => ({ [REASON_BLOCK]: { [REASON_ACTION]: { value: text } } });

describe('what a press does to a prompt’s marks', () => {
  it('approves one call, and tells a second press who decided it', () => {
    const state = prompt(approval);
    expect(markPress(state, { kind: 'approve', index: 1 }, 'UADA', 5)).toEqual({
      kind: 'marked',
      added: [1],
    });
    expect(state.marks.get(1)).toEqual({ approved: true, by: 'UADA', at: 5 });
    expect(markPress(state, { kind: 'approve', index: 1 }, 'UBOB', 6)).toEqual({
      kind: 'decided',
      by: 'UADA',
    });
    expect(markPress(state, { kind: 'deny', index: 1 }, 'UBOB', 6)).toEqual({ kind: 'decided', by: 'UADA' });
  });

  it('"approve the rest" decides only what is undecided, never a denial', () => {
    const state = prompt(approval);
    state.marks.set(0, { approved: false, by: 'UEVE', at: 1 });
    expect(markPress(state, { kind: 'approve-all' }, 'UADA', 5)).toEqual({ kind: 'marked', added: [1, 2] });
    expect(state.marks.get(0)?.approved).toBe(false);
    expect(state.marks.get(2)).toEqual({ approved: true, by: 'UADA', at: 5, allAtOnce: true });
    expect(complete(state)).toBe(true);
    expect(markPress(state, { kind: 'approve-all' }, 'UBOB', 6)).toEqual({ kind: 'decided', by: undefined });
  });

  it('asks why before a denial: the modal names the calls it denies', () => {
    const state = prompt(approval);
    state.marks.set(0, { approved: true, by: 'UADA', at: 1 });
    const outcome = markPress(state, { kind: 'deny-all' }, 'UBOB', 5);
    expect(outcome).toEqual({ kind: 'modal', tools: [approval.calls[1], approval.calls[2]] });
    expect(state.marks.size).toBe(1);
  });

  it('takes a denial with its reason from the modal, cut to 500 characters', () => {
    const state = prompt(approval);
    const long = `  ${'r'.repeat(600)}  `;
    expect(markSubmission(state, { kind: 'deny', index: 2 }, reason(long), 'UBOB', 7)).toEqual({
      kind: 'marked',
      added: [2],
    });
    expect(state.marks.get(2)).toEqual({ approved: false, by: 'UBOB', at: 7, reason: 'r'.repeat(500) });
    expect(markSubmission(state, { kind: 'deny-all' }, reason(''), 'UEVE', 8)).toEqual({
      kind: 'marked',
      added: [0, 1],
    });
    expect(state.marks.get(0)).toEqual({ approved: false, by: 'UEVE', at: 8, allAtOnce: true });
    expect(replyOf(state)).toEqual({
      type: 'tool_approval',
      decisions: [
        { id: 'conf-0', approved: false },
        { id: 'conf-1', approved: false },
        { id: 'conf-2', approved: false, reason: 'r'.repeat(500) },
      ],
    });
  });

  it('answers ask_user questions by a choice button or in the modal, one answer each', () => {
    const state = prompt(askUser);
    expect(markPress(state, { kind: 'choice', question: 0, choice: 1 }, 'UADA', 3)).toEqual({
      kind: 'marked',
      added: [0],
    });
    expect(markPress(state, { kind: 'choice', question: 0, choice: 9 }, 'UADA', 3)).toEqual({
      kind: 'decided',
      by: 'UADA',
    });
    expect(markPress(state, { kind: 'answer' }, 'UADA', 3)).toEqual({ kind: 'modal', tools: [] });
    expect(complete(state)).toBe(false);
    const values = { 'q0.text': { text: { value: 'prod' } }, 'q1.text': { text: { value: 'no' } } };
    expect(markSubmission(state, { kind: 'answer' }, values, 'UBOB', 4)).toEqual({
      kind: 'marked',
      added: [1],
    });
    expect(complete(state)).toBe(true);
    expect(replyOf(state)).toEqual({ type: 'ask_user', answers: [['staging'], ['no']] });
    // A modal that does not read (an empty answer) marks nothing: Slack showed its errors.
    expect(markSubmission(prompt(askUser), { kind: 'answer' }, {}, 'UBOB', 4)).toEqual({ kind: 'none' });
  });

  it('ignores presses that do not fit the prompt', () => {
    expect(markPress(prompt(approval), { kind: 'choice', question: 0, choice: 0 }, 'UADA', 1)).toEqual({
      kind: 'none',
    });
    expect(markPress(prompt(approval), { kind: 'answer' }, 'UADA', 1)).toEqual({ kind: 'none' });
    expect(markSubmission(prompt(askUser), { kind: 'approve', index: 0 }, {}, 'UADA', 1)).toEqual({
      kind: 'none',
    });
  });
});
