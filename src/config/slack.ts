import { createHmac } from 'node:crypto';
import { z } from 'zod';
import { InvalidConfigError } from '../core/errors.js';

/**
 * The Slack surface's settings, read from the environment and validated once at start, so a
 * missing or malformed setting fails the process with a message that names it — never at the
 * first event. Token values are never echoed: a message says what is wrong, not what was given.
 *
 * - SLACK_BOT_TOKEN (always): the bot token, `xoxb-…`.
 * - SLACK_APP_TOKEN: an app-level token, `xapp-…`: Socket Mode.
 * - SLACK_SIGNING_SECRET: HTTP mode; events and interactivity arrive at POST /slack/events on the
 *   broker's HTTP port.
 * - SLACK_MODE (`socket` | `http`): only needed when both of the above are set.
 * - SLACK_API_URL: the Web API base URL (default Slack's); tests and trials point it at a fake.
 *
 * Several workspaces (OAuth mode, HTTP only) instead of SLACK_BOT_TOKEN:
 * - SLACK_CLIENT_ID, SLACK_CLIENT_SECRET: the app's credentials (Basic Information);
 * - SLACK_INSTALLATION_KEYS: the keys that seal each workspace's tokens in the store,
 *   `id:base64key[,…]`, newest first (src/surfaces/slack/installations/keyring.ts);
 * - SLACK_STATE_SECRET: signs the install flow's state (default: derived from the client secret);
 * - SLACK_REDIRECT_URI: the public URL of /slack/oauth_redirect, as listed in the app's
 *   redirect URLs (default: none sent; Slack then uses the only one listed).
 */

export const SLACK_EVENTS_PATH = '/slack/events';
export const DEFAULT_SLACK_API_URL = 'https://slack.com/api/';

export type SlackConnection =
  | { kind: 'socket'; appToken: string }
  | { kind: 'http'; signingSecret: string; path: string };

export const SLACK_INSTALL_PATH = '/slack/install';
export const SLACK_OAUTH_REDIRECT_PATH = '/slack/oauth_redirect';

export interface SlackOAuthConfig {
  clientId: string;
  clientSecret: string;
  stateSecret: string;
  /** The SLACK_INSTALLATION_KEYS setting, checked when the keyring is built. */
  installationKeys: string;
  redirectUri: string | undefined;
  installPath: string;
  redirectPath: string;
}

export interface SlackConfig {
  /** Single-workspace mode: the one bot token. Exactly one of botToken and oauth is set. */
  botToken: string | undefined;
  /** OAuth mode: several workspaces, each installed through /slack/install. */
  oauth: SlackOAuthConfig | undefined;
  /** Always ends with a slash, as the Web API client joins method names to it. */
  apiUrl: string;
  connection: SlackConnection;
}

const optional = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v.trim() === '' ? undefined : v.trim()));

const schema = z.object({
  SLACK_BOT_TOKEN: optional.refine((v) => v === undefined || v.startsWith('xoxb-'), {
    error: 'must be a bot token (it starts with xoxb-)',
  }),
  SLACK_CLIENT_ID: optional.refine((v) => v === undefined || /^[0-9]+\.[0-9]+$/.test(v), {
    error: 'must be the app’s client id (digits.digits, from Basic Information)',
  }),
  SLACK_CLIENT_SECRET: optional.refine((v) => v === undefined || /^\S{8,}$/.test(v), {
    error: 'must be the app’s client secret (8 or more characters, no spaces)',
  }),
  SLACK_STATE_SECRET: optional.refine((v) => v === undefined || v.length >= 16, {
    error: 'must be 16 or more characters',
  }),
  SLACK_INSTALLATION_KEYS: optional,
  SLACK_REDIRECT_URI: optional.refine((v) => v === undefined || isHttpUrl(v), {
    error: 'must be the https URL of /slack/oauth_redirect',
  }),
  SLACK_APP_TOKEN: optional.refine((v) => v === undefined || v.startsWith('xapp-'), {
    error: 'must be an app-level token (it starts with xapp-)',
  }),
  SLACK_SIGNING_SECRET: optional.refine((v) => v === undefined || /^\S{8,}$/.test(v), {
    error: 'must be the signing secret from the app settings (8 or more characters, no spaces)',
  }),
  SLACK_MODE: optional.refine((v) => v === undefined || v === 'socket' || v === 'http', {
    error: 'must be "socket" or "http"',
  }),
  SLACK_API_URL: optional.refine((v) => v === undefined || isHttpUrl(v), {
    error: 'must be an http(s) URL, such as https://slack.com/api/',
  }),
});

function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return url.protocol === 'https:' || url.protocol === 'http:';
  } catch {
    return false;
  }
}

/** Whether the environment asks for Slack at all (local mode runs without it). */
export function slackRequested(env: Readonly<Record<string, string | undefined>>): boolean {
  return (env.SLACK_BOT_TOKEN ?? '').trim() !== '' || (env.SLACK_CLIENT_ID ?? '').trim() !== '';
}

