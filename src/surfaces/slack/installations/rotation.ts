import type { Installation, InstallationQuery, InstallationStore } from '@slack/oauth';
import type { Logger } from 'pino';
import { z } from 'zod';
import type { Clock } from '../../../core/clock.js';
import { KourierError } from '../../../core/errors.js';
import { createWebApiCaller } from '../web-api/client.js';
import { SlackMalformedResponseError, SlackPlatformError } from '../web-api/errors.js';
import type { SealedInstallationStore } from './store.js';

/**
 * Token rotation (`token_rotation_enabled`), done in one place. Slack's bot tokens then expire
 * (after 12 hours) and come with a refresh token that oauth.v2.access exchanges, once, for the
 * next pair: a used refresh token is revoked. Bolt's InstallProvider would refresh a token in
 * every `authorize` that finds it near its end — for each event, and for each cache miss of the
 * surface's tokens — with nothing to keep two of them, on one replica or on two, from spending
 * the same refresh token. The loser's exchange is refused, and once the old token has expired
 * its calls fail.
 *
 * So this store refreshes a token itself when it is read within `windowSec` of its end: one
 * refresh at a time per workspace in this process (the others wait for it), and a refresh that
 * is refused reads the installation again, because another replica that spent the token first
 * has stored its new pair. What it hands to Bolt carries no refresh token, so Bolt never
 * refreshes on its own.
 */

/**
 * A workspace's token expired and Slack refused its refresh: the workspace's calls fail as
 * Slack refusals (not retried) until someone installs the app again.
 */
export class SlackTokenRefreshError extends SlackPlatformError {
  constructor(
    readonly teamId: string,
    slackError: string,
  ) {
    super('oauth.v2.access', slackError);
  }
}

/** oauth.v2.access with grant_type=refresh_token: the next access token and refresh token. */
export type RefreshExchange = (
  refreshToken: string,
) => Promise<{ accessToken: string; refreshToken: string; expiresInSec: number }>;

/** oauth.v2.access with grant_type=refresh_token, with the app's credentials, at the configured API. */
export function refreshExchange(
  app: { clientId: string; clientSecret: string },
  apiUrl: string,
  logger: Logger,
): RefreshExchange {
  // No token of its own: oauth.v2.access takes the app's credentials in the body.
  const caller = createWebApiCaller({ token: undefined, apiUrl, logger });
  return async (refreshToken) => {
    const answer = await caller.call('oauth.v2.access', {
      client_id: app.clientId,
      client_secret: app.clientSecret,
      grant_type: 'refresh_token',
      refresh_token: refreshToken,
    });
    const pair = refreshAnswer.safeParse(answer);
    if (!pair.success) throw new SlackMalformedResponseError('oauth.v2.access');
    return {
      accessToken: pair.data.access_token,
      refreshToken: pair.data.refresh_token,
      expiresInSec: pair.data.expires_in,
    };
  };
}

const refreshAnswer = z.object({
  access_token: z.string().min(1),
  refresh_token: z.string().min(1),
  expires_in: z.number().int().positive(),
});

export interface TokenRotationOptions {
  store: SealedInstallationStore;
  refresh: RefreshExchange;
  clock: Clock;
  logger: Logger;
  /** Refresh a token read within this many seconds of its end. Default two hours, as Bolt. */
  windowSec?: number;
  /** After a refresh token found spent: how often, and how far apart, to look for another replica's pair. */
  reread?: { attempts: number; pauseMs: number };
  /** After a failed refresh, how long to use the old token (or fail) before trying again. Default 30 s. */
  retryAfterMs?: number;
}

export class RotatingInstallationStore implements InstallationStore {
  readonly #o: TokenRotationOptions;
  readonly #windowSec: number;
  readonly #reread: { attempts: number; pauseMs: number };
  readonly #retryAfterMs: number;
  /** The refresh under way per workspace: every reader of that workspace waits for the one. */
  readonly #refreshing = new Map<string, Promise<Installation>>();
  /** Workspaces whose last refresh failed, and until when none is tried again (ms). */
  readonly #failedUntil = new Map<string, { until: number; slackError: string }>();

  constructor(options: TokenRotationOptions) {
    this.#o = options;
    this.#windowSec = options.windowSec ?? 7_200;
    this.#reread = options.reread ?? { attempts: 10, pauseMs: 200 };
    this.#retryAfterMs = options.retryAfterMs ?? 30_000;
  }

  storeInstallation(installation: Installation): Promise<void> {
    return this.#o.store.storeInstallation(installation);
  }

  deleteInstallation(query: InstallationQuery<boolean>): Promise<void> {
    return this.#o.store.deleteInstallation(query);
  }

  /** For Bolt: the installation with a live token and without its refresh token. */
  async fetchInstallation(query: InstallationQuery<boolean>): Promise<Installation> {
    return withoutRefreshToken(await this.fresh(query));
  }

