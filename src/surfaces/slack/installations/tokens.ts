import type { Clock } from '../../../core/clock.js';
import type { WorkspaceTokens } from '../web-api/client.js';
import { type SealedInstallationStore, WorkspaceNotInstalledError } from './store.js';

/** A workspace's bot token as its installation holds it now (refreshed first if it ends soon). */
export type FetchToken = (team: string) => Promise<{ token: string | undefined; expiresAtSec?: number }>;

/**
 * Tokens of installed workspaces, each read from its installation (through the token rotation,
 * so a rotating token is refreshed before it expires) and kept a short while: an answer that
 * streams makes a call a second, and the token changes at most every few hours. Never kept past
 * its own end. An install or an uninstall seen by this replica drops the cached token at once;
 * another replica's uninstall shows within `ttlMs` (meanwhile Slack refuses the revoked token,
 * which the call reports). Calls that miss the cache at the same moment share one read.
 */
export class InstalledTokens implements WorkspaceTokens {
  readonly #fetch: FetchToken;
  readonly #clock: Clock;
  readonly #ttlMs: number;
  readonly #cache = new Map<string, { token: string; until: number }>();
  readonly #reading = new Map<string, Promise<string>>();

  constructor(options: {
    fetch: FetchToken;
    /** Told of installs and removals made on this replica. */
    store: Pick<SealedInstallationStore, 'onChange'>;
    clock: Clock;
    ttlMs?: number;
  }) {
    this.#fetch = options.fetch;
    this.#clock = options.clock;
    this.#ttlMs = options.ttlMs ?? 60_000;
    options.store.onChange((change) => this.#cache.delete(change.teamId));
  }

  tokenFor(team: string): Promise<string> {
    const cached = this.#cache.get(team);
    if (cached !== undefined && cached.until > this.#clock.now()) return Promise.resolve(cached.token);
    const under = this.#reading.get(team);
    if (under !== undefined) return under;
    const reading = this.#read(team).finally(() => this.#reading.delete(team));
    this.#reading.set(team, reading);
    return reading;
  }

  async #read(team: string): Promise<string> {
    const now = this.#clock.now();
    const { token, expiresAtSec } = await this.#fetch(team);
    if (token === undefined) throw new WorkspaceNotInstalledError(team);
    const until = Math.min(
      now + this.#ttlMs,
      expiresAtSec === undefined ? Number.POSITIVE_INFINITY : expiresAtSec * 1000,
    );
    if (until > now) this.#cache.set(team, { token, until });
    return token;
  }
}
