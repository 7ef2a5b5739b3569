/**
 * The JSON the web chat's API returns and its page reads: one thread as messages in order, each
 * with its author, kind and current text. Shared by the server and the page (type-only on the
 * page side), so the two cannot drift apart.
 */

export type Author = 'person' | 'agent' | 'broker';

export type MessageKind = 'message' | 'answer' | 'notice' | 'question' | 'approval' | 'tool-step';

/** Whether a prompt (question or approval) still takes an answer from this thread. */
export type PromptStatus = 'open' | 'answered' | 'expired' | 'closed';

/** One question of kagent's ask_user request: answered by choices and/or free text. */
export interface AskItemView {
  question: string;
  choices: string[];
  multiple: boolean;
}

export interface QuestionView {
  /** The engine's question key: an answer names the question it answers. */
  key: string;
  /** text: the next reply in the thread answers it. structured: kagent's ask_user form. */
  mode: 'text' | 'structured';
  /** Offered answers of a text question (a click sends the choice as the reply). */
  choices: string[];
  /** The ask_user questions of a structured question, in order (answers are positional). */
  items: AskItemView[];
  status: PromptStatus;
  /** What was answered, once it was, as shown to people. */
  answer?: string;
}

export interface ToolCallView {
  /** The opaque approval id a decision names. */
  id: string;
  name: string;
  /** The arguments as pretty JSON text, cut to a size a page shows comfortably. */
  args: string;
  argsTruncated: boolean;
}

export interface DecisionView {
  id: string;
  approved: boolean;
  reason?: string;
}

export interface ApprovalView {
  key: string;
  /** The agent's hint, for display only. */
  hint: string;
  /** The sub-agent that asks, when the pause came from one. */
  subagent?: string;
  tools: ToolCallView[];
  status: PromptStatus;
  decisions?: DecisionView[];
  /**
   * Why this web chat cannot decide it (an in-cluster web chat, a Binding whose approvals need
   * a named approver): the page shows the approval read-only with this sentence.
   */
  refusal?: string;
}

export interface StepView {
  kind: 'call' | 'result';
  toolName: string;
  summary: string;
}

export interface MessageView {
  /** Stable within the thread; an answer keeps its id while it grows. */
  id: string;
  /** Position in the thread, from 1. */
  seq: number;
  author: Author;
  kind: MessageKind;
  /** The current text: always plain text, never markup. */
  text: string;
  createdAt: string;
  updatedAt: string;
  turnId?: string;
  /** answer: false while it streams, true once it is complete and exact. */
  final?: boolean;
  /** notice: the broker's notice kind ('task-failed', …). */
  noticeKind?: string;
  /** notice: a link the person follows (a sign-in at the identity provider), shown as a button. */
  link?: { label: string; url: string };
  /** message: the engine refused to store it (the text was not sent). */
  failed?: boolean;
  question?: QuestionView;
  approval?: ApprovalView;
  step?: StepView;
}

/**
 * What the engine is doing for the thread, read from its events (activity.ts):
 * - queued: the message is stored and waits to be sent (behind a turn still running, maybe);
 * - sending: it is being sent to the agent;
 * - working: the agent accepted it as a task and works on it (text may be streaming);
 * - retrying: the send failed or the agent said it is busy; it is sent again at `retryAt`;
 * - checking: the send may or may not have reached the agent; the broker finds out;
 * - following: the stream to the task broke; the broker follows the task again.
 */
export type ActivityState = 'queued' | 'sending' | 'working' | 'retrying' | 'checking' | 'following';

export interface ActivityView {
  state: ActivityState;
  /** The turn it is about, when the engine named one. */
  turnId?: string;
  /** When the engine began on this turn: the page counts the time from here. */
  startedAt: string;
  /** When this state began. */
  since: string;
  /** retrying: when the next attempt is due. */
  retryAt?: string;
  /** retrying: the agent said it is busy (rather than a failed send). */
  busy?: boolean;
  /**
   * queued: what the message waits behind, when it is an open prompt of this thread that a typed
   * message does not answer (a tool approval, a form question): it goes once that is answered,
   * or once Stop ends the task that asked.
   */
  behind?: 'approval' | 'question';
}

export interface ThreadSummary {
  id: string;
  binding: string;
  /** The first person message, cut short at a word. */
  title: string;
  createdAt: string;
  updatedAt: string;
  messageCount: number;
  /** null while the engine does nothing for this thread. */
  activity: ActivityView | null;
}

export interface ThreadView extends ThreadSummary {
  messages: MessageView[];
}

export interface BindingView {
  ref: string;
  threadCount: number;
  /**
   * A few example requests from the agent card's skills, to offer before a first message
   * (untrusted text: shown as text, each cut short). Empty until the card has been read.
   */
  examples: string[];
  /**
   * Whether its agent can be used now (local mode reads the Binding's Ready condition; a mode
   * that does not know says true). Messages to one not ready are taken and wait for it.
   */
  ready: boolean;
  /** Why it is not ready (the Ready condition's reason and message); only when not ready. */
  problem?: { reason: string; message: string };
}

/**
 * What the events endpoint streams, one JSON object per SSE `data:` line, named by `event:`.
 * snapshot: the whole thread (first event of every connection). message: a message was added
 * or changed (replace it by id). append: an answer grew by `text` at offset `at`. activity:
 * what the engine does for the thread changed.
 */
export type ThreadEvent =
  | { event: 'snapshot'; data: ThreadView }
  | { event: 'message'; data: MessageView }
  | { event: 'append'; data: { id: string; at: number; text: string; updatedAt: string } }
  | { event: 'activity'; data: { activity: ActivityView | null } };

export interface ApiErrorBody {
  error: { code: string; message: string };
}
