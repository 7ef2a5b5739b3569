import { describe, expect, it } from 'vitest';
import { InvalidConfigError } from '../core/errors.js';
import { loadSlackConfig, slackRequested } from './slack.js';

const BOT = 'xoxb-1-secret-token';

function failure(env: Record<string, string | undefined>): InvalidConfigError {
  try {
    loadSlackConfig(env);
  } catch (error) {
    if (error instanceof InvalidConfigError) return error;
    throw error;
  }
  throw new Error('expected the settings to be refused');
}

describe('loadSlackConfig', () => {
  it('chooses HTTP mode with a signing secret: events at POST /slack/events', () => {
    expect(loadSlackConfig({ SLACK_BOT_TOKEN: BOT, SLACK_SIGNING_SECRET: 'abcdef0123456789' })).toEqual({
      botToken: BOT,
      oauth: undefined,
      apiUrl: 'https://slack.com/api/',
      connection: { kind: 'http', signingSecret: 'abcdef0123456789', path: '/slack/events' },
    });
  });

  it('chooses Socket Mode with an app token, and takes an API URL for a fake', () => {
    expect(
      loadSlackConfig({
        SLACK_BOT_TOKEN: BOT,
        SLACK_APP_TOKEN: 'xapp-1-abc',
        SLACK_API_URL: 'http://127.0.0.1:9/api',
      }),
    ).toEqual({
      botToken: BOT,
      oauth: undefined,
      apiUrl: 'http://127.0.0.1:9/api/',
      connection: { kind: 'socket', appToken: 'xapp-1-abc' },
    });
  });

  it('needs SLACK_MODE only when both are set', () => {
    const both = {
      SLACK_BOT_TOKEN: BOT,
      SLACK_APP_TOKEN: 'xapp-1-abc',
      SLACK_SIGNING_SECRET: 'abcdef0123456789',
    };
    expect(failure(both).message).toContain('SLACK_MODE');
    expect(loadSlackConfig({ ...both, SLACK_MODE: 'http' }).connection.kind).toBe('http');
    expect(loadSlackConfig({ ...both, SLACK_MODE: 'socket' }).connection.kind).toBe('socket');
  });

  it.each([
    [{}, 'SLACK_BOT_TOKEN is required'],
    [
      { SLACK_BOT_TOKEN: 'xoxp-user-token', SLACK_SIGNING_SECRET: 'abcdef0123456789' },
      'SLACK_BOT_TOKEN must be a bot token',
    ],
    [{ SLACK_BOT_TOKEN: BOT }, 'set SLACK_APP_TOKEN (Socket Mode) or SLACK_SIGNING_SECRET (HTTP mode)'],
    [
      { SLACK_BOT_TOKEN: BOT, SLACK_APP_TOKEN: 'xoxb-wrong-kind' },
      'SLACK_APP_TOKEN must be an app-level token',
    ],
    [{ SLACK_BOT_TOKEN: BOT, SLACK_SIGNING_SECRET: 'short' }, 'SLACK_SIGNING_SECRET must be'],
    [
      { SLACK_BOT_TOKEN: BOT, SLACK_SIGNING_SECRET: 'abcdef0123456789', SLACK_API_URL: 'ftp://x' },
      'SLACK_API_URL must be',
    ],
    [
      { SLACK_BOT_TOKEN: BOT, SLACK_SIGNING_SECRET: 'abcdef0123456789', SLACK_MODE: 'rtm' },
      'SLACK_MODE must be',
    ],
    [
      { SLACK_BOT_TOKEN: BOT, SLACK_MODE: 'socket', SLACK_SIGNING_SECRET: 'abcdef0123456789' },
      'SLACK_APP_TOKEN is required for Socket Mode',
    ],
  ])('refuses %j, naming the setting', (env, message) => {
    const error = failure(env);
    expect(error.code).toBe('invalid_config');
    expect(error.message).toContain(message);
  });

  it('never echoes a token or secret in its message', () => {
    const error = failure({
      SLACK_BOT_TOKEN: 'xoxp-do-not-print',
      SLACK_APP_TOKEN: 'nope-secret-app',
      SLACK_SIGNING_SECRET: 'has space here',
    });
    for (const secret of ['xoxp-do-not-print', 'nope-secret-app', 'has space here'])
      expect(error.message).not.toContain(secret);
  });

  it('tells whether Slack is asked for at all', () => {
    expect(slackRequested({})).toBe(false);
    expect(slackRequested({ SLACK_BOT_TOKEN: ' ' })).toBe(false);
    expect(slackRequested({ SLACK_BOT_TOKEN: BOT })).toBe(true);
    expect(slackRequested({ SLACK_CLIENT_ID: '1.2' })).toBe(true);
  });
});

describe('loadSlackConfig, several workspaces (OAuth)', () => {
  const OAUTH = {
    SLACK_CLIENT_ID: '1111.2222',
    SLACK_CLIENT_SECRET: 'client-secret-value',
    SLACK_INSTALLATION_KEYS: `k1:${Buffer.alloc(32, 1).toString('base64')}`,
    SLACK_SIGNING_SECRET: 'abcdef0123456789',
  };

  it('takes the app’s credentials and keys, in HTTP mode, with a state secret every replica derives alike', () => {
    const config = loadSlackConfig(OAUTH);
    expect(config.botToken).toBeUndefined();
    expect(config.connection).toEqual({
      kind: 'http',
      signingSecret: 'abcdef0123456789',
      path: '/slack/events',
    });
    expect(config.oauth).toMatchObject({
      clientId: '1111.2222',
      clientSecret: 'client-secret-value',
      installationKeys: OAUTH.SLACK_INSTALLATION_KEYS,
      redirectUri: undefined,
      installPath: '/slack/install',
      redirectPath: '/slack/oauth_redirect',
    });
    expect(config.oauth?.stateSecret).toBe(loadSlackConfig(OAUTH).oauth?.stateSecret);
    expect(config.oauth?.stateSecret).not.toContain('client-secret-value');
    expect(
      loadSlackConfig({ ...OAUTH, SLACK_STATE_SECRET: 'a-state-secret-of-my-own' }).oauth?.stateSecret,
    ).toBe('a-state-secret-of-my-own');
  });

  it.each([
    [{ ...OAUTH, SLACK_BOT_TOKEN: BOT }, 'both set'],
    [{ ...OAUTH, SLACK_CLIENT_SECRET: undefined }, 'SLACK_CLIENT_SECRET is required'],
    [{ ...OAUTH, SLACK_INSTALLATION_KEYS: undefined }, 'SLACK_INSTALLATION_KEYS is required'],
    [{ ...OAUTH, SLACK_SIGNING_SECRET: undefined }, 'SLACK_SIGNING_SECRET is required'],
    [{ ...OAUTH, SLACK_APP_TOKEN: 'xapp-1-abc' }, 'need HTTP mode'],
    [{ ...OAUTH, SLACK_CLIENT_ID: 'abc' }, 'SLACK_CLIENT_ID must be'],
    [{ ...OAUTH, SLACK_REDIRECT_URI: 'not a url' }, 'SLACK_REDIRECT_URI must be'],
    [{}, 'SLACK_BOT_TOKEN is required'],
  ])('refuses %j, naming the setting', (env, message) => {
    const error = failure(env);
    expect(error.code).toBe('invalid_config');
    expect(error.message).toContain(message);
    expect(error.message).not.toContain('client-secret-value');
  });
});
