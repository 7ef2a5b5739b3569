import type { FeedbackPress, FeedbackValue, PressOutcome, UntoldFeedback } from '../core/feedback-store.js';

/**
 * The SQL of the feedback store (src/core/feedback-store.ts): both dialects run the same
 * statements.
 */

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
