import type { InstallationRow } from '../core/installation-store.js';

/** The SQL of the installation store (src/core/installation-store.ts): both dialects run it. */

/** Statements with `{table}` for the table and `?` for parameters, in order. */
export const INSTALLATION_SQL = {
  put: `INSERT INTO {table} (key, team_id, enterprise_id, bot_user_id, key_id, sealed, updated_at)
        VALUES (?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT (key) DO UPDATE SET team_id = excluded.team_id, enterprise_id = excluded.enterprise_id,
          bot_user_id = excluded.bot_user_id, key_id = excluded.key_id, sealed = excluded.sealed,
          updated_at = excluded.updated_at`,
  get: 'SELECT * FROM {table} WHERE key = ?',
  delete: 'DELETE FROM {table} WHERE key = ? RETURNING key',
  list: 'SELECT * FROM {table} ORDER BY key',
} as const;

export const INSTALLATION_TABLE = 'slack_installations';

export function putParams(row: InstallationRow): Array<string | number | null> {
  return [row.key, row.teamId, row.enterpriseId, row.botUserId, row.keyId, row.sealed, row.updatedAt];
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