  /** The installation, its token refreshed first if it is near its end. */
  async fresh(query: InstallationQuery<boolean>): Promise<Installation> {
    const installation = await this.#o.store.fetchInstallation(query);
    if (!this.#nearEnd(installation)) return installation;
    const teamId = query.teamId ?? '';
    // A refresh failed a moment ago: no new one for every call meanwhile.
    const failed = this.#failedUntil.get(teamId);
    if (failed !== undefined && failed.until > this.#o.clock.now()) {
      if (this.#expired(installation)) throw new SlackTokenRefreshError(teamId, failed.slackError);
      return installation;
    }
    const under = this.#refreshing.get(teamId);
    if (under !== undefined) return under;
    const refreshing = this.#refresh(query, teamId).finally(() => this.#refreshing.delete(teamId));
    this.#refreshing.set(teamId, refreshing);
    return refreshing;
  }

  async #refresh(query: InstallationQuery<boolean>, teamId: string): Promise<Installation> {
    // Read again under the single flight: a refresh that ended just now has stored its pair.
    const current = await this.#o.store.fetchInstallation(query);
    const bot = current.bot;
    if (!this.#nearEnd(current) || bot?.refreshToken === undefined) return current;
    const spent = bot.refreshToken;
    let next: Awaited<ReturnType<RefreshExchange>>;
    try {
      next = await this.#o.refresh(spent);
    } catch (error) {
      return this.#afterFailure(query, teamId, current, spent, slackErrorOf(error));
    }
    const refreshed: Installation = {
      ...current,
      bot: {
        ...bot,
        token: next.accessToken,
        refreshToken: next.refreshToken,
        expiresAt: this.#nowSec() + next.expiresInSec,
      },
    };
    await this.#keep(teamId, refreshed);
    this.#failedUntil.delete(teamId);
    this.#o.logger.info({ team: teamId }, 'refreshed the Slack bot token of a workspace');
    return refreshed;
  }

  /**
   * The refresh failed. Refused as spent (`invalid_refresh_token`) most often means another
   * replica spent it first: its new pair shows in the store within moments. Otherwise the old
   * token is used while it lasts, and no refresh is tried again for `retryAfterMs`.
   */
  async #afterFailure(
    query: InstallationQuery<boolean>,
    teamId: string,
    current: Installation,
    spent: string,
    slackError: string,
  ): Promise<Installation> {
    if (slackError === 'invalid_refresh_token') {
      for (let attempt = 0; attempt < this.#reread.attempts; attempt++) {
        const seen = await this.#o.store.fetchInstallation(query);
        if (seen.bot?.refreshToken !== spent) return seen;
        await this.#o.clock.sleep(this.#reread.pauseMs);
      }
    }
    this.#failedUntil.set(teamId, { until: this.#o.clock.now() + this.#retryAfterMs, slackError });
    if (this.#expired(current)) {
      this.#o.logger.error(
        { team: teamId, slackError },
        'the Slack bot token of a workspace expired and could not be refreshed; if this lasts, install the app in that workspace again',
      );
      throw new SlackTokenRefreshError(teamId, slackError);
    }
    this.#o.logger.warn(
      { team: teamId, slackError },
      'could not refresh the Slack bot token of a workspace; using it until it expires',
    );
    return current;
  }

  /**
   * The old refresh token is spent: the new pair exists only here until it is stored, so a
   * failed write is tried again a few times before it is given up (and said so).
   */
  async #keep(teamId: string, refreshed: Installation): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await this.#o.store.storeInstallation(refreshed);
        return;
      } catch (error) {
        if (attempt >= 5) {
          this.#o.logger.error(
            { team: teamId, err: error instanceof Error ? error.name : typeof error },
            'could not store the refreshed Slack token of a workspace; once its current token expires, install the app there again',
          );
          throw error;
        }
        await this.#o.clock.sleep(250 * 2 ** attempt);
      }
    }
  }

  #expired(installation: Installation): boolean {
    const expiresAt = installation.bot?.expiresAt;
    return expiresAt !== undefined && expiresAt <= this.#nowSec();
  }

  #nearEnd(installation: Installation): boolean {
    const bot = installation.bot;
    if (bot?.refreshToken === undefined || bot.expiresAt === undefined) return false;
    return bot.expiresAt - this.#nowSec() <= this.#windowSec;
  }

  #nowSec(): number {
    return Math.floor(this.#o.clock.now() / 1000);
  }
}

function withoutRefreshToken(installation: Installation): Installation {
  if (installation.bot?.refreshToken === undefined) return installation;
  const { refreshToken: _spentHere, ...bot } = installation.bot;
  return { ...installation, bot };
}

/** Slack's error string (`invalid_refresh_token`), or the kind of failure it was. */
function slackErrorOf(error: unknown): string {
  if (error instanceof SlackPlatformError) return error.slackError;
  return error instanceof KourierError ? error.code : 'refresh_failed';
}
