import type { StructuredForm, ToolCallToDecide } from '../../../core/question.js';
import { cutWithMark, visibleText } from '../../../core/text.js';
import { escapeSlack } from '../answer/mrkdwn.js';
import type { RenderedMessage } from '../answer/render.js';
import { GROUP_ID, type PromptAction } from './payloads.js';

/** A prompt's Block Kit, and what it tells people in the broker's own words. */

/**
 * Structured questions as Block Kit, drawn from their neutral form (core/question.ts):
 * a tool approval shows each tool call
 * that would run, with its arguments, and Approve / Deny per call plus Approve all / Deny all;
 * an ask_user question shows its choices as buttons and an "Answer…" button for a modal
 * (modals.ts).
 *
 * Everything the agent wrote (tool names, arguments, questions, choices, hints) goes into
 * `plain_text` objects with `emoji: false`, so Slack shows it verbatim: no mrkdwn, no mention,
 * no link, no `:emoji:` can come out of it. Only our own words are mrkdwn, and a person's
 * denial reason is escaped. Slack's limits (50 blocks, 3,000 characters of section text, 75 of
 * button text, about 12,000 of text in a message) are met by cutting each tool call's text to
 * its share and, for long lists, dropping the per-call buttons for the all-at-once ones.
 */

export const ACTION_PREFIX = 'agentkourier.prompt.';

/** Who may press, as the prompt tells it. */
export type Gate =
  | { kind: 'open'; groups: readonly string[]; people: readonly string[] }
  /** Approvals enabled, no approverGroups and no approvers: nobody may approve in Slack (fail closed). */
  | { kind: 'no-groups' }
  /** The Binding does not enable tool approvals. */
  | { kind: 'disabled' }
  /** The Binding is gone, or approvals are not wired on this process. */
  | { kind: 'unavailable' };

export interface Mark {
  /** approved / denied for a tool call; the answer for a question. */
  approved?: boolean;
  answer?: readonly string[];
  reason?: string;
  /** Slack user id of who decided. */
  by: string;
  at: number;
}

export type PromptStatus =
  | { kind: 'open' }
  | { kind: 'decided' }
  /** No longer waiting (timed out, canceled, answered elsewhere): our words. */
  | { kind: 'closed'; text: string };

export interface PromptModel {
  form: StructuredForm;
  marks: ReadonlyMap<number, Mark>;
  status: PromptStatus;
  gate: Gate;
  token(action: PromptAction): string;
}

const MAX_BLOCKS = 50;
/** Text budget for the agent's data in one message, under Slack's ~12,000 cumulative. */
const TOOLS_TEXT_BUDGET = 8_000;
export const SECTION_MAX = 2_900;
export const BUTTON_MAX = 75;
export const NAME_MAX = 80;
const HINT_MAX = 300;
export const REASON_MAX = 500;
const MAX_CHOICE_BUTTONS = 24;

/** Cuts text to at most `max` characters, with an ellipsis when cut. */
export function cut(text: string, max: number): string {
  return cutWithMark(text, max);
}

/**
 * One tool call as plain text: its name on the first line, its arguments below, the whole cut
 * to `maxChars`; the name is kept whole when it fits, so long arguments never hide which tool
 * would run.
 */
function describeCall(call: ToolCallToDecide, maxChars: number): string {
  const name = cut(visibleText(call.name), Math.max(1, Math.min(maxChars, 200)));
  const room = maxChars - name.length - 1;
  if (room <= 0) return cut(name, maxChars);
  return `${name}\n${cut(visibleText(call.args), room)}`;
}

export function plain(text: string): { type: 'plain_text'; text: string; emoji: false } {
  return { type: 'plain_text', text: text === '' ? ' ' : text, emoji: false };
}

function mrkdwn(text: string): { type: 'mrkdwn'; text: string } {
  return { type: 'mrkdwn', text };
}

function button(
  actionId: string,
  text: string,
  value: string,
  style?: 'primary' | 'danger',
): Record<string, unknown> {
  return {
    type: 'button',
    action_id: `${ACTION_PREFIX}${actionId}`,
    text: plain(cut(text, BUTTON_MAX)),
    value,
    ...(style === undefined ? {} : { style }),
  };
}

function userRef(id: string): string {
  return /^[UW][A-Z0-9]{2,30}$/.test(id) ? `<@${id}>` : escapeSlack(id);
}

