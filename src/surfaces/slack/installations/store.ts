import type { Installation, InstallationQuery, InstallationStore } from '@slack/oauth';
import { KourierError } from '../../../core/errors.js';
import type { InstallationRow, InstallationRows } from '../../../core/installation-store.js';
import { InstallationSealError, type Keyring } from './keyring.js';

/**
 * Bolt's InstallationStore on our own store: each installation is written whole (Bolt's
 * refresh path needs every field back), sealed with the keyring, under its workspace's key.
 * Bolt calls `storeInstallation` after an install and after each token refresh (an upsert);
 * `fetchInstallation` for every event and for every call the surface makes (through
 * WorkspaceTokens); nobody but our uninstall listeners calls `deleteInstallation`.
 *
 * Org-wide (Enterprise Grid) installs are refused for now: sessions are keyed by workspace, and
 * an org-wide installation has none of its own.
 */

/** No installation for the workspace (never installed, or uninstalled). */
export class WorkspaceNotInstalledError extends KourierError {
  constructor(readonly teamId: string) {
    super('slack_workspace_not_installed', `the app is not installed in Slack workspace ${teamId}`);
  }
}

/** An org-wide (Enterprise Grid) install, which the broker does not take yet. */
export class EnterpriseInstallRefusedError extends KourierError {
  constructor() {
    super(
      'slack_enterprise_install_refused',
      'org-wide Slack installs are not supported; install the app in each workspace',
    );
  }
}

export interface InstallationChange {
  kind: 'installed' | 'removed';
  teamId: string;
}

export function teamKey(teamId: string): string {
  return `team:${teamId}`;
}

export class SealedInstallationStore implements InstallationStore {
  readonly #rows: InstallationRows;
  readonly #keys: Keyring;
  readonly #now: () => number;
  readonly #listeners = new Set<(change: InstallationChange) => void>();

  constructor(rows: InstallationRows, keys: Keyring, now: () => number = Date.now) {
    this.#rows = rows;
    this.#keys = keys;
    this.#now = now;
  }

  /** Told of every install and removal made through this store (surfaces drop cached tokens). */
  onChange(listener: (change: InstallationChange) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  async storeInstallation(installation: Installation): Promise<void> {
    if (installation.isEnterpriseInstall === true || installation.team === undefined)
      throw new EnterpriseInstallRefusedError();
    const teamId = installation.team.id;
    await this.#rows.put(this.#row(teamId, installation));
    this.#tell({ kind: 'installed', teamId });
  }

  async fetchInstallation(query: InstallationQuery<boolean>): Promise<Installation> {
    const teamId = query.teamId;
    if (query.isEnterpriseInstall || teamId === undefined) throw new EnterpriseInstallRefusedError();
    const row = await this.#rows.get(teamKey(teamId));
    if (row === undefined) throw new WorkspaceNotInstalledError(teamId);
    const installation = JSON.parse(this.#keys.open(row.sealed, row.key)) as Installation;
    // Rotation: a row sealed with an older key is sealed again with the newest one it is read.
    if (this.#keys.stale(row.keyId))
      await this.#rows.put(this.#row(teamId, installation)).catch(() => undefined);
    return installation;
  }

  async deleteInstallation(query: InstallationQuery<boolean>): Promise<void> {
    if (query.teamId !== undefined) await this.remove(query.teamId);
  }

  /** Removes a workspace's installation; false when it had none (Slack sends two events on uninstall). */
  async remove(teamId: string): Promise<boolean> {
    const removed = await this.#rows.delete(teamKey(teamId));
    this.#tell({ kind: 'removed', teamId });
    return removed;
  }

  /** The bot user of a workspace's installation (tokens_revoked names bot users). */
  async botUserOf(teamId: string): Promise<string | undefined> {
    return (await this.#rows.get(teamKey(teamId)))?.botUserId ?? undefined;
  }

  /** The workspaces installed. */
  async teams(): Promise<string[]> {
    return (await this.#rows.list()).flatMap((r) => (r.teamId === null ? [] : [r.teamId]));
  }

  /**
   * Seals every row sealed with an older key with the newest one. A row no listed key opens is
   * left as it is and counted (its workspace must install again, or the old key come back): one
   * such row must not keep the broker from starting for every other workspace.
   */
  async reseal(): Promise<{ resealed: number; unreadable: string[] }> {
    let resealed = 0;
    const unreadable: string[] = [];
    for (const row of await this.#rows.list()) {
      if (!this.#keys.stale(row.keyId) || row.teamId === null) continue;
      let installation: Installation;
      try {
        installation = JSON.parse(this.#keys.open(row.sealed, row.key)) as Installation;
      } catch (error) {
        if (!(error instanceof InstallationSealError)) throw error;
        unreadable.push(row.teamId);
        continue;
      }
      await this.#rows.put(this.#row(row.teamId, installation));
      resealed++;
    }
    return { resealed, unreadable };
  }

  #row(teamId: string, installation: Installation): InstallationRow {
    const key = teamKey(teamId);
    const { keyId, sealed } = this.#keys.seal(JSON.stringify(installation), key);
    return {
      key,
      teamId,
      enterpriseId: installation.enterprise?.id ?? null,
      botUserId: installation.bot?.userId ?? null,
      keyId,
      sealed,
      updatedAt: this.#now(),
    };
  }

  #tell(change: InstallationChange): void {
    for (const listener of this.#listeners) listener(change);
  }
}
