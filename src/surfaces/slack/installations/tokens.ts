import type { InstallationQuery } from '@slack/oauth';
import type { Clock } from '../../../core/ports.js';
import { type SealedInstallationStore, WorkspaceNotInstalledError } from './store.js';

/**
 * Which bot token a call to a workspace is made with. One token from the environment
 * (single-workspace mode), or each workspace's own from its installation (OAuth mode).
 */
export interface WorkspaceTokens {
  /** Throws WorkspaceNotInstalledError for a workspace the app is not (or no longer) in. */
  tokenFor(team: string): Promise<string>;
}

/** Bolt's InstallProvider.authorize: fetches the installation and refreshes a token that expires soon. */
export type Authorize = (query: InstallationQuery<boolean>) => Promise<{ botToken?: string }>;

/**
 * Tokens of installed workspaces, each looked up through Bolt's `authorize` (so a rotating
 * token is refreshed before it expires) and kept a short while: an answer that streams makes a
 * call a second, and the token changes at most every few hours. An install or an uninstall seen
 * by this replica drops the cached token at once; another replica's uninstall shows within `ttlMs`
 * (meanwhile Slack refuses the revoked token, which the call reports).
 */
export class InstalledTokens implements WorkspaceTokens {
  readonly #authorize: Authorize;
  readonly #clock: Clock;
  readonly #ttlMs: number;
  readonly #cache = new Map<string, { token: string; until: number }>();

  constructor(options: {
    authorize: Authorize;
    store: SealedInstallationStore;
    clock: Clock;
    ttlMs?: number;
  }) {
    this.#authorize = options.authorize;
    this.#clock = options.clock;
    this.#ttlMs = options.ttlMs ?? 60_000;
    options.store.onChange((change) => this.#cache.delete(change.teamId));
  }

  async tokenFor(team: string): Promise<string> {
    const now = this.#clock.now();
    const cached = this.#cache.get(team);
    if (cached !== undefined && cached.until > now) return cached.token;
    let token: string | undefined;
    try {
      token = (await this.#authorize({ teamId: team, isEnterpriseInstall: false, enterpriseId: undefined }))
        .botToken;
    } catch (error) {
      const original = (error as { original?: unknown }).original ?? error;
      if (original instanceof WorkspaceNotInstalledError) throw original;
      throw error;
    }
    if (token === undefined) throw new WorkspaceNotInstalledError(team);
    this.#cache.set(team, { token, until: now + this.#ttlMs });
    return token;
  }
}
