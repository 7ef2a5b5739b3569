/**
 * The Slack installation store port: one row per installation, keyed by `team:<team id>` (a
 * workspace install) or `enterprise:<enterprise id>` (an org-wide one). The ids are kept in
 * clear so an event's workspace finds its row; everything else (the tokens, the scopes, the
 * whole Installation Bolt hands over) is one sealed value the store never reads
 * (src/surfaces/slack/installations/ seals and opens it). The store implements it
 * (src/store/installation-rows.ts holds its SQL).
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