function when(at: number): string {
  const seconds = Math.floor(at / 1000);
  const fallback = new Date(at).toISOString().slice(11, 16);
  return `<!date^${seconds}^{time}|${fallback} UTC>`;
}

function who(form: StructuredForm): string {
  return form.subagent ? `The sub-agent ${cut(visibleText(form.subagent), NAME_MAX)}` : 'The agent';
}

function gateLine(gate: Gate, approval: boolean): string | undefined {
  switch (gate.kind) {
    case 'open':
      return approval ? `Only ${approverNames(gate)} can approve or deny.` : undefined;
    case 'no-groups':
      return ':lock: No approvers are set for this agent, so nobody can approve tool calls in Slack. The request cannot be answered here.';
    case 'disabled':
      return ':lock: Tool approvals are not enabled for this agent, so these tool calls cannot be approved in Slack.';
    case 'unavailable':
      return ':lock: This request cannot be answered here right now.';
  }
}

const MARK_ID = /^mark\.(\d{1,3})\.([ad])\.([UW][A-Z0-9]{2,30})\.(\d{1,13})$/;
const REASON_PREFIX = 'Reason: ';

function markLine(mark: Mark, noun: 'tool' | 'question', index: number): Record<string, unknown> {
  const elements: Array<Record<string, unknown>> = [];
  let blockId: string | undefined;
  if (noun === 'tool') {
    // The block id records the decision, so a press that reaches a process which did not see it
    // (a restart, another replica) reads it back from the message Slack sends with the press.
    if (/^[UW][A-Z0-9]{2,30}$/.test(mark.by))
      blockId = `mark.${index}.${mark.approved === true ? 'a' : 'd'}.${mark.by}.${mark.at}`;
    const head = mark.approved === true ? ':white_check_mark: Approved' : ':no_entry_sign: Denied';
    elements.push(mrkdwn(`${head} by ${userRef(mark.by)} at ${when(mark.at)}`));
    const reason = (mark.reason ?? '').trim();
    if (mark.approved !== true && reason !== '')
      elements.push(plain(`${REASON_PREFIX}${cut(visibleText(reason), REASON_MAX)}`));
  } else {
    elements.push(mrkdwn(`:speech_balloon: Answered by ${userRef(mark.by)} at ${when(mark.at)}:`));
    const said = (mark.answer ?? []).join(', ');
    elements.push(plain(cut(visibleText(said === '' ? '(no answer)' : said), REASON_MAX)));
  }
  return { type: 'context', ...(blockId === undefined ? {} : { block_id: blockId }), elements };
}

/**
 * The tool-call decisions a prompt message shows, read back from its blocks (as Slack sends them
 * with a press, in a payload Slack signs): by tool index.
 */
export function readMarks(blocks: readonly unknown[]): Map<number, Mark> {
  const marks = new Map<number, Mark>();
  for (const block of blocks) {
    const b = block as { type?: unknown; block_id?: unknown; elements?: unknown };
    if (b.type !== 'context' || typeof b.block_id !== 'string') continue;
    const m = MARK_ID.exec(b.block_id);
    if (m === null) continue;
    const mark: Mark = { approved: m[2] === 'a', by: m[3] ?? '', at: Number(m[4]) };
    const reason = Array.isArray(b.elements)
      ? (b.elements as Array<{ type?: unknown; text?: unknown }>).find(
          (e) => e.type === 'plain_text' && typeof e.text === 'string' && e.text.startsWith(REASON_PREFIX),
        )
      : undefined;
    if (mark.approved === false && typeof reason?.text === 'string')
      mark.reason = reason.text.slice(REASON_PREFIX.length);
    marks.set(Number(m[1]), mark);
  }
  return marks;
}

function statusLine(status: PromptStatus): Record<string, unknown> | undefined {
  if (status.kind === 'decided')
    return { type: 'context', elements: [mrkdwn(':lock: Decided; sent to the agent.')] };
  if (status.kind === 'closed')
    return { type: 'context', elements: [mrkdwn(`:lock: ${escapeSlack(status.text)}`)] };
  return undefined;
}

/** How a tool approval fits in one message. */
export function approvalLayout(count: number): 'per-tool' | 'all-only' | 'too-many' {
  if (4 + 2 * count <= MAX_BLOCKS) return 'per-tool';
  if (4 + count <= MAX_BLOCKS) return 'all-only';
  return 'too-many';
}

