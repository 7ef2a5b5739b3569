import type { StructuredForm, StructuredReply, ToolCallToDecide } from '../../../core/question.js';
import type { SessionKey, SessionRecord } from '../../../core/store.js';
import { SURFACE } from '../inbound/keys.js';
import { type ModalPlace, REASON_ACTION, REASON_BLOCK, readAnswerModal } from './modals.js';
import type { Place, PromptAction, PromptTokens } from './payloads.js';
import { approvalLayout, choiceButtons, type Gate, type Mark, type PromptStatus, readMarks } from './view.js';

/** What this process knows of each prompt, and what a press does to its marks. */

/**
 * What this process knows of the prompts it shows or was pressed on: per prompt, the decisions
 * collected so far (marks), whether it still waits, and the queue its presses run in. The
 * question itself is the engine's, durable in the store; this is only what a press adds until
 * the answer is sent, and it is also on the prompt message (readMarks), so a process that did
 * not see it adopts it from there.
 */

/** A decision on one item of a prompt; `allAtOnce`: taken with Approve all / Deny all. */
export type PromptMark = Mark & { allAtOnce?: boolean };

export interface PromptState {
  sessionId: string;
  key: SessionKey;
  binding: string;
  questionKey: string;
  taskId: string;
  /** What the prompt asks (the question's neutral form). */
  form: StructuredForm;
  channel: string;
  /** The prompt message; '' until it is posted. */
  ts: string;
  marks: Map<number, PromptMark>;
  status: PromptStatus;
  /** Who sent the answer (or, seen as a duplicate, who had). */
  decidedBy?: string;
  gate: Gate;
  queue: Promise<void>;
}

/** A new prompt's state: nothing decided, open. */
export function openPrompt(init: Omit<PromptState, 'marks' | 'status' | 'queue' | 'decidedBy'>): PromptState {
  return { ...init, marks: new Map(), status: { kind: 'open' }, queue: Promise.resolve() };
}

const MAX_PROMPTS = 10_000;

/** The prompts by session and question, and each session's latest; bounded. */
export class PromptBook {
  /** By `${sessionId}\n${questionKey}`. */
  readonly #prompts = new Map<string, PromptState>();
  /** The latest prompt of each session. */
  readonly #latest = new Map<string, string>();

  get(sessionId: string, questionKey: string): PromptState | undefined {
    return this.#prompts.get(idOf(sessionId, questionKey));
  }

  /** The latest prompt shown (or pressed) in a session. */
  latest(sessionId: string): PromptState | undefined {
    return this.#prompts.get(this.#latest.get(sessionId) ?? '');
  }

