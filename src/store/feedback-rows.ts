import type {
  FeedbackPress,
  FeedbackRows,
  FeedbackValue,
  PressOutcome,
  UntoldFeedback,
} from '../core/feedback-store.js';
import { q, ROW_TABLES, type Steps, type StepsRunner } from './sql-steps.js';

/**
 * The feedback store (src/core/feedback-store.ts) over statements both databases share, run by
 * the same SQL runner as the triggers and transcripts (one transaction per call).
 */

export const FEEDBACK_TABLE = ROW_TABLES.feedback;

/**
 * The press is one upsert that writes only when the value differs, and `presses` counts the
 * writes: a returned row with 1 is a first press, more is a change of mind, no row is a repeat.
 * (The conflicting row is named by the bare table name: PostgreSQL allows no schema there.)
 */
function* press(p: FeedbackPress): Steps<PressOutcome> {
  const rows = yield q(
    `INSERT INTO @feedback (turn_id, actor_id, session_id, task_id, value, presses, told_in, updated_at)
     VALUES ($1, $2, $3, $4, $5, 1, NULL, $6)
     ON CONFLICT (turn_id, actor_id) DO UPDATE SET value = excluded.value,
       presses = ${FEEDBACK_TABLE}.presses + 1, told_in = NULL, updated_at = excluded.updated_at
     WHERE ${FEEDBACK_TABLE}.value <> excluded.value
     RETURNING presses`,
    p.turnId,
    p.actorId,
    p.sessionId,
    p.taskId,
    p.value,
    p.now,
  );
  return outcomeOf(rows, p.value);
}

function* untold(sessionId: string, limit: number): Steps<UntoldFeedback[]> {
  const rows = yield q(
    `SELECT turn_id, task_id, actor_id, value, updated_at FROM @feedback
     WHERE session_id = $1 AND told_in IS NULL AND turn_id = (
       SELECT turn_id FROM @feedback WHERE session_id = $1 AND told_in IS NULL
       ORDER BY updated_at DESC, turn_id LIMIT 1)
     ORDER BY updated_at DESC, actor_id LIMIT $2`,
    sessionId,
    limit,
  );
  return rows.map(untoldFromRow);
}

/** Marks presses told in the turn `toldIn` (also run inside a turn's own write, AddTurnOptions). */
export function* markTold(
  sessionId: string,
  presses: ReadonlyArray<Pick<UntoldFeedback, 'turnId' | 'actorId' | 'value'>>,
  toldIn: string,
): Steps<void> {
  for (const p of presses)
    yield q(
      'UPDATE @feedback SET told_in = $1 WHERE session_id = $2 AND turn_id = $3 AND actor_id = $4 AND value = $5',
      toldIn,
      sessionId,
      p.turnId,
      p.actorId,
      p.value,
    );
}

export class StepsFeedbackRows implements FeedbackRows {
  readonly #runner: StepsRunner;

  constructor(runner: StepsRunner) {
    this.#runner = runner;
  }

  press(p: FeedbackPress): Promise<PressOutcome> {
    return this.#runner.run('press', press(p), { write: true });
  }

  untold(sessionId: string, limit: number): Promise<UntoldFeedback[]> {
    return this.#runner.run('untold', untold(sessionId, limit), { write: false });
  }

  markTold(
    sessionId: string,
    presses: ReadonlyArray<Pick<UntoldFeedback, 'turnId' | 'actorId' | 'value'>>,
    toldIn: string,
  ): Promise<void> {
    return this.#runner.run('markTold', markTold(sessionId, presses, toldIn), { write: true });
  }
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