/** The prompt for a tool approval. */
export function approvalMessage(model: PromptModel & { form: { kind: 'approval' } }): RenderedMessage {
  const { form, marks, status, gate } = model;
  const tools = form.calls;
  const layout = approvalLayout(tools.length);
  const open = status.kind === 'open' && gate.kind === 'open' && layout !== 'too-many';
  const calls = tools.length === 1 ? 'a tool call' : `${tools.length} tool calls`;
  const intro = `${who(form)} asks for approval to run ${calls}.`;
  const blocks: Array<Record<string, unknown>> = [{ type: 'section', text: plain(intro) }];
  const hint = form.hint.trim();
  const context: Array<Record<string, unknown>> = [];
  if (hint !== '') context.push(plain(cut(visibleText(hint), HINT_MAX)));
  const gateText =
    layout === 'too-many'
      ? `:lock: This request lists ${tools.length} tool calls, more than one Slack message can show, so it cannot be answered here.`
      : status.kind === 'open'
        ? gateLine(gate, true)
        : undefined;
  if (gateText !== undefined) context.push(mrkdwn(gateText));
  if (context.length > 0) blocks.push({ type: 'context', elements: context });

  if (layout === 'too-many') {
    const names = tools.map((t) => cut(visibleText(t.name), NAME_MAX)).join(', ');
    blocks.push({ type: 'section', text: plain(cut(names, SECTION_MAX)) });
  } else {
    const share = Math.max(60, Math.min(SECTION_MAX, Math.floor(TOOLS_TEXT_BUDGET / tools.length)));
    tools.forEach((tool, i) => {
      const label = `${i + 1}. `;
      blocks.push({
        type: 'section',
        text: plain(`${label}${describeCall(tool, share - label.length)}`),
      });
      if (layout === 'all-only') return;
      const mark = marks.get(i);
      if (mark !== undefined) blocks.push(markLine(mark, 'tool', i));
      else if (open)
        blocks.push({
          type: 'actions',
          block_id: `tool.${i}`,
          elements: [
            button('approve', 'Approve', model.token({ kind: 'approve', index: i }), 'primary'),
            button('deny', 'Deny…', model.token({ kind: 'deny', index: i }), 'danger'),
          ],
        });
    });
    if (layout === 'all-only') {
      const decided = [...marks.values()];
      if (decided.length > 0) blocks.push(summaryLine(tools, marks));
    }
  }
  const undecided = tools.filter((_t, i) => !marks.has(i)).length;
  if (open && undecided > 0 && (tools.length > 1 || layout === 'all-only')) {
    const rest = undecided < tools.length;
    blocks.push({
      type: 'actions',
      block_id: 'all',
      elements: [
        button(
          'approve-all',
          rest ? 'Approve the rest' : 'Approve all',
          model.token({ kind: 'approve-all' }),
          'primary',
        ),
        button(
          'deny-all',
          rest ? 'Deny the rest…' : 'Deny all…',
          model.token({ kind: 'deny-all' }),
          'danger',
        ),
      ],
    });
  }
  const last = statusLine(status);
  if (last !== undefined) blocks.push(last);
  const names = tools.map((t) => cut(visibleText(t.name), NAME_MAX)).join(', ');
  const text = escapeSlack(cut(`${who(form)} asks for approval to run: ${names}`, 500));
  return { text, blocks };
}

function summaryLine(tools: ToolCallToDecide[], marks: ReadonlyMap<number, Mark>): Record<string, unknown> {
  const lines = tools.map((t, i) => {
    const mark = marks.get(i);
    const state = mark === undefined ? 'undecided' : mark.approved === true ? 'approved' : 'denied';
    return `${i + 1}. ${cut(visibleText(t.name), 40)}: ${state}`;
  });
  return { type: 'section', text: plain(cut(lines.join('\n'), SECTION_MAX)) };
}

/** Whether an ask_user question is answered with one press of a choice. */
export function choiceButtons(form: StructuredForm & { kind: 'ask' }, index: number): boolean {
  const q = form.items[index];
  return q !== undefined && !q.multiple && q.choices.length > 0 && q.choices.length <= MAX_CHOICE_BUTTONS;
}