  remember(state: PromptState): void {
    const id = idOf(state.sessionId, state.questionKey);
    this.#prompts.delete(id);
    this.#prompts.set(id, state);
    this.#latest.set(state.sessionId, id);
    if (this.#prompts.size <= MAX_PROMPTS) return;
    for (const [k, s] of this.#prompts) {
      if (this.#prompts.size <= MAX_PROMPTS) break;
      if (s.status.kind !== 'open' || this.#prompts.size > MAX_PROMPTS * 1.1) {
        this.#prompts.delete(k);
        if (this.#latest.get(s.sessionId) === k) this.#latest.delete(s.sessionId);
      }
    }
  }
}

function idOf(sessionId: string, questionKey: string): string {
  return `${sessionId}\n${questionKey}`;
}

/**
 * The prompt a press belongs to, and what the press does: the thread's session as the store
 * holds it now, its pending question, and the action whose token the press carries. A prompt
 * this process did not show (another replica's, or before a restart) starts here with no marks:
 * what was collected there is not here, but on the message (adoptShownMarks).
 */
/**
 * What a press found: its prompt and what it does; or why it is refused — `stale`: the
 * message is no prompt that waits (its buttons may go); `foreign`: it is, but the button is not
 * one of its own (nothing changes).
 */
export type PressedPrompt =
  | { state: PromptState; action: PromptAction; refused?: undefined }
  | { refused: 'stale' | 'foreign' };

export function promptOfPress(
  book: PromptBook,
  session: SessionRecord | undefined,
  place: Place,
  token: string,
  tokens: PromptTokens,
  gateOf: (binding: string, form: StructuredForm) => Gate,
): PressedPrompt {
  const question = session?.question;
  if (session === undefined || question === null || question === undefined || question.kind !== 'structured')
    return { refused: 'stale' };
  const form = question.form;
  if (form === undefined) return { refused: 'stale' };
  // A prompt is the message its ref names; before the ref is saved, any message of ours.
  if (question.promptRef !== null && question.promptRef !== `${place.channel}|${place.messageTs}`)
    return { refused: 'stale' };
  // The message is the prompt that waits, but the button is not one of its own (a token of
  // another prompt, or forged): refused, and the prompt stays as it is for its own buttons.
  const action = tokens.find(session.id, question.questionKey, candidates(form), token);
  if (action === undefined) return { refused: 'foreign' };
  let state = book.get(session.id, question.questionKey);
  if (state === undefined || (state.ts !== '' && state.ts !== place.messageTs)) {
    state = openPrompt({
      sessionId: session.id,
      key: session.key,
      binding: session.binding,
      questionKey: question.questionKey,
      taskId: question.taskId,
      form,
      channel: place.channel,
      ts: place.messageTs,
      gate: gateOf(session.binding, form),
    });
    book.remember(state);
  }
  return { state, action };
}

/** Runs the presses of one prompt one at a time. */
export function inTurn(state: PromptState, task: () => Promise<void>): Promise<void> {
  const next = state.queue.then(task, task);
  state.queue = next.catch(() => undefined);
  return next;
}

/**
 * Decisions this process did not take (before a restart, on another replica) are on the prompt
 * message Slack sends with a press: they count, so "Approve the rest" never overrides a denial
 * the message shows.
 */
export function adoptShownMarks(state: PromptState, shown: readonly unknown[]): void {
  if (state.form.kind !== 'approval' || state.status.kind !== 'open') return;
  const count = state.form.calls.length;
  for (const [i, mark] of readMarks(shown)) if (i < count && !state.marks.has(i)) state.marks.set(i, mark);
}

/** Every action a question's buttons and modals can carry. */
export function candidates(form: StructuredForm): PromptAction[] {
  if (form.kind === 'ask') {
    const out: PromptAction[] = [{ kind: 'answer' }];
    form.items.forEach((q, i) => {
      if (!choiceButtons(form, i)) return;
      for (let j = 0; j < q.choices.length; j++) out.push({ kind: 'choice', question: i, choice: j });
    });
    return out;
  }
  const count = form.calls.length;
  const out: PromptAction[] = [{ kind: 'approve-all' }, { kind: 'deny-all' }];
  if (approvalLayout(count) === 'per-tool')
    for (let i = 0; i < count; i++) out.push({ kind: 'approve', index: i }, { kind: 'deny', index: i });
  return approvalLayout(count) === 'too-many' ? [] : out;
}

/** The tool calls a prompt decides on (none for questions). */
export function callsOf(form: StructuredForm): ToolCallToDecide[] {
  return form.kind === 'approval' ? form.calls : [];
}

/** The session key of a Slack thread. */
export function keyOf(team: string, channel: string, threadTs: string): SessionKey {
  return { surface: SURFACE, workspaceId: team, channelId: channel, threadId: threadTs };
}

export function modalPlace(place: Place): Omit<ModalPlace, 'token'> {
  return { team: place.team, channel: place.channel, threadTs: place.threadTs, messageTs: place.messageTs };
}

/**
 * What a press or a submitted modal does to a prompt's marks, the decisions collected until
 * every item has one. Pure over the prompt's state: presses.ts says so in Slack and sends the
 * answer once the marks are complete.
 */

export type MarkOutcome =
  /** These items were decided by this press. */
  | { kind: 'marked'; added: number[] }
  /** What was pressed is decided already (by `by`, when known). */
  | { kind: 'decided'; by: string | undefined }
  /** A modal asks first: why the tool calls are denied, or the answers in words. */
  | { kind: 'modal'; tools: ToolCallToDecide[] }
  /** Nothing to do (a press that does not fit the prompt). */
  | { kind: 'none' };

/** Longest denial reason kept, as the modal shows it. */
const REASON_MAX = 500;

/** A press of one of the prompt's buttons, by `user` at `now`. */
export function markPress(state: PromptState, action: PromptAction, user: string, now: number): MarkOutcome {
  const tools = callsOf(state.form);
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
        tools: picked.map((i) => tools[i]).filter((t): t is ToolCallToDecide => t !== undefined),
      };
    }
    case 'choice': {
      if (state.form.kind !== 'ask') return { kind: 'none' };
      const mark = state.marks.get(action.question);
      if (mark !== undefined) return { kind: 'decided', by: mark.by };
      const choice = state.form.items[action.question]?.choices[action.choice];
      if (choice === undefined) return { kind: 'none' };
      state.marks.set(action.question, { answer: [choice], by: user, at: now });
      return { kind: 'marked', added: [action.question] };
    }
    case 'answer':
      return state.form.kind === 'ask' ? { kind: 'modal', tools: [] } : { kind: 'none' };
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
    const picked = action.kind === 'deny' ? [action.index] : undecided(state, callsOf(state.form));
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
  if (action.kind === 'answer' && state.form.kind === 'ask') {
    const read = readAnswerModal(state.form, values);
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
  const count = state.form.kind === 'ask' ? state.form.items.length : state.form.calls.length;
  return state.marks.size >= count;
}

/** The structured reply a prompt's marks make, once every item has one. */
export function replyOf(state: PromptState): StructuredReply {
  if (state.form.kind === 'approval') {
    return {
      type: 'tool_approval',
      decisions: state.form.calls.map((tool, i) => {
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
    answers: state.form.items.map((_q, i) => [...(state.marks.get(i)?.answer ?? [])]),
  };
}

function undecided(state: PromptState, tools: readonly ToolCallToDecide[]): number[] {
  return tools.map((_t, i) => i).filter((i) => !state.marks.has(i));
}
