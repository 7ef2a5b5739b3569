import type { App } from '@slack/bolt';
import type { Logger } from 'pino';
import type { SlackOAuthConfig } from '../../../config/slack.js';
import type { Clock } from '../../../core/clock.js';
import type { InstallationRows } from '../../../core/installation-store.js';
import type { Bounded, SlackListeners } from '../listeners.js';
import { requiredScopes } from '../web-api/scopes.js';
import { Keyring } from './keyring.js';
import { RotatingInstallationStore, refreshExchange } from './rotation.js';
import { SealedInstallationStore } from './store.js';
import { InstalledTokens } from './tokens.js';

/**
 * OAuth mode, assembled: the keyring, the sealed installation store, each workspace's tokens,
 * the options Bolt's HTTP receiver needs to serve the install page and the redirect, and what
 * an uninstall does. One install of the broker then serves every workspace that installs it.
 */
export class Workspaces implements SlackListeners {
  readonly store: SealedInstallationStore;
  readonly tokens: InstalledTokens;
  /** What Bolt reads installations through: the store, with rotating tokens refreshed in one place. */
  readonly rotation: RotatingInstallationStore;
  readonly #config: SlackOAuthConfig;
  readonly #apiUrl: string;
  readonly #logger: Logger;
  readonly #removed = new Set<(teamId: string) => void>();

  private constructor(
    config: SlackOAuthConfig,
    apiUrl: string,
    store: SealedInstallationStore,
    clock: Clock,
    logger: Logger,
  ) {
    this.#config = config;
    this.#apiUrl = apiUrl;
    this.#logger = logger;
    this.store = store;
    this.rotation = new RotatingInstallationStore({
      store,
      refresh: refreshExchange(config, apiUrl, logger),
      clock,
      logger,
    });
    this.tokens = new InstalledTokens({
      fetch: async (team) => {
        const { bot } = await this.rotation.fresh({
          teamId: team,
          isEnterpriseInstall: false,
          enterpriseId: undefined,
        });
        return {
          token: bot?.token,
          ...(bot?.expiresAt === undefined ? {} : { expiresAtSec: bot.expiresAt }),
        };
      },
      store,
      clock,
    });
  }

  /** Checks the keys (a bad setting fails the start) and re-seals rows sealed with an older key. */
  static async open(options: {
    config: SlackOAuthConfig;
    apiUrl: string;
    rows: InstallationRows;
    clock: Clock;
    logger: Logger;
  }): Promise<Workspaces> {
    const keys = Keyring.parse(options.config.installationKeys);
    const store = new SealedInstallationStore(options.rows, keys, () => options.clock.now());
    const { resealed, unreadable } = await store.reseal();
    const teams = await store.teams();
    options.logger.info({ workspaces: teams.length, resealed }, 'Slack installations opened');
    if (unreadable.length > 0)
      options.logger.error(
        { workspaces: unreadable },
        'no key in SLACK_INSTALLATION_KEYS opens these workspaces’ installations: they must install the app again',
      );
    return new Workspaces(options.config, options.apiUrl, store, options.clock, options.logger);
  }

  /** Called with a workspace's team id after its installation is removed (uninstall, revoked token). */
  onRemoved(listener: (teamId: string) => void): void {
    this.#removed.add(listener);
  }

  /** The HTTP receiver's OAuth options: the install page and the redirect on the broker's port. */
  receiverOptions(): {
    clientId: string;
    clientSecret: string;
    stateSecret: string;
    scopes: string[];
    installationStore: RotatingInstallationStore;
    redirectUri?: string;
    installerOptions: Record<string, unknown>;
  } {
    const c = this.#config;
    return {
      clientId: c.clientId,
      clientSecret: c.clientSecret,
      stateSecret: c.stateSecret,
      scopes: requiredScopes(),
      installationStore: this.rotation,
      ...(c.redirectUri === undefined ? {} : { redirectUri: c.redirectUri }),
      installerOptions: {
        installPath: c.installPath,
        redirectUriPath: c.redirectPath,
        // oauth.v2.access and auth.test go where every other call goes (a fake, in tests).
        clientOptions: { slackApiUrl: this.#apiUrl },
        callbackOptions: {
          success: (
            installation: { team?: { id: string } },
            _options: unknown,
            _req: unknown,
            res: ResponseLike,
          ) => {
            this.#logger.info({ team: installation.team?.id }, 'the app was installed in a Slack workspace');
            page(res, 200, 'Agent Kourier is installed in your Slack workspace. You can close this page.');
          },
          failure: (error: { code?: string }, _options: unknown, _req: unknown, res: ResponseLike) => {
            this.#logger.warn({ code: error.code ?? 'unknown' }, 'a Slack install failed');
            page(res, 400, 'The install did not complete. Start it again from the install page.');
          },
        },
      },
    };
  }

  /**
   * An uninstall and a revoked bot token remove the workspace. Bolt looks up no token for these
   * two (the installation may be gone): the context has the team.
   */
  register(app: App, bounded: Bounded): void {
    app.event('app_uninstalled', async ({ context }) => {
      if (context.teamId !== undefined) await bounded(this.removed(context.teamId));
    });
    app.event('tokens_revoked', async ({ event, context }) => {
      if (context.teamId !== undefined) await bounded(this.removed(context.teamId, event.tokens.bot ?? []));
    });
  }

  /**
   * app_uninstalled, or tokens_revoked naming the installation's bot user: the installation is
   * deleted (the second of the two events finds nothing, which is fine) and the listeners stop
   * the workspace's sessions. A user token revoked alone changes nothing: the broker uses none.
   */
  async removed(teamId: string, revokedBotUsers?: readonly string[]): Promise<void> {
    if (revokedBotUsers !== undefined) {
      const bot = await this.store.botUserOf(teamId);
      if (bot === undefined || !revokedBotUsers.includes(bot)) return;
    }
    const had = await this.store.remove(teamId);
    if (had) this.#logger.info({ team: teamId }, 'the app was removed from a Slack workspace');
    for (const listener of this.#removed) listener(teamId);
  }
}

interface ResponseLike {
  writeHead(status: number, headers: Record<string, string>): unknown;
  end(body: string): unknown;
}

function page(res: ResponseLike, status: number, text: string): void {
  res.writeHead(status, { 'content-type': 'text/html; charset=utf-8' });
  res.end(
    `<!doctype html><html><head><meta charset="utf-8"><title>Agent Kourier</title></head><body><p>${text}</p></body></html>`,
  );
}
