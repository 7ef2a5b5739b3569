import type pg from 'pg';
import { storeFailure } from '../rows.js';
import type { StepsRun, StepsRunner } from '../sql-steps.js';
import * as Q from '../sql-steps.js';

/**
 * The SQL runner on the PostgreSQL pool and schema (../sql-steps.ts): each store method is one
 * transaction at READ COMMITTED. A method that names a Binding first takes an advisory lock on
 * it (the trigger store's deliveries and schedule runs: replicas counting its storm limit or
 * creating the same group queue behind each other); the outbox's claims are single conditional
 * UPDATEs (a second replica re-checks the lease on the row the first one wrote, and is refused).
 */
export class PostgresSteps implements StepsRunner {
  readonly #pool: pg.Pool;
  readonly #schema: string;
  readonly #sql = new Map<string, string>();
  readonly #what: string;

  /** `what` names the store in errors ('trigger store', 'transcript store'). */
  constructor(pool: pg.Pool, schema: string, what = 'trigger store') {
    this.#pool = pool;
    this.#what = what;
    this.#schema = schema;
  }

  run<T>(operation: string, steps: Q.Steps<T>, how: StepsRun): Promise<T> {
    return this.#transaction(operation, steps, how.lockBinding);
  }

  async #transaction<T>(operation: string, steps: Q.Steps<T>, lockBinding?: string): Promise<T> {
    let client: pg.PoolClient | undefined;
    let broken: Error | undefined;
    try {
      client = await this.#pool.connect();
      await client.query('BEGIN');
      if (lockBinding !== undefined) {
        await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [
          `agentkourier:triggers:${this.#schema}:${lockBinding}`,
        ]);
      }
      let next = steps.next();
      while (next.done !== true) {
        const result = await client.query<Q.Row>(this.#render(next.value.sql), next.value.params);
        next = steps.next(result.rows);
      }
      await client.query('COMMIT');
      return next.value;
    } catch (error) {
      await client?.query('ROLLBACK').catch((rollbackError: unknown) => {
        broken = rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError));
      });
      throw storeFailure(`postgres ${this.#what}: ${operation}`, error);
    } finally {
      client?.release(broken);
    }
  }

  #render(sql: string): string {
    let rendered = this.#sql.get(sql);
    if (rendered === undefined) {
      rendered = Q.render(sql, (name) => `"${this.#schema}".${name}`, '$');
      this.#sql.set(sql, rendered);
    }
    return rendered;
  }
}
