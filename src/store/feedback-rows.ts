/**
 * Feedback on answers as the store keeps it: one row per person and answer, holding that
 * person's latest press (the last press wins), and whether the agent was told of it yet (a
 * Binding may ask for it to travel as metadata on the next turn, src/surfaces/slack/agent-app/feedback.ts).
 * Ids only, never text. Both dialects run the same statements.
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

export const FEEDBACK_TABLE = 'answer_feedback';

/**
 * Statements with `{table}` for the table and `?` for parameters, in order. The press is one
 * upsert that writes only when the value differs, and `presses` counts the writes: a returned
 * row with 1 is a first press, more is a change of mind, no row is a repeat.
 */
export const FEEDBACK_SQL = {
  press: `INSERT INTO {table} (turn_id, actor_id, session_id, task_id, value, presses, told_in, updated_at)
          VALUES (?, ?, ?, ?, ?, 1, NULL, ?)
          ON CONFLICT (turn_id, actor_id) DO UPDATE SET value = excluded.value, presses = {table}.presses + 1,
            told_in = NULL, updated_at = excluded.updated_at
          WHERE {table}.value <> excluded.value
          RETURNING presses`,
  untold: `SELECT turn_id, task_id, actor_id, value, updated_at FROM {table}
           WHERE session_id = ? AND told_in IS NULL AND turn_id = (
             SELECT turn_id FROM {table} WHERE session_id = ? AND told_in IS NULL
             ORDER BY updated_at DESC, turn_id LIMIT 1)
           ORDER BY updated_at DESC, actor_id LIMIT ?`,
  markTold: `UPDATE {table} SET told_in = ? WHERE session_id = ? AND turn_id = ? AND actor_id = ? AND value = ?`,
} as const;

export function pressParams(p: FeedbackPress): Array<string | number | null> {
  return [p.turnId, p.actorId, p.sessionId, p.taskId, p.value, p.now];
}

export function outcomeOf(rows: ReadonlyArray<Record<string, unknown>>, value: FeedbackValue): PressOutcome {
  const row = rows[0];
  if (row === undefined) return { kind: 'unchanged' };
  if (Number(row.presses) <= 1) return { kind: 'first' };
  return { kind: 'changed', previous: value === 'positive' ? 'negative' : 'positive' };
}

export function untoldFromRow(row: Record<string, unknown>): UntoldFeedback {
  return {
    turnId: String(row.turn_id),
    taskId: row.task_id === null || row.task_id === undefined ? null : String(row.task_id),
    actorId: String(row.actor_id),
    value: row.value === 'negative' ? 'negative' : 'positive',
    updatedAt: Number(row.updated_at),
  };
}

/** The table, the same in both dialects but for the integer type and SQLite's STRICT. */
export function feedbackTables(int: string, strict: string): string {
  return `
    CREATE TABLE ${FEEDBACK_TABLE} (
      turn_id TEXT NOT NULL,
      actor_id TEXT NOT NULL,
      session_id TEXT NOT NULL,
      task_id TEXT,
      value TEXT NOT NULL,
      presses ${int} NOT NULL,
      told_in TEXT,
      updated_at ${int} NOT NULL,
      PRIMARY KEY (turn_id, actor_id)
    )${strict};
    CREATE INDEX ${FEEDBACK_TABLE}_untold ON ${FEEDBACK_TABLE} (session_id, updated_at) WHERE told_in IS NULL;
  `;
}
