import type { DatabaseSync, SQLInputValue } from 'node:sqlite';
import { storeFailure } from '../rows.js';
import type { StepsRun, StepsRunner } from '../sql-steps.js';
import * as Q from '../sql-steps.js';
import { immediate, Statements } from './connection.js';

/**
 * The SQL runner on the SQLite database (../sql-steps.ts): each store method's statements run
 * synchronously, inside BEGIN IMMEDIATE when it writes, so nothing else in the process
 * interleaves with it (the same rule as the session store). The trigger, transcript, feedback
 * and installation stores run on it.
 */
export class SqliteSteps implements StepsRunner {
  readonly #db: DatabaseSync;
  readonly #statements: Statements;
  readonly #what: string;

  /** `what` names the store in errors ('trigger store', 'transcript store'). */
  constructor(db: DatabaseSync, what = 'trigger store') {
    this.#db = db;
    this.#what = what;
    this.#statements = new Statements(db, (sql) => Q.render(sql, (name) => name, '?'));
  }

  async run<T>(operation: string, steps: Q.Steps<T>, how: StepsRun): Promise<T> {
    try {
      return how.write ? immediate(this.#db, () => this.#steps(steps)) : this.#steps(steps);
    } catch (cause) {
      throw storeFailure(`sqlite ${this.#what}: ${operation}`, cause);
    }
  }

  /**
   * Runs steps at once inside the transaction already open on this connection (a group write
   * of the session store that another store's statements belong to), without one of their own.
   */
  inside<T>(steps: Q.Steps<T>): T {
    return this.#steps(steps);
  }

  #steps<T>(steps: Q.Steps<T>): T {
    let next = steps.next();
    while (next.done !== true) {
      const query = next.value;
      const rows = this.#statements.get(query.sql).all(...(query.params as SQLInputValue[]));
      next = steps.next(rows);
    }
    return next.value;
  }
}
