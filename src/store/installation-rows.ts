import type { InstallationRow, InstallationRows } from '../core/installation-store.js';
import { q, ROW_TABLES, type Steps, type StepsRunner } from './sql-steps.js';

/**
 * The installation store (src/core/installation-store.ts) over statements both databases share,
 * run by the same SQL runner as the triggers and transcripts. A put is an upsert, so two
 * replicas storing the same installation (a refresh racing an install) leave the later one.
 */

export const INSTALLATION_TABLE = ROW_TABLES.installations;

function* put(row: InstallationRow): Steps<void> {
  yield q(
    `INSERT INTO @installations (key, team_id, enterprise_id, bot_user_id, key_id, sealed, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7)
     ON CONFLICT (key) DO UPDATE SET team_id = excluded.team_id, enterprise_id = excluded.enterprise_id,
       bot_user_id = excluded.bot_user_id, key_id = excluded.key_id, sealed = excluded.sealed,
       updated_at = excluded.updated_at`,
    row.key,
    row.teamId,
    row.enterpriseId,
    row.botUserId,
    row.keyId,
    row.sealed,
    row.updatedAt,
  );
}

function* get(key: string): Steps<InstallationRow | undefined> {
  const [row] = yield q('SELECT * FROM @installations WHERE key = $1', key);
  return row === undefined ? undefined : installationFromRow(row);
}

function* remove(key: string): Steps<boolean> {
  return (yield q('DELETE FROM @installations WHERE key = $1 RETURNING key', key)).length > 0;
}

function* list(): Steps<InstallationRow[]> {
  return (yield q('SELECT * FROM @installations ORDER BY key')).map(installationFromRow);
}

export class StepsInstallationRows implements InstallationRows {
  readonly #runner: StepsRunner;

  constructor(runner: StepsRunner) {
    this.#runner = runner;
  }

  put(row: InstallationRow): Promise<void> {
    return this.#runner.run('put', put(row), { write: true });
  }

  get(key: string): Promise<InstallationRow | undefined> {
    return this.#runner.run('get', get(key), { write: false });
  }

  delete(key: string): Promise<boolean> {
    return this.#runner.run('delete', remove(key), { write: true });
  }

  list(): Promise<InstallationRow[]> {
    return this.#runner.run('list', list(), { write: false });
  }
}

export function installationFromRow(row: Record<string, unknown>): InstallationRow {
  const text = (v: unknown): string | null => (v === null || v === undefined ? null : String(v));
  return {
    key: String(row.key),
    teamId: text(row.team_id),
    enterpriseId: text(row.enterprise_id),
    botUserId: text(row.bot_user_id),
    keyId: String(row.key_id),
    sealed: String(row.sealed),
    updatedAt: Number(row.updated_at),
  };
}

/** The migration's tables (the integer type and SQLite's STRICT differ). */
export function installationTables(int: string, strict: string): string {
  return `
    CREATE TABLE ${INSTALLATION_TABLE} (
      key TEXT PRIMARY KEY,
      team_id TEXT,
      enterprise_id TEXT,
      bot_user_id TEXT,
      key_id TEXT NOT NULL,
      sealed TEXT NOT NULL,
      updated_at ${int} NOT NULL
    )${strict};
  `;
}
