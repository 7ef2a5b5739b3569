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
 */

export const SLACK_EVENTS_PATH = '/slack/events';
export const DEFAULT_SLACK_API_URL = 'https://slack.com/api/';

export type SlackConnection =
  | { kind: 'socket'; appToken: string }
  | { kind: 'http'; signingSecret: string; path: string };

export interface SlackConfig {
  botToken: string;
  /** Always ends with a slash, as the Web API client joins method names to it. */
  apiUrl: string;
  connection: SlackConnection;
}

const optional = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v.trim() === '' ? undefined : v.trim()));

const schema = z.object({
  SLACK_BOT_TOKEN: z
    .string({ error: 'is required (the bot token, xoxb-…)' })
    .trim()
    .min(1, { error: 'is required (the bot token, xoxb-…)' })
    .refine((v) => v.startsWith('xoxb-'), { error: 'must be a bot token (it starts with xoxb-)' }),
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
  return (env.SLACK_BOT_TOKEN ?? '').trim() !== '';
}

/** Reads and validates the Slack settings; throws InvalidConfigError naming the setting. */
export function loadSlackConfig(env: Readonly<Record<string, string | undefined>>): SlackConfig {
  const parsed = schema.safeParse({
    SLACK_BOT_TOKEN: env.SLACK_BOT_TOKEN,
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
  const mode = s.SLACK_MODE ?? inferMode(s.SLACK_APP_TOKEN, s.SLACK_SIGNING_SECRET);
  if (mode === 'socket') {
    if (s.SLACK_APP_TOKEN === undefined)
      throw new InvalidConfigError('invalid Slack settings: SLACK_APP_TOKEN is required for Socket Mode');
    return {
      botToken: s.SLACK_BOT_TOKEN,
      apiUrl,
      connection: { kind: 'socket', appToken: s.SLACK_APP_TOKEN },
    };
  }
  if (s.SLACK_SIGNING_SECRET === undefined)
    throw new InvalidConfigError('invalid Slack settings: SLACK_SIGNING_SECRET is required for HTTP mode');
  return {
    botToken: s.SLACK_BOT_TOKEN,
    apiUrl,
    connection: { kind: 'http', signingSecret: s.SLACK_SIGNING_SECRET, path: SLACK_EVENTS_PATH },
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
