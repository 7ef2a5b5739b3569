/**
 * Slack installations as the store keeps them: one row per installation, keyed by
 * `team:<team id>` (a workspace install) or `enterprise:<enterprise id>` (an org-wide one). The
 * ids are kept in clear so an event's workspace finds its row; everything else (the tokens, the
 * scopes, the whole Installation Bolt hands over) is one sealed value the store never reads
 * (src/surfaces/slack/installations/ seals and opens it). Both dialects run the same statements.
 */

export interface InstallationRow {
  key: string;
  teamId: string | null;
  enterpriseId: string | null;
  /** The bot user of the installation: `tokens_revoked` names bot users, not tokens. */
  botUserId: string | null;
  /** The key the value is sealed with (rotation re-seals the rows whose key is not the newest). */
  keyId: string;
  sealed: string;
  updatedAt: number;
}

export interface InstallationRows {
  /** Writes the row, replacing the one with the same key (an install again, a token refresh). */
  put(row: InstallationRow): Promise<void>;
  get(key: string): Promise<InstallationRow | undefined>;
  /** Deletes a row; false when there was none (the second of app_uninstalled and tokens_revoked). */
  delete(key: string): Promise<boolean>;
  list(): Promise<InstallationRow[]>;
}

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
