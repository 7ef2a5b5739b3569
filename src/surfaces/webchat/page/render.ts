/// <reference lib="dom" />
import type { ApprovalView, DecisionView, MessageView, QuestionView, StepView } from '../view.js';
import { button, el } from './dom.js';
import { MarkdownText } from './markdown-dom.js';
import { readableJson, showNewlines } from './readable.js';
import { fullTime, shortTime } from './time.js';

/**
 * One thread message as a list item. Every text is set as text (the agent's Markdown through
 * markdown.ts, which makes elements, never HTML); prompts get their controls (choices, the
 * ask_user form, Approve/Deny per tool call) while they are open.
 */

export type AnswerBody = { text: string } | { answers: string[][] } | { decisions: DecisionView[] };

export interface Actions {
  /** Sends an answer to a prompt; rejects with a message to show when refused. */
  answer(messageId: string, body: AnswerBody): Promise<void>;
}

export interface Rendered {
  item: HTMLLIElement;
  /** Adds text at the answer's end while it streams (O(text); the Markdown re-renders throttled). */
  grow(text: string): void;
}

const WHO: Record<MessageView['author'], string> = { person: 'You', agent: 'Agent', broker: 'Agent Kourier' };

/** The agent's words are Markdown; a person's message and the broker's notices are shown as typed. */
const MARKDOWN_KINDS = new Set<MessageView['kind']>(['answer', 'question', 'approval']);

