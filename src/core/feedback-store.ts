/**
 * The feedback store port: people's presses on answers, one row per person and answer holding
 * that person's latest press (the last press wins), and whether the agent was told of it yet (a
 * Binding may ask for it to travel as metadata on the next turn). Ids only, never text. The
 * store implements it (src/store/feedback-rows.ts holds its SQL); surfaces use it.
 */

export type FeedbackValue = 'positive' | 'negative';

export interface FeedbackPress {
  sessionId: string;
  /** The answered turn. */
  turnId: string;
  /** The task that answered it, when the turn names one. */
  taskId: string | null;
  /** The person's id on the surface (Slack user id). */
  actorId: string;
  value: FeedbackValue;
  now: number;
}

/** What a press changed. */
export type PressOutcome =
  /** The person's first press on this answer. */
  | { kind: 'first' }
  /** A change of mind: the latest value was the other one. */
  | { kind: 'changed'; previous: FeedbackValue }
  /** The same value again (a repeat, a redelivery): nothing changed. */
  | { kind: 'unchanged' };

/** A person's latest press on an answer, not told to the agent yet. */
export interface UntoldFeedback {
  turnId: string;
  taskId: string | null;
  actorId: string;
  value: FeedbackValue;
  updatedAt: number;
}

export interface FeedbackRows {
  /** Records a press as the person's latest on the answer (an upsert per person and answer). */
  press(press: FeedbackPress): Promise<PressOutcome>;
  /**
   * The latest presses not told to the agent yet, on the newest answer of the session that has
   * any, at most `limit` people (the latest first).
   */
  untold(sessionId: string, limit: number): Promise<UntoldFeedback[]>;
  /** Marks presses as told in the turn `toldIn`; a press changed since is told again later. */
  markTold(
    sessionId: string,
    presses: ReadonlyArray<Pick<UntoldFeedback, 'turnId' | 'actorId' | 'value'>>,
    toldIn: string,
  ): Promise<void>;
}
