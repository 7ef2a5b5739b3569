import type { AnswerView } from '../answer.js';
import type { Actor } from '../compose.js';
import type { Question } from '../question.js';
import type { SessionKey } from '../store.js';
import type { ToolStep } from './agent.js';

/** The chat port: everything the engine shows in a thread, through a surface. */

/** Where in a chat a session's messages go. */
export interface ChatTarget {
  sessionId: string;
  key: SessionKey;
}

export type NoticeKind =
  | 'no-output'
  | 'task-failed'
  | 'task-rejected'
  | 'task-canceled'
  | 'context-changed'
  | 'session-gone'
  | 'session-gone-carried'
  | 'thread-forgotten'
  | 'agent-busy'
  | 'agent-unreachable'
  | 'agent-refused'
  | 'credentials-rejected'
  | 'identity-refused'
  | 'identity-exchange-refused'
  | 'identity-provider-unavailable'
  | 'sign-in-required'
  | 'sign-in-timeout'
  | 'question-unsupported'
  | 'question-timeout'
  | 'answer-rejected'
  | 'cancel-failed'
  | 'decision-not-sent'
  | 'binding-removed'
  | 'approval-not-allowed'
  | 'poll-timeout';

/** A message from the broker itself. `text` is ours (never an agent's error message, E-9). */
export interface Notice {
  kind: NoticeKind;
  text: string;
  /** The turn it is about, when there is one. */
  turnId?: string;
  /** A link the person follows (a sign-in at the identity provider): a surface shows a button. */
  link?: { label: string; url: string };
  /**
   * The key of the question the session still waits on once this notice is posted, null when
   * none (set by the engine): a surface closes the prompts of any other question.
   */
  questionKey?: string | null;
}

/** Whom a turn's answer is for, and whether it can have been shown before. */
export interface AnswerFor {
  /** The id of the person whose turn it answers (S-5's actor); undefined for a trigger's turn. */
  actorId: string | undefined;
  /**
   * This process stored the turn: no process before it can have shown its answer, so without
   * a ref there is no earlier message of it to look for.
   */
  fresh: boolean;
}

/** The message that shows one turn's answer as it grows. */
export interface AnswerSink {
  /** The answer changed. Called per event: must return at once; the surface coalesces. */
  update(view: AnswerView): void;
  /**
   * The answer is complete: show exactly this text. Resolves when it is shown. `end` says how
   * its task ended, when the engine knows: a surface may then mark the turn done in the same
   * call that shows the last words (Slack's stream stop sets the session's status).
   */
  finish(view: AnswerView, end?: AnswerEnd): Promise<void>;
}

/** How an answer's task ended: over (completed, failed, …), or paused waiting for the person. */
export type AnswerEnd = 'task-ended' | 'task-paused';

export interface QuestionPrompt {
  /** The Binding of the session that asks (who may answer is the Binding's setting). */
  binding: string;
  turnId: string;
  taskId: string;
  question: Question;
}

/**
 * The chat port: everything the engine shows. Modeled on Bolt's Receiver: small, and one fake
 * implements it in tests.
 */
export interface ChatSurface {
  /**
   * Opens the answer of a turn. `ref` is what `onRef` reported before (persisted by the engine),
   * so after a restart the surface updates the same message instead of posting a second one.
   * `answering` says whom it answers (a surface may address the answer to them).
   */
  openAnswer(
    target: ChatTarget,
    turnId: string,
    ref: string | null,
    onRef: (ref: string) => void,
    answering: AnswerFor,
  ): AnswerSink;
  postNotice(target: ChatTarget, notice: Notice): Promise<void>;
  /** Shows a question; returns a reference to the prompt. */
  askQuestion(target: ChatTarget, prompt: QuestionPrompt): Promise<string | null>;
  showToolStep(target: ChatTarget, turnId: string, step: ToolStep): Promise<void>;
  /**
   * The person `actorId` as the surface knows them now, for the label line of a turn about to be
   * sent whose label lacks their name (S-6): a surface takes a message without waiting to look
   * its author up, and the engine asks here before the send. Bounded by the surface; undefined
   * or a rejection: the label stays as stored.
   */
  person?(target: ChatTarget, actorId: string): Promise<Actor | undefined>;
}

/**
 * Ends a person's sign-in links at identity providers (the chat's "sign out" command; docs/
 * identity.md): how many went. Their next message to a sign-in agent asks them to sign in again.
 */
export type SignOut = (person: { surface: string; workspaceId: string; id: string }) => Promise<number>;