/** The prompt for kagent's ask_user questions. Anyone in the thread may answer (not an approval). */
export function askUserMessage(model: PromptModel & { form: { kind: 'ask' } }): RenderedMessage {
  const { form, marks, status } = model;
  const open = status.kind === 'open' && model.gate.kind !== 'unavailable';
  const blocks: Array<Record<string, unknown>> = [{ type: 'section', text: plain(`${who(form)} asks:`) }];
  const count = form.items.length;
  // Header, status and the answer button, and per question its text and its buttons or mark.
  const perQuestion = 3 + 2 * count <= MAX_BLOCKS;
  const compact = !perQuestion && 3 + count <= MAX_BLOCKS;
  const share = Math.max(60, Math.min(SECTION_MAX, Math.floor(TOOLS_TEXT_BUDGET / Math.max(1, count))));
  if (!perQuestion && !compact) {
    blocks.push({
      type: 'context',
      elements: [mrkdwn(`:lock: The agent asked ${count} questions, more than one Slack message can show.`)],
    });
  } else {
    form.items.forEach((q, i) => {
      const prefix = count > 1 ? `${i + 1}. ` : '';
      const choices =
        q.choices.length > 0 && !choiceButtons(form, i) ? `\nChoices: ${q.choices.join(' · ')}` : '';
      blocks.push({
        type: 'section',
        text: plain(cut(`${prefix}${visibleText(q.question)}${visibleText(choices)}`, share)),
      });
      if (compact) return;
      const mark = marks.get(i);
      if (mark !== undefined) blocks.push(markLine(mark, 'question', i));
      else if (open && choiceButtons(form, i))
        blocks.push({
          type: 'actions',
          block_id: `question.${i}`,
          elements: q.choices.map((choice, j) =>
            button(
              `choice.${j}`,
              visibleText(choice),
              model.token({ kind: 'choice', question: i, choice: j }),
            ),
          ),
        });
    });
  }
  const answerable = perQuestion || (compact && count <= 33);
  if (open && answerable && marks.size < count) {
    blocks.push({
      type: 'actions',
      block_id: 'answer',
      elements: [button('answer', 'Answer in words…', model.token({ kind: 'answer' }))],
    });
  }
  const last = statusLine(status);
  if (last !== undefined) blocks.push(last);
  const first = form.items[0]?.question ?? '';
  const text = escapeSlack(cut(`${who(form)} asks: ${visibleText(first)}`, 500));
  return { text, blocks };
}

/** The prompt of any structured question. */
export function promptMessage(model: PromptModel): RenderedMessage {
  const { form } = model;
  return form.kind === 'ask' ? askUserMessage({ ...model, form }) : approvalMessage({ ...model, form });
}

/** What a prompt tells people, in the broker's own words (never an agent's). */
export const WORDS = {
  stale: 'This prompt is no longer waiting for an answer.',
  foreign:
    'That button is not one of this prompt’s, so it changed nothing. Use the buttons on the prompt itself.',
  alreadyDecided: (by: string | undefined) =>
    by === undefined ? 'This was already decided.' : `This was already decided by ${mentionOrSomeone(by)}.`,
  notApprover: (gate: Extract<Gate, { kind: 'open' }>) =>
    `Only ${approverNames(gate)} can approve or deny these tool calls. Your press changed nothing.`,
  lookupFailed:
    'Agent Kourier could not check who may approve just now, so your press was not taken. Please try again in a moment.',
  noGroups:
    'No approvers are set for this agent, so nobody can approve tool calls in Slack. Your press changed nothing.',
  disabled: 'Tool approvals are not enabled for this agent. Your press changed nothing.',
  failed: 'Agent Kourier could not record your answer just now. Please press again in a moment.',
  timedOut: 'Not answered in time; the agent’s task was canceled.',
  rejected: 'The agent did not take the answer; its task was canceled.',
  superseded: 'No longer waiting: the agent asked something else.',
  gone: 'No longer waiting for an answer.',
  stopping: 'The agent’s task is being stopped, so your answer was not sent.',
  stopped: 'Not answered: the agent’s task was stopped.',
};

/** Who may approve, in the broker's words: the people named, then the groups' members. */
function approverNames(gate: Extract<Gate, { kind: 'open' }>): string {
  const people = gate.people.filter((p) => PERSON_ID.test(p)).map((p) => `<@${p}>`);
  const groups = gate.groups.filter((g) => GROUP_ID.test(g)).map((g) => `<!subteam^${g}>`);
  const members = groups.length === 0 ? [] : [`members of ${groups.join(', ')}`];
  return [...people, ...members].join(' and ');
}

const PERSON_ID = /^[UW][A-Z0-9]{2,30}$/;

/** A person named in the broker's words: a mention, or 'someone' for an id that is not one. */
function mentionOrSomeone(id: string): string {
  return PERSON_ID.test(id) ? `<@${id}>` : 'someone';
}
