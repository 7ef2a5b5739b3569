import { randomBytes } from 'node:crypto';
import type { FakeOAuthOptions } from './api.js';
import type { Tenant } from './tenant.js';
import { type Args, type Result, SlackRefusal, str } from './values.js';

/**
 * Slack's side of the OAuth v2 install: `authorize` stands for the person approving the app on
 * slack.com/oauth/v2/authorize (it hands out the code the redirect carries), and
 * `oauth.v2.access` exchanges that code, once, for the workspace's bot token. With token rotation
 * on, the token expires and comes with a refresh token, which oauth.v2.access exchanges (once)
 * for the next pair (the token rotation guide: a used refresh token is revoked).
 *
 * Source: the oauth.v2.access method page (arguments, answer, errors) as kept in
 * slack-ruby/slack-api-ref; docs/reference/slack.md, "OAuth and installations". The SDK sends
 * client_id and client_secret as form fields (Slack prefers HTTP Basic auth; both are taken).
 * Assumed: a code lives ten minutes (Slack documents codes as short-lived, without a number).
 */

const CODE_TTL_MS = 10 * 60_000;

export class OAuthDesk {
  readonly #options: FakeOAuthOptions;
  readonly #codes = new Map<string, { teamId: string; redirectUri: string | undefined; until: number }>();

  constructor(options: FakeOAuthOptions) {
    this.#options = options;
  }

  /** A person approved the install in `teamId`: the code Slack's redirect would carry. */
  authorize(teamId: string, now: number, redirectUri?: string): string {
    const code = `${teamId}.${randomBytes(12).toString('hex')}`;
    this.#codes.set(code, { teamId, redirectUri, until: now + CODE_TTL_MS });
    return code;
  }

  exchange(args: Args, authorization: string | undefined, tenants: readonly Tenant[], now: number): Result {
    let clientId = str(args, 'client_id');
    let clientSecret = str(args, 'client_secret');
    if (authorization?.startsWith('Basic ')) {
      const [id, secret] = Buffer.from(authorization.slice('Basic '.length), 'base64')
        .toString('utf8')
        .split(':');
      clientId ??= id;
      clientSecret ??= secret;
    }
    if (clientId !== this.#options.clientId) throw new SlackRefusal('invalid_client_id');
    if (clientSecret !== this.#options.clientSecret) throw new SlackRefusal('bad_client_secret');
    const grant = str(args, 'grant_type') ?? 'authorization_code';
    if (grant === 'refresh_token') return this.#refresh(args, tenants, now);
    if (grant !== 'authorization_code') throw new SlackRefusal('invalid_grant_type');
    const code = str(args, 'code');
    const issued = code === undefined ? undefined : this.#codes.get(code);
    if (code === undefined || issued === undefined || issued.until < now)
      throw new SlackRefusal('invalid_code');
    this.#codes.delete(code);
    if (issued.redirectUri !== undefined && str(args, 'redirect_uri') !== issued.redirectUri)
      throw new SlackRefusal('bad_redirect_uri');
    const tenant = tenants.find((t) => t.ws.teamId === issued.teamId);
    if (tenant === undefined) throw new SlackRefusal('invalid_code');
    tenant.state = 'installed';
    const { ws } = tenant;
    return {
      app_id: ws.appId,
      authed_user: { id: this.#options.installerUserId ?? 'U0INSTALLER' },
      scope: this.#scope(),
      token_type: 'bot',
      access_token: tenant.token,
      bot_user_id: ws.botUserId,
      team: { id: ws.teamId, name: ws.teamName },
      enterprise: null,
      is_enterprise_install: false,
      ...this.#rotate(tenant, now),
    };
  }

  /** grant_type=refresh_token: a refresh token not used yet, for a new access and refresh token. */
  #refresh(args: Args, tenants: readonly Tenant[], now: number): Result {
    const used = str(args, 'refresh_token');
    const tenant = used === undefined ? undefined : tenants.find((t) => t.refreshTokens.has(used));
    if (used === undefined || tenant === undefined || tenant.state !== 'installed')
      throw new SlackRefusal('invalid_refresh_token');
    tenant.refreshTokens.delete(used);
    const { ws } = tenant;
    return {
      app_id: ws.appId,
      scope: this.#scope(),
      token_type: 'bot',
      bot_user_id: ws.botUserId,
      team: { id: ws.teamId, name: ws.teamName },
      enterprise: null,
      is_enterprise_install: false,
      ...this.#rotate(tenant, now),
    };
  }

  /** With rotation on: a new expiring access token and a refresh token for the answer. */
  #rotate(tenant: Tenant, now: number): Result {
    const lifetimes = this.#options.rotation?.lifetimesSec;
    if (lifetimes === undefined || lifetimes.length === 0) return {};
    const n = tenant.rotated.size;
    const expiresIn = lifetimes[Math.min(n, lifetimes.length - 1)] ?? 43_200;
    const access = `xoxe.xoxb-${tenant.ws.teamId}-${n + 1}-${randomBytes(8).toString('hex')}`;
    const refresh = `xoxe-1-${randomBytes(16).toString('hex')}`;
    tenant.rotated.set(access, now + expiresIn * 1000);
    tenant.refreshTokens.add(refresh);
    return { access_token: access, refresh_token: refresh, expires_in: expiresIn };
  }

  #scope(): string {
    return (this.#options.scopes ?? ['app_mentions:read', 'chat:write']).join(',');
  }
}
