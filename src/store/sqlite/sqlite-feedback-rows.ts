import type { DatabaseSync, SQLInputValue } from 'node:sqlite';
import type { FeedbackPress, FeedbackRows, PressOutcome, UntoldFeedback } from '../../core/feedback-store.js';
import { FEEDBACK_SQL, FEEDBACK_TABLE, outcomeOf, pressParams, untoldFromRow } from '../feedback-rows.js';
import { storeFailure } from '../rows.js';
import { immediate, Statements } from './connection.js';

/** Feedback on answers on the session store's SQLite database (SqliteStore.feedback()). */
export class SqliteFeedbackRows implements FeedbackRows {
  readonly #db: DatabaseSync;
  readonly #statements: Statements;

  constructor(db: DatabaseSync) {
    this.#db = db;
    this.#statements = new Statements(db, (sql) => sql.replaceAll('{table}', FEEDBACK_TABLE));
  }

  async press(press: FeedbackPress): Promise<PressOutcome> {
    return this.#guard('press', () =>
      immediate(this.#db, () => outcomeOf(this.#all(FEEDBACK_SQL.press, pressParams(press)), press.value)),
    );
  }

  async untold(sessionId: string, limit: number): Promise<UntoldFeedback[]> {
    return this.#guard('untold', () =>
      this.#all(FEEDBACK_SQL.untold, [sessionId, sessionId, limit]).map(untoldFromRow),
    );
  }

  async markTold(
    sessionId: string,
    presses: ReadonlyArray<Pick<UntoldFeedback, 'turnId' | 'actorId' | 'value'>>,
    toldIn: string,
  ): Promise<void> {
    this.#guard('markTold', () =>
      immediate(this.#db, () => {
        for (const p of presses)
          this.#all(FEEDBACK_SQL.markTold, [toldIn, sessionId, p.turnId, p.actorId, p.value]);
      }),
    );
  }

  #all(sql: string, params: SQLInputValue[]): Array<Record<string, unknown>> {
    return this.#statements.get(sql).all(...params) as Array<Record<string, unknown>>;
  }

  #guard<T>(operation: string, body: () => T): T {
    try {
      return body();
    } catch (cause) {
      throw storeFailure(`sqlite feedback: ${operation}`, cause);
    }
  }
}
