import { WebClient } from '@slack/web-api';
import { afterEach, describe, expect, it } from 'vitest';
import { type FakeSlack, startFakeSlack } from '../../testkit/slack/index.js';

/** The fake serving several workspaces, and Slack's side of the OAuth install. */

const quiet = {
  debug() {},
  info() {},
  warn() {},
  error() {},
  setLevel() {},
  getLevel: () => 'error',
  setName() {},
};
const CLIENT = { clientId: '11.22', clientSecret: 'shh-secret' };

let fake: FakeSlack | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

function client(f: FakeSlack, token?: string): WebClient {
  return new WebClient(token, {
    slackApiUrl: f.url,
    retryConfig: { retries: 0 },
    rejectRateLimitedCalls: true,
    logger: quiet as never,
  });
}

async function error(call: Promise<unknown>): Promise<string | undefined> {
  try {
    await call;
    return undefined;
  } catch (e) {
    return (e as { data?: { error?: string } }).data?.error ?? (e as Error).name;
  }
}

describe('the fake Slack, several workspaces', () => {
  it('answers each token as its own workspace, with its own rate windows', async () => {
    fake = await startFakeSlack({
      workspaces: [
        { teamId: 'T0A', botToken: 'xoxb-a', botUserId: 'U0A', rateLimits: { 'chat.postMessage': 1 } },
        { teamId: 'T0B', botToken: 'xoxb-b', botUserId: 'U0B' },
      ],
    });
    expect((await client(fake, 'xoxb-a').auth.test()).team_id).toBe('T0A');
    expect((await client(fake, 'xoxb-b').auth.test()).user_id).toBe('U0B');
    await client(fake, 'xoxb-a').chat.postMessage({ channel: 'C1', text: 'one' });
    // Alpha's window is spent; Beta's is its own.
    expect(await error(client(fake, 'xoxb-a').chat.postMessage({ channel: 'C1', text: 'two' }))).toBe(
      'WebAPIRateLimitedError',
    );
    await client(fake, 'xoxb-b').chat.postMessage({ channel: 'C1', text: 'beta' });
    expect(
      fake
        .workspace('T0A')
        .messages('C1')
        .map((m) => m.text),
    ).toEqual(['one']);
    expect(
      fake
        .workspace('T0B')
        .messages('C1')
        .map((m) => m.text),
    ).toEqual(['beta']);
    expect(
      fake
        .workspace('T0B')
        .callsOf('chat.postMessage')
        .map((c) => c.team),
    ).toEqual(['T0B']);
    expect(await error(client(fake, 'xoxb-nobody').auth.test())).toBe('invalid_auth');
  });

  it('hands a workspace its token through oauth.v2.access, once per code, and revokes it on uninstall', async () => {
    fake = await startFakeSlack({ workspaces: [{ teamId: 'T0A', botToken: 'xoxb-a' }], oauth: CLIENT });
    const web = client(fake);
    expect(await error(client(fake, 'xoxb-a').auth.test())).toBe('invalid_auth');
    const code = fake.authorizeInstall('T0A', 'https://k.example.com/slack/oauth_redirect');
    expect(
      await error(web.oauth.v2.access({ client_id: CLIENT.clientId, client_secret: 'wrong', code })),
    ).toBe('bad_client_secret');
    expect(
      await error(
        web.oauth.v2.access({
          client_id: CLIENT.clientId,
          client_secret: CLIENT.clientSecret,
          code,
          redirect_uri: 'https://elsewhere',
        }),
      ),
    ).toBe('bad_redirect_uri');
    const code2 = fake.authorizeInstall('T0A');
    const answer = await web.oauth.v2.access({
      client_id: CLIENT.clientId,
      client_secret: CLIENT.clientSecret,
      code: code2,
    });
    expect(answer).toMatchObject({
      access_token: 'xoxb-a',
      token_type: 'bot',
      team: { id: 'T0A' },
      is_enterprise_install: false,
    });
    expect(
      await error(
        web.oauth.v2.access({ client_id: CLIENT.clientId, client_secret: CLIENT.clientSecret, code: code2 }),
      ),
    ).toBe('invalid_code');
    expect(fake.workspace('T0A').installed).toBe(true);
    expect((await client(fake, 'xoxb-a').auth.test()).team_id).toBe('T0A');
    fake.uninstall('T0A');
    expect(await error(client(fake, 'xoxb-a').auth.test())).toBe('token_revoked');
  });
  it('with token rotation: expiring tokens, each refresh token taken once, an expired token refused', async () => {
    // The fake's time: real time, moved ahead when the first token's second has passed.
    let ahead = 0;
    fake = await startFakeSlack({
      workspaces: [{ teamId: 'T0A', botToken: 'xoxb-a' }],
      oauth: { ...CLIENT, rotation: { lifetimesSec: [1, 43_200] } },
      clock: () => Date.now() + ahead,
    });
    const web = client(fake);
    const creds = { client_id: CLIENT.clientId, client_secret: CLIENT.clientSecret };
    const first = (await web.oauth.v2.access({ ...creds, code: fake.authorizeInstall('T0A') })) as {
      access_token: string;
      refresh_token: string;
      expires_in: number;
    };
    expect(first.access_token).toMatch(/^xoxe\.xoxb-/);
    expect(first.refresh_token).toMatch(/^xoxe-1-/);
    expect(first.expires_in).toBe(1);
    expect((await client(fake, first.access_token).auth.test()).team_id).toBe('T0A');
    const next = (await web.oauth.v2.access({
      ...creds,
      grant_type: 'refresh_token',
      refresh_token: first.refresh_token,
    })) as { access_token: string; refresh_token: string; expires_in: number; token_type: string };
    expect(next).toMatchObject({ token_type: 'bot', expires_in: 43_200, team: { id: 'T0A' } });
    expect(next.refresh_token).not.toBe(first.refresh_token);
    // A refresh token works once.
    expect(
      await error(
        web.oauth.v2.access({ ...creds, grant_type: 'refresh_token', refresh_token: first.refresh_token }),
      ),
    ).toBe('invalid_refresh_token');
    ahead += 1_100;
    expect(await error(client(fake, first.access_token).auth.test())).toBe('token_expired');
    expect((await client(fake, next.access_token).auth.test()).team_id).toBe('T0A');
    fake.uninstall('T0A');
    expect(
      await error(
        web.oauth.v2.access({ ...creds, grant_type: 'refresh_token', refresh_token: next.refresh_token }),
      ),
    ).toBe('invalid_refresh_token');
  });
});
