import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { webApi } from '@slack/bolt';
import type { Installation } from '@slack/oauth';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { type Clock, systemClock } from '../../../src/core/clock.js';
import { SqliteStore } from '../../../src/store/sqlite/sqlite-store.js';
import { Keyring } from '../../../src/surfaces/slack/installations/keyring.js';
import {
  RotatingInstallationStore,
  refreshExchange,
  SlackTokenRefreshError,
} from '../../../src/surfaces/slack/installations/rotation.js';
import { SealedInstallationStore } from '../../../src/surfaces/slack/installations/store.js';
import { InstalledTokens } from '../../../src/surfaces/slack/installations/tokens.js';
import { type FakeSlack, startFakeSlack } from '../../../testkit/slack/index.js';

/**
 * Token rotation against the fake's oauth.v2.access, which hands out expiring tokens and takes
 * each refresh token once, as Slack does: a workspace's token is refreshed once however many
 * callers read it at once, on one replica or on two sharing the store, and a refresh Slack
 * refuses fails the workspace's calls clearly once the old token has expired.
 */

const CLIENT = { clientId: '1111.2222', clientSecret: 'client-secret-abcdef' };
const TEAM = {
  teamId: 'T0ROTATE',
  botToken: 'xoxb-static-never-handed-out',
  botUserId: 'U0BOTR',
  teamName: 'Rotate',
};
const KEY = Buffer.alloc(32, 5).toString('base64');
const QUERY = { teamId: TEAM.teamId, isEnterpriseInstall: false, enterpriseId: undefined } as const;

interface Rig {
  fake: FakeSlack;
  store: SqliteStore;
  dir: string;
  logs: string[];
  /** The time the fake Slack and the replicas read: real time, moved ahead by `pass`. */
  clock: Clock;
  /** Moves the rig's time ahead (a token's lifetime passes without waiting for it). */
  pass(ms: number): void;
}
let rig: Rig | undefined;

afterEach(async () => {
  if (rig === undefined) return;
  await rig.store.close();
  await rig.fake.close();
  rmSync(rig.dir, { recursive: true, force: true });
  rig = undefined;
});

/** The fake with rotation on, and the workspace installed: its first token lives `firstSec`. */
async function installed(firstSec: number): Promise<{ r: Rig; installedToken: string }> {
  let ahead = 0;
  const clock: Clock = { now: () => Date.now() + ahead, sleep: systemClock.sleep };
  const fake = await startFakeSlack({
    workspaces: [TEAM],
    oauth: { ...CLIENT, rotation: { lifetimesSec: [firstSec, 43_200] } },
    clock: () => clock.now(),
  });
  const dir = mkdtempSync(join(tmpdir(), 'kourier-rotation-'));
  const store = new SqliteStore(join(dir, 'store.db'));
  await store.migrate();
  const logs: string[] = [];
  rig = {
    fake,
    store,
    dir,
    logs,
    clock,
    pass: (ms) => {
      ahead += ms;
    },
  };
  // The install's exchange, as Bolt's redirect handler makes it, and the installation it stores.
  const web = new webApi.WebClient(undefined, { slackApiUrl: fake.url, retryConfig: { retries: 0 } });
  const code = fake.authorizeInstall(TEAM.teamId);
  const got = (await web.oauth.v2.access({ ...clientArgs(), code })) as {
    access_token: string;
    refresh_token: string;
    expires_in: number;
  };
  expect(got.refresh_token).toMatch(/^xoxe-1-/);
  const installation: Installation = {
    team: { id: TEAM.teamId, name: TEAM.teamName },
    enterprise: undefined,
    isEnterpriseInstall: false,
    appId: 'A0APP',
    user: { id: 'U0INSTALLER', token: undefined, scopes: undefined },
    tokenType: 'bot',
    authVersion: 'v2',
    bot: {
      token: got.access_token,
      refreshToken: got.refresh_token,
      expiresAt: Math.floor(clock.now() / 1000) + got.expires_in,
      scopes: ['chat:write'],
      id: 'B0BOT',
      userId: TEAM.botUserId,
    },
  };
  await sealed(store).storeInstallation(installation);
  return { r: rig, installedToken: got.access_token };
}

function clientArgs(): { client_id: string; client_secret: string } {
  return { client_id: CLIENT.clientId, client_secret: CLIENT.clientSecret };
}

function sealed(store: SqliteStore): SealedInstallationStore {
  return new SealedInstallationStore(store.installations(), Keyring.parse(`k1:${KEY}`));
}

/** One replica's view: its own sealed store over the shared rows and its own rotation. */
function replica(r: Rig, options: { rereadAttempts?: number } = {}): RotatingInstallationStore {
  const logger = pino(
    { level: 'debug' },
    new Writable({
      write(chunk: Buffer, _enc, done) {
        r.logs.push(chunk.toString('utf8'));
        done();
      },
    }),
  );
  return new RotatingInstallationStore({
    store: sealed(r.store),
    refresh: refreshExchange(CLIENT, r.fake.url, logger),
    clock: r.clock,
    logger,
    reread: { attempts: options.rereadAttempts ?? 20, pauseMs: 25 },
  });
}

function refreshes(r: Rig): Array<{ ok: boolean; error?: string }> {
  return r.fake
    .callsOf('oauth.v2.access')
    .filter((c) => c.args.grant_type === 'refresh_token')
    .map((c) => ({ ok: c.ok, ...(c.error === undefined ? {} : { error: c.error }) }));
}

