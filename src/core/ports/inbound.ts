import type { Actor } from '../compose.js';
import type { StructuredReply } from '../question.js';
import type { FeedbackTold, SessionKey } from '../store.js';

/** The inbound port: what a chat surface hands the engine (messages, answers) and hears back. */

/** A chat message for a session, as a surface hands it over. */
export type Inbound =
  | {
      kind: 'person';
      key: SessionKey;
      binding: string;
      /** The surface's id of the message (Slack ts): with the session, it fixes the messageId. */
      chatMessageId: string;
      actor: Actor;
      text: string;
      /** false: a thread reply that did not mention the broker, carried into the next turn (S-7). */
      addressed: boolean;
      /** The surface's id of the event that carried it, claimed with the turn (AddTurnOptions). */
      inboundEvent?: string;
      /**
       * More `message.metadata` stored with the turn beside the actor's (which wins on a clash):
       * a note the surface attaches, such as the feedback on the previous answer. Bounded by the
       * surface; stored with the turn, so a resend after a restart carries it again.
       */
      metadata?: Record<string, unknown>;
      /** The presses that note tells, marked told in the turn's own write (AddTurnOptions). */
      feedbackTold?: ReadonlyArray<FeedbackTold>;
    }
  | {
      kind: 'trigger';
      key: SessionKey;
      binding: string;
      chatMessageId: string;
      /** What the Binding's trigger asks of the agent. */
      instruction: string;
      /** The alert's fields, sent as untrusted data. */
      fields: Record<string, string>;
    };

/** A person's reply to a structured question, taken in the chat's own controls (buttons, a form). */
export interface StructuredAnswer {
  key: SessionKey;
  binding: string;
  /** The question it answers, as it was shown: an answer to another question is stale. */
  questionKey: string;
  actor: Actor;
  /** What the person decided or answered; the question's dialect builds the agent's message from it. */
  reply: StructuredReply;
}

export type AnswerResult =
  | { status: 'accepted'; sessionId: string; turnId: string }
  /** Someone answered this question already (a double click, two approvers racing). */
  | { status: 'duplicate'; sessionId: string; turnId: string }
  /** The question is no longer pending (answered, timed out, or another one is). */
  | { status: 'stale'; sessionId: string }
  /**
   * A person's stop is cancelling the task that asked: the decision is refused, and nothing of
   * it is sent (a decision belongs to its task, never to the context after it).
   */
  | { status: 'closed'; sessionId: string };

export interface ReceiveResult {
  sessionId: string;
  turnId: string;
  /** The same chat message was received before (a retry, a second delivery): nothing new. */
  duplicate: boolean;
}