export function renderMessage(m: MessageView, actions: Actions): Rendered {
  const classes = ['msg', m.author, m.kind];
  if (m.kind === 'answer' && m.final !== true) classes.push('streaming');
  if (m.failed === true) classes.push('failed');
  let who =
    m.kind === 'tool-step' ? (m.step?.kind === 'result' ? 'Tool result' : 'Tool call') : WHO[m.author];
  if (m.failed === true) who = `${who} · not sent`;
  const item = el('li', { className: classes.join(' '), attrs: { 'data-id': m.id, 'data-kind': m.kind } }, [
    el('div', { className: 'who' }, [who, ' · ', timeOf(m.createdAt)]),
  ]);
  let grow: (text: string) => void = () => undefined;
  if (m.kind === 'tool-step' && m.step !== undefined) {
    item.append(stepPart(m.step));
  } else if (MARKDOWN_KINDS.has(m.kind)) {
    const body = new MarkdownText(m.text, 'text md');
    item.append(body.element);
    grow = (text) => body.append(text);
  } else {
    const text = document.createTextNode(m.text);
    item.append(el('div', { className: 'text' }, [text]));
    grow = (more) => text.appendData(more);
  }
  if (m.link !== undefined && /^https?:\/\//.test(m.link.url))
    item.append(
      el('a', {
        className: 'link-button',
        text: m.link.label,
        attrs: { href: m.link.url, target: '_blank', rel: 'noopener noreferrer' },
      }),
    );
  if (m.question !== undefined) item.append(questionPart(m.id, m.question, actions));
  if (m.approval !== undefined) item.append(approvalPart(m.id, m.approval, actions));
  return { item, grow };
}

export function timeOf(iso: string): HTMLTimeElement {
  return el('time', { text: shortTime(iso), attrs: { datetime: iso, title: fullTime(iso) } });
}

/** A tool call or result: the tool's name, and its arguments (or result) readable. */
function stepPart(step: StepView): HTMLElement {
  return el('div', { className: 'step', attrs: { 'data-step': step.kind } }, [
    el('div', { className: 'step-head' }, [
      el('code', { className: 'name', text: step.toolName }),
      el('span', { className: 'state', text: step.kind === 'call' ? ' called with' : ' returned' }),
    ]),
    el('pre', { className: 'args', text: readableJson(step.summary) }),
  ]);
}

function closedNote(status: QuestionView['status']): HTMLElement | undefined {
  if (status === 'expired') return el('div', { className: 'state', text: 'This question expired.' });
  if (status === 'closed')
    return el('div', { className: 'state', text: 'The agent no longer waits for this.' });
  return undefined;
}

/** Runs a send, disabling the prompt's controls while it is in flight. */
function sending(part: HTMLElement, send: () => Promise<void>): void {
  const controls = part.querySelectorAll<HTMLButtonElement | HTMLInputElement>('button, input');
  for (const c of controls) c.disabled = true;
  send().catch(() => {
    for (const c of controls) c.disabled = false;
  });
}

function questionPart(id: string, q: QuestionView, actions: Actions): HTMLElement {
  const part = el('div', { className: 'prompt' });
  if (q.status !== 'open') {
    const note = closedNote(q.status);
    if (note !== undefined) part.append(note);
    if (q.answer !== undefined) part.append(el('div', { className: 'state', text: `Answered: ${q.answer}` }));
    return part;
  }
  if (q.mode === 'text') {
    if (q.choices.length > 0) {
      part.append(
        el(
          'div',
          { className: 'choices' },
          q.choices.map((choice) =>
            button(choice, () => sending(part, () => actions.answer(id, { text: choice })), 'secondary'),
          ),
        ),
      );
    }
    part.append(el('div', { className: 'state', text: 'Reply below to answer.' }));
    return part;
  }
  if (q.items.length === 0) {
    part.append(
      el('div', { className: 'state', text: 'This question cannot be answered from the web chat.' }),
    );
    return part;
  }
  const collect: Array<() => string[]> = [];
  q.items.forEach((item, i) => {
    const name = `${id}-q${i}`;
    const boxes = item.choices.map((choice) => {
      const input = el('input', {
        attrs: { type: item.multiple ? 'checkbox' : 'radio', name, value: choice },
      });
      return { input, label: el('label', {}, [input, ` ${choice}`]) };
    });
    const free = el('input', {
      attrs: { type: 'text', placeholder: item.choices.length > 0 ? 'Or type an answer' : 'Your answer' },
    });
    collect.push(() => {
      const picked = boxes.filter((b) => b.input.checked).map((b) => b.input.value);
      const typed = free.value.trim();
      if (typed === '') return picked;
      return item.multiple ? [...picked, typed] : [typed];
    });
    part.append(
      el('fieldset', {}, [
        el('legend', { text: item.question }),
        el(
          'div',
          { className: 'choices' },
          boxes.map((b) => b.label),
        ),
        free,
      ]),
    );
  });
  part.append(
    button('Send answer', () =>
      sending(part, () => actions.answer(id, { answers: collect.map((c) => c()) })),
    ),
  );
  return part;
}

function approvalPart(id: string, a: ApprovalView, actions: Actions): HTMLElement {
  const part = el('div', { className: 'prompt' });
  if (a.subagent !== undefined)
    part.append(el('div', { className: 'state', text: `Asked by sub-agent ${a.subagent}` }));
  const decided = new Map((a.decisions ?? []).map((d) => [d.id, d]));
  const choices = new Map<string, { approved: boolean; reason: HTMLInputElement }>();
  const send = button('Send decisions', () =>
    sending(part, () =>
      actions.answer(id, {
        decisions: a.tools.map((tool) => {
          const choice = choices.get(tool.id);
          const reason = choice?.reason.value.trim() ?? '';
          return choice?.approved !== false || reason === ''
            ? { id: tool.id, approved: choice?.approved ?? false }
            : { id: tool.id, approved: false, reason };
        }),
      }),
    ),
  );
  send.disabled = true;
  for (const tool of a.tools) {
    const box = el('div', { className: 'tool', attrs: { 'data-tool': tool.name } }, [
      el('div', { className: 'name', text: tool.name }),
      el('pre', { text: showNewlines(tool.args) }),
    ]);
    if (tool.argsTruncated)
      box.append(el('div', { className: 'state', text: '(arguments cut for display)' }));
    const decision = decided.get(tool.id);
    if (a.status !== 'open') {
      box.append(decisionNote(decision));
    } else if (a.refusal === undefined) {
      const reason = el('input', { attrs: { type: 'text', placeholder: 'Reason for denying (optional)' } });
      reason.hidden = true;
      const approve = button('Approve', () => pick(true), 'secondary');
      const deny = button('Deny', () => pick(false), 'secondary');
      const pick = (approved: boolean): void => {
        choices.set(tool.id, { approved, reason });
        approve.setAttribute('aria-pressed', String(approved));
        deny.setAttribute('aria-pressed', String(!approved));
        approve.className = approved ? '' : 'secondary';
        deny.className = approved ? 'secondary' : '';
        reason.hidden = approved;
        send.disabled = choices.size < a.tools.length;
      };
      box.append(el('div', { className: 'decide' }, [approve, deny, reason]));
    }
    part.append(box);
  }
  if (a.status === 'open' && a.refusal !== undefined)
    part.append(el('div', { className: 'state', text: a.refusal }));
  else if (a.status === 'open') part.append(send);
  else {
    const note = closedNote(a.status);
    if (note !== undefined) part.append(note);
  }
  return part;
}

function decisionNote(decision: DecisionView | undefined): HTMLElement {
  if (decision === undefined) return el('div', { className: 'state', text: 'Not decided here.' });
  if (decision.approved) return el('div', { className: 'state approved', text: 'Approved' });
  const text = decision.reason === undefined ? 'Denied' : `Denied: ${decision.reason}`;
  return el('div', { className: 'state denied', text });
}