/** Whether Slack (the fake) takes the token for a call. */
async function works(r: Rig, token: string | undefined): Promise<boolean> {
  const web = new webApi.WebClient(token, { slackApiUrl: r.fake.url, retryConfig: { retries: 0 } });
  return web.auth.test().then(
    () => true,
    () => false,
  );
}

describe('Slack token rotation', () => {
  it('refreshes a token near its end once, however many callers read it at the same moment', async () => {
    const { r, installedToken } = await installed(600);
    const one = replica(r);
    const read = await Promise.all(Array.from({ length: 20 }, () => one.fresh(QUERY)));
    expect(refreshes(r)).toEqual([{ ok: true }]);
    const tokens = new Set(read.map((i) => i.bot?.token));
    expect(tokens.size).toBe(1);
    const [token] = tokens;
    expect(token).not.toBe(installedToken);
    expect(await works(r, token)).toBe(true);
    // Stored for the next reader and every other replica; no further refresh while it lasts.
    const stored = await sealed(r.store).fetchInstallation(QUERY);
    expect(stored.bot?.token).toBe(token);
    expect(stored.bot?.expiresAt).toBeGreaterThan(Date.now() / 1000 + 40_000);
    await one.fresh(QUERY);
    expect(refreshes(r)).toHaveLength(1);
    // Bolt reads installations without the refresh token, so it never refreshes on its own.
    const forBolt = await one.fetchInstallation(QUERY);
    expect(forBolt.bot?.token).toBe(token);
    expect(forBolt.bot?.refreshToken).toBeUndefined();
    expect(r.logs.join('')).not.toContain('xoxe');
  });

  it('two replicas reading an expiring token at once spend its refresh token once and both end with the new pair', async () => {
    const { r } = await installed(600);
    const a = replica(r);
    const b = replica(r);
    const read = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 === 0 ? a : b).fresh(QUERY)));
    const calls = refreshes(r);
    expect(calls.filter((c) => c.ok)).toHaveLength(1);
    // The loser, if it got as far as Slack, was refused as spent and read the winner's pair.
    expect(calls.filter((c) => !c.ok).every((c) => c.error === 'invalid_refresh_token')).toBe(true);
    const tokens = new Set(read.map((i) => i.bot?.token));
    expect(tokens.size).toBe(1);
    const [token] = tokens;
    expect(await works(r, token)).toBe(true);
    expect((await sealed(r.store).fetchInstallation(QUERY)).bot?.token).toBe(token);
  });

  it('a token that expired, whose refresh Slack refuses, fails its calls with SlackTokenRefreshError and is not refreshed again at once', async () => {
    const { r, installedToken } = await installed(1);
    // Its one second passes.
    r.pass(1_100);
    expect(await works(r, installedToken)).toBe(false);
    // The app was removed without the broker hearing of it: Slack refuses the refresh token.
    r.fake.uninstall(TEAM.teamId);
    const one = replica(r, { rereadAttempts: 2 });
    const failure = await one.fresh(QUERY).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(failure).toBeInstanceOf(SlackTokenRefreshError);
    expect((failure as SlackTokenRefreshError).slackError).toBe('invalid_refresh_token');
    expect((failure as SlackTokenRefreshError).teamId).toBe(TEAM.teamId);
    await expect(one.fresh(QUERY)).rejects.toBeInstanceOf(SlackTokenRefreshError);
    expect(refreshes(r)).toEqual([{ ok: false, error: 'invalid_refresh_token' }]);
    expect(r.logs.join('')).toContain('could not be refreshed');
    expect(r.logs.join('')).not.toContain('xoxe');
  });

  it('a refresh Slack refuses while the old token still works keeps using it, and says so', async () => {
    const { r, installedToken } = await installed(600);
    r.fake.uninstall(TEAM.teamId);
    const one = replica(r, { rereadAttempts: 2 });
    expect((await one.fresh(QUERY)).bot?.token).toBe(installedToken);
    expect(refreshes(r)).toEqual([{ ok: false, error: 'invalid_refresh_token' }]);
    expect(r.logs.join('')).toContain('using it until it expires');
  });
});

describe('installed tokens', () => {
  it('keeps a token no longer than it lives, and callers that miss the cache at once share one read', async () => {
    let now = 1_000_000;
    const clock: Clock = { now: () => now, sleep: systemClock.sleep };
    const reads: string[] = [];
    // No installs or removals happen here: nothing to be told of.
    const store = { onChange: () => () => true };
    const tokens = new InstalledTokens({
      fetch: async (team) => {
        reads.push(team);
        await new Promise((resolve) => setTimeout(resolve, 5));
        // A token with two seconds left: cached for two seconds, not for the minute.
        return { token: `xoxb-${reads.length}`, expiresAtSec: now / 1000 + 2 };
      },
      store,
      clock,
    });
    expect(await Promise.all([tokens.tokenFor('T1'), tokens.tokenFor('T1'), tokens.tokenFor('T1')])).toEqual([
      'xoxb-1',
      'xoxb-1',
      'xoxb-1',
    ]);
    now += 1_500;
    expect(await tokens.tokenFor('T1')).toBe('xoxb-1');
    now += 1_000;
    expect(await tokens.tokenFor('T1')).toBe('xoxb-2');
    expect(reads).toEqual(['T1', 'T1']);
  });
});
