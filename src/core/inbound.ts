import type { AnswerResult, Inbound, ReceiveResult, StructuredAnswer } from './ports.js';
import type { CancelRequest, CancelResult } from './session/cancelling.js';
import type { SessionKey, SessionRecord, TurnRecord } from './store.js';

/**
 * What a chat surface may ask of the engine about incoming messages and presses, and nothing
 * else: the one narrow port a surface receives through (as Bolt keeps its transport behind its
 * Receiver). A surface never reaches the store: what it reads of a session goes through here.
 * `SessionEngine` implements it.
 */
export interface ChatInbound {
  /** Takes a person's message (or a trigger's) as a turn, stored before this resolves. */
  receive(input: Inbound): Promise<ReceiveResult>;
  /**
   * A person's reply to the structured question the thread waits on (buttons, a form): the
   * question's dialect builds the agent's message from it, one per question, whoever answers
   * first. Throws ReplyShapeError when the reply does not fit the question.
   */
  answer(input: StructuredAnswer): Promise<AnswerResult>;
  /** A person's stop: cancels the task running in the thread. */
  cancel(key: SessionKey, request: CancelRequest): Promise<CancelResult>;
  /**
   * Hands an idle thread to another Binding: the session keeps its thread and history, its agent
   * context starts again. Only an idle thread is handed over (nothing running, nothing asked).
   */
  handOver(key: SessionKey, binding: string): Promise<HandOverResult>;
  /** The session a thread stands for, if it has one. */
  findSession(sessionId: string): Promise<SessionRecord | undefined>;
  /** A turn, by its id. */
  findTurn(turnId: string): Promise<TurnRecord | undefined>;
  /**
   * When the retention sweep forgot the thread a session stood for, if it did: a reply there,
   * which would need a session, starts a new conversation instead (the engine says so in it).
   */
  forgottenAt?(sessionId: string): Promise<number | undefined>;
  /**
   * Claims a platform event that is taken without a turn (a hint, a command, a press): false
   * when it was claimed before (a redelivery). A turn claims its event in its own write instead.
   */
  claimEvent(eventKey: string): Promise<boolean>;
}

/** What a hand-over did: `busy` when the thread still has work (or changed meanwhile). */
export type HandOverResult = 'handed-over' | 'busy' | 'same' | 'no-session';
