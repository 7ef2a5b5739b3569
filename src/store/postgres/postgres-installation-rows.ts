import type pg from 'pg';
import type { InstallationRow, InstallationRows } from '../../core/installation-store.js';
import {
  INSTALLATION_SQL,
  INSTALLATION_TABLE,
  installationFromRow,
  putParams,
} from '../installation-rows.js';
import { storeFailure } from '../rows.js';

/**
 * Slack installations on the session store's PostgreSQL pool and schema
 * (PostgresStore.installations()). Each call is one statement: a put is an upsert, so two
 * replicas storing the same installation (a refresh racing an install) leave the later one.
 */
export class PostgresInstallationRows implements InstallationRows {
  readonly #pool: pg.Pool;
  readonly #sql: Record<keyof typeof INSTALLATION_SQL, string>;

  constructor(pool: pg.Pool, schema: string) {
    this.#pool = pool;
    const table = `"${schema}".${INSTALLATION_TABLE}`;
    const render = (sql: string): string => {
      let n = 0;
      return sql.replaceAll('{table}', table).replace(/\?/g, () => `$${++n}`);
    };
    this.#sql = {
      put: render(INSTALLATION_SQL.put),
      get: render(INSTALLATION_SQL.get),
      delete: render(INSTALLATION_SQL.delete),
      list: render(INSTALLATION_SQL.list),
    };
  }

  async put(row: InstallationRow): Promise<void> {
    await this.#query('put', this.#sql.put, putParams(row));
  }

  async get(key: string): Promise<InstallationRow | undefined> {
    const rows = await this.#query('get', this.#sql.get, [key]);
    return rows[0] === undefined ? undefined : installationFromRow(rows[0]);
  }

  async delete(key: string): Promise<boolean> {
    return (await this.#query('delete', this.#sql.delete, [key])).length > 0;
  }

  async list(): Promise<InstallationRow[]> {
    return (await this.#query('list', this.#sql.list, [])).map(installationFromRow);
  }

  async #query(operation: string, sql: string, params: unknown[]): Promise<Array<Record<string, unknown>>> {
    try {
      return (await this.#pool.query<Record<string, unknown>>(sql, params)).rows;
    } catch (cause) {
      throw storeFailure(`postgres installations: ${operation}`, cause);
    }
  }
}