/** Reads and validates the Slack settings; throws InvalidConfigError naming the setting. */
export function loadSlackConfig(env: Readonly<Record<string, string | undefined>>): SlackConfig {
  const parsed = schema.safeParse({
    SLACK_BOT_TOKEN: env.SLACK_BOT_TOKEN,
    SLACK_CLIENT_ID: env.SLACK_CLIENT_ID,
    SLACK_CLIENT_SECRET: env.SLACK_CLIENT_SECRET,
    SLACK_STATE_SECRET: env.SLACK_STATE_SECRET,
    SLACK_INSTALLATION_KEYS: env.SLACK_INSTALLATION_KEYS,
    SLACK_REDIRECT_URI: env.SLACK_REDIRECT_URI,
    SLACK_APP_TOKEN: env.SLACK_APP_TOKEN,
    SLACK_SIGNING_SECRET: env.SLACK_SIGNING_SECRET,
    SLACK_MODE: env.SLACK_MODE,
    SLACK_API_URL: env.SLACK_API_URL,
  });
  if (!parsed.success) {
    // Only the setting's name and our own wording: zod's issue messages here are ours, and
    // `input` (which would hold the token) is never read.
    const problems = parsed.error.issues.map(
      (issue) => `${String(issue.path[0] ?? 'setting')} ${issue.message}`,
    );
    throw new InvalidConfigError(`invalid Slack settings: ${problems.join('; ')}`);
  }
  const s = parsed.data;
  const apiUrl = withSlash(s.SLACK_API_URL ?? DEFAULT_SLACK_API_URL);
  if (s.SLACK_CLIENT_ID !== undefined) return oauthConfig(s, apiUrl);
  if (s.SLACK_BOT_TOKEN === undefined)
    throw new InvalidConfigError(
      'invalid Slack settings: SLACK_BOT_TOKEN is required (the bot token, xoxb-…), or SLACK_CLIENT_ID for several workspaces',
    );
  const mode = s.SLACK_MODE ?? inferMode(s.SLACK_APP_TOKEN, s.SLACK_SIGNING_SECRET);
  if (mode === 'socket') {
    if (s.SLACK_APP_TOKEN === undefined)
      throw new InvalidConfigError('invalid Slack settings: SLACK_APP_TOKEN is required for Socket Mode');
    return {
      botToken: s.SLACK_BOT_TOKEN,
      oauth: undefined,
      apiUrl,
      connection: { kind: 'socket', appToken: s.SLACK_APP_TOKEN },
    };
  }
  if (s.SLACK_SIGNING_SECRET === undefined)
    throw new InvalidConfigError('invalid Slack settings: SLACK_SIGNING_SECRET is required for HTTP mode');
  return {
    botToken: s.SLACK_BOT_TOKEN,
    oauth: undefined,
    apiUrl,
    connection: { kind: 'http', signingSecret: s.SLACK_SIGNING_SECRET, path: SLACK_EVENTS_PATH },
  };
}

/**
 * OAuth mode. Bolt cannot take an environment token together with its installer, so the two
 * modes exclude each other here, with a message, rather than in Bolt's constructor. The install
 * routes are served by the HTTP receiver: Socket Mode is not offered with several workspaces.
 */
function oauthConfig(s: z.infer<typeof schema>, apiUrl: string): SlackConfig {
  const fail = (what: string): never => {
    throw new InvalidConfigError(`invalid Slack settings: ${what}`);
  };
  if (s.SLACK_BOT_TOKEN !== undefined)
    fail(
      'SLACK_BOT_TOKEN and SLACK_CLIENT_ID are both set; use one workspace’s token, or OAuth for several, not both',
    );
  if (s.SLACK_CLIENT_SECRET === undefined) fail('SLACK_CLIENT_SECRET is required with SLACK_CLIENT_ID');
  if (s.SLACK_INSTALLATION_KEYS === undefined)
    fail(
      'SLACK_INSTALLATION_KEYS is required with SLACK_CLIENT_ID (the keys that seal each workspace’s token)',
    );
  if (s.SLACK_SIGNING_SECRET === undefined)
    fail('SLACK_SIGNING_SECRET is required with SLACK_CLIENT_ID (OAuth mode is HTTP mode)');
  if (s.SLACK_MODE === 'socket' || (s.SLACK_APP_TOKEN !== undefined && s.SLACK_MODE !== 'http'))
    fail('several workspaces (SLACK_CLIENT_ID) need HTTP mode; unset SLACK_APP_TOKEN or set SLACK_MODE=http');
  const clientSecret = s.SLACK_CLIENT_SECRET ?? '';
  return {
    botToken: undefined,
    oauth: {
      clientId: s.SLACK_CLIENT_ID ?? '',
      clientSecret,
      // Every replica derives the same one, so a state made by one is accepted by another.
      stateSecret:
        s.SLACK_STATE_SECRET ??
        createHmac('sha256', clientSecret).update('agentkourier oauth state').digest('hex'),
      installationKeys: s.SLACK_INSTALLATION_KEYS ?? '',
      redirectUri: s.SLACK_REDIRECT_URI,
      installPath: SLACK_INSTALL_PATH,
      redirectPath: SLACK_OAUTH_REDIRECT_PATH,
    },
    apiUrl,
    connection: { kind: 'http', signingSecret: s.SLACK_SIGNING_SECRET ?? '', path: SLACK_EVENTS_PATH },
  };
}

function inferMode(appToken: string | undefined, signingSecret: string | undefined): 'socket' | 'http' {
  if (appToken !== undefined && signingSecret !== undefined) {
    throw new InvalidConfigError(
      'invalid Slack settings: both SLACK_APP_TOKEN (Socket Mode) and SLACK_SIGNING_SECRET (HTTP mode) are set; set SLACK_MODE to "socket" or "http"',
    );
  }
  if (appToken !== undefined) return 'socket';
  if (signingSecret !== undefined) return 'http';
  throw new InvalidConfigError(
    'invalid Slack settings: set SLACK_APP_TOKEN (Socket Mode) or SLACK_SIGNING_SECRET (HTTP mode)',
  );
}

function withSlash(url: string): string {
  return url.endsWith('/') ? url : `${url}/`;
}
