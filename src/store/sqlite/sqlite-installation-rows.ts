import type { DatabaseSync, SQLInputValue } from 'node:sqlite';
import type { InstallationRow, InstallationRows } from '../../core/installation-store.js';
import {
  INSTALLATION_SQL,
  INSTALLATION_TABLE,
  installationFromRow,
  putParams,
} from '../installation-rows.js';
import { storeFailure } from '../rows.js';
import { immediate, Statements } from './connection.js';

/** Slack installations on the session store's SQLite database (SqliteStore.installations()). */
export class SqliteInstallationRows implements InstallationRows {
  readonly #db: DatabaseSync;
  readonly #statements: Statements;

  constructor(db: DatabaseSync) {
    this.#db = db;
    this.#statements = new Statements(db, (sql) => sql.replaceAll('{table}', INSTALLATION_TABLE));
  }

  async put(row: InstallationRow): Promise<void> {
    this.#guard('put', () => immediate(this.#db, () => this.#all(INSTALLATION_SQL.put, putParams(row))));
  }

  async get(key: string): Promise<InstallationRow | undefined> {
    return this.#guard('get', () => {
      const row = this.#all(INSTALLATION_SQL.get, [key])[0];
      return row === undefined ? undefined : installationFromRow(row);
    });
  }

  async delete(key: string): Promise<boolean> {
    return this.#guard('delete', () =>
      immediate(this.#db, () => this.#all(INSTALLATION_SQL.delete, [key]).length > 0),
    );
  }

  async list(): Promise<InstallationRow[]> {
    return this.#guard('list', () => this.#all(INSTALLATION_SQL.list, []).map(installationFromRow));
  }

  #all(sql: string, params: SQLInputValue[]): Array<Record<string, unknown>> {
    return this.#statements.get(sql).all(...params) as Array<Record<string, unknown>>;
  }

  #guard<T>(operation: string, body: () => T): T {
    try {
      return body();
    } catch (cause) {
      throw storeFailure(`sqlite installations: ${operation}`, cause);
    }
  }
}
