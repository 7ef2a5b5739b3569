import type pg from 'pg';
import type { FeedbackPress, FeedbackRows, PressOutcome, UntoldFeedback } from '../../core/feedback-store.js';
import { FEEDBACK_SQL, FEEDBACK_TABLE, outcomeOf, pressParams, untoldFromRow } from '../feedback-rows.js';
import { storeFailure } from '../rows.js';

/**
 * Feedback on answers on the session store's PostgreSQL pool and schema
 * (PostgresStore.feedback()). A press is one upsert, so two replicas taking presses of the same
 * person leave the later one and count each change once.
 */
export class PostgresFeedbackRows implements FeedbackRows {
  readonly #pool: pg.Pool;
  readonly #sql: Record<keyof typeof FEEDBACK_SQL, string>;

  constructor(pool: pg.Pool, schema: string) {
    this.#pool = pool;
    const table = `"${schema}".${FEEDBACK_TABLE}`;
    const render = (sql: string): string => {
      let n = 0;
      // The upsert names the conflicting row by the bare table name (a schema-qualified name
      // is not allowed there), so only the statement's own table reference is qualified.
      return sql
        .replaceAll('{table}.', `${FEEDBACK_TABLE}.`)
        .replaceAll('{table}', table)
        .replace(/\?/g, () => `$${++n}`);
    };
    this.#sql = {
      press: render(FEEDBACK_SQL.press),
      untold: render(FEEDBACK_SQL.untold),
      markTold: render(FEEDBACK_SQL.markTold),
    };
  }

  async press(press: FeedbackPress): Promise<PressOutcome> {
    return outcomeOf(await this.#query('press', this.#sql.press, pressParams(press)), press.value);
  }

  async untold(sessionId: string, limit: number): Promise<UntoldFeedback[]> {
    return (await this.#query('untold', this.#sql.untold, [sessionId, sessionId, limit])).map(untoldFromRow);
  }

  async markTold(
    sessionId: string,
    presses: ReadonlyArray<Pick<UntoldFeedback, 'turnId' | 'actorId' | 'value'>>,
    toldIn: string,
  ): Promise<void> {
    for (const p of presses)
      await this.#query('markTold', this.#sql.markTold, [toldIn, sessionId, p.turnId, p.actorId, p.value]);
  }

  async #query(operation: string, sql: string, params: unknown[]): Promise<Array<Record<string, unknown>>> {
    try {
      return (await this.#pool.query<Record<string, unknown>>(sql, params)).rows;
    } catch (cause) {
      throw storeFailure(`postgres feedback: ${operation}`, cause);
    }
  }
}
