import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { A2AClient } from '../../../src/a2a/client.js';
import { gateInstalledWorkspaces } from '../../../src/app/slack-workspaces.js';
import { loadSlackConfig } from '../../../src/config/slack.js';
import { type Clock, systemClock } from '../../../src/core/clock.js';
import type { EngineEvent } from '../../../src/core/events.js';
import { LiveRegistry } from '../../../src/core/registry.js';
import { WORKSPACE_REMOVED_REASON } from '../../../src/core/session/cancelling.js';
import { SessionEngine } from '../../../src/core/session/engine.js';
import { a2aDialect } from '../../../src/dialects/a2a.js';
import { SqliteStore } from '../../../src/store/sqlite/sqlite-store.js';
import { SlackConnection } from '../../../src/surfaces/slack/connection.js';
import { WorkspaceNotInstalledError } from '../../../src/surfaces/slack/installations/store.js';
import { type FakeSlack, startFakeSlack } from '../../../testkit/slack/index.js';
import { FAST_TIMINGS } from '../../helpers/engine-harness.js';
import { answer, slowHeaders } from '../../peers/contract-agent/behaviours.js';
import { type ContractAgent, startContractAgent } from '../../peers/contract-agent/contract-agent.js';
import { mentionEvent, sendSlackEvent } from '../../slack/events.js';

/**
 * One broker, two Slack workspaces, each installed through Bolt's real OAuth routes against the
 * fake's oauth.v2.access: every event is answered with its own workspace's token and within its
 * own rate budget, the same channel id in both workspaces belongs to each one's Binding, an
 * uninstall stops one workspace without touching the other, and no token is ever written in
 * clear, in the logs or in the database.
 */

const SECRET = 'oauth-signing-secret-0123';
const CLIENT = { clientId: '1111.2222', clientSecret: 'client-secret-abcdef' };
const KEY_OLD = Buffer.alloc(32, 7).toString('base64');
const KEY_NEW = Buffer.alloc(32, 9).toString('base64');
const ALPHA = {
  teamId: 'T0ALPHA',
  botToken: 'xoxb-alpha-secret-token-1',
  botUserId: 'U0BOTA',
  teamName: 'Alpha',
};
const BETA = {
  teamId: 'T0BETA',
  botToken: 'xoxb-beta-secret-token-2',
  botUserId: 'U0BOTB',
  teamName: 'Beta',
};
/** Slack Connect: one shared channel id seen from both workspaces. */
const SHARED = 'C0SHARED';
const ADA = 'U0ADA';

interface Rig {
  fake: FakeSlack;
  agent: ContractAgent;
  store: SqliteStore;
  slack: SlackConnection;
  engine: SessionEngine;
  events: EngineEvent[];
  base: string;
  logs: string[];
  dir: string;
  stopGate: () => void;
}

let rig: Rig | undefined;

afterEach(async () => {
  if (rig === undefined) return;
  rig.stopGate();
  await rig.slack.stop();
  await rig.engine.stop();
  await rig.store.close();
  await rig.agent.close();
  await rig.fake.close();
  rmSync(rig.dir, { recursive: true, force: true });
  rig = undefined;
});

async function start(
  keys = `new:${KEY_NEW},old:${KEY_OLD}`,
  dir?: string,
  fake?: FakeSlack,
  clock?: Clock,
): Promise<Rig> {
  const fakeSlack =
    fake ??
    (await startFakeSlack({
      workspaces: [
        { ...ALPHA, rateLimits: { 'chat.postMessage': 1000 } },
        // Beta's chat.update window is tiny: its bursts must never slow Alpha down.
        { ...BETA, rateLimits: { workspaceUpdatesPerMinute: 2 } },
      ],
      oauth: CLIENT,
    }));
  for (const team of [ALPHA, BETA]) fakeSlack.workspace(team.teamId).addUser({ id: ADA, name: 'ada' });
  const agent = await startContractAgent({ version: '1.0' });
  const where = dir ?? mkdtempSync(join(tmpdir(), 'kourier-oauth-'));
  const store = new SqliteStore(join(where, 'store.db'));
  await store.migrate();
  const registry = new LiveRegistry();
  const client = new A2AClient({
    endpoint: agent.endpoint,
    identity: { kind: 'bearer', token: 'binding-token' },
    timeouts: { headersMs: 10_000, streamIdleMs: 10_000 },
  });
  for (const [ref, team] of [
    ['alpha/support', ALPHA.teamId],
    ['beta/support', BETA.teamId],
  ] as const) {
    registry.upsert({
      ref,
      client,
      dialect: a2aDialect,
      settings: { questionTimeoutMs: null },
      routes: { slack: { channels: [SHARED], allowDirectMessages: false, workspaceId: team } },
      toolApprovals: { enabled: false, approverGroups: [], approvers: [] },
    });
  }
  const logs: string[] = [];
  const logger = pino(
    { level: 'debug' },
    new Writable({
      write(chunk: Buffer, _enc, done) {
        logs.push(chunk.toString('utf8'));
        done();
      },
    }),
  );
  const config = loadSlackConfig({
    SLACK_CLIENT_ID: CLIENT.clientId,
    SLACK_CLIENT_SECRET: CLIENT.clientSecret,
    SLACK_INSTALLATION_KEYS: keys,
    SLACK_SIGNING_SECRET: SECRET,
    SLACK_API_URL: fakeSlack.url,
  });
  const slack = await SlackConnection.connect({
    ...(clock === undefined ? {} : { clock }),
    config,
    logger,
    bindings: registry,
    installations: store.installations(),
    answers: { intervalMs: 250 },
    activity: { settleGraceMs: 50 },
  });
  const events: EngineEvent[] = [];
  const gated = await gateInstalledWorkspaces(slack, registry, logger);
  const engine = new SessionEngine({
    store,
    registry: gated.registry,
    surface: slack.surface,
    events: {
      emit: (e) => {
        events.push(e);
        slack.surface.activity.emit(e);
      },
    },
    timings: FAST_TIMINGS,
  });
  gated.follow(engine, WORKSPACE_REMOVED_REASON);
  await engine.start();
  const { port } = await slack.listen({
    inbound: engine,
    port: 0,
    host: '127.0.0.1',
  });
  return {
    fake: fakeSlack,
    agent,
    store,
    slack,
    engine,
    events,
    base: `http://127.0.0.1:${port ?? 0}`,
    logs,
    dir: where,
    stopGate: gated.stop,
  };
}

/** The install as a browser makes it: the install page, Slack's approval, the redirect back. */
async function install(r: Rig, teamId: string): Promise<Response> {
  const page = await fetch(`${r.base}/slack/install`);
  expect(page.status).toBe(200);
  const cookie = (page.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
  const html = await page.text();
  const authorize = new URL((/<a href="([^"]+)"/.exec(html)?.[1] ?? '').replaceAll('&amp;', '&'));
  expect(authorize.searchParams.get('client_id')).toBe(CLIENT.clientId);
  expect(authorize.searchParams.get('scope')).toContain('chat:write');
  const state = authorize.searchParams.get('state') ?? '';
  const code = r.fake.authorizeInstall(teamId);
  return fetch(
    `${r.base}/slack/oauth_redirect?code=${encodeURIComponent(code)}&state=${encodeURIComponent(state)}`,
    {
      headers: { cookie },
      redirect: 'manual',
    },
  );
}

async function mention(
  r: Rig,
  team: typeof ALPHA,
  text: string,
  threadTs?: string,
): Promise<{ ts: string; status: number }> {
  const typed = `<@${team.botUserId}> ${text}`;
  const inThread = threadTs === undefined ? {} : { threadTs };
  const message = r.fake
    .workspace(team.teamId)
    .postUserMessage({ channel: SHARED, user: ADA, text: typed, ...inThread });
  const sent = await sendSlackEvent(
    `${r.base}/slack/events`,
    SECRET,
    mentionEvent({
      channel: SHARED,
      user: ADA,
      text: typed,
      ts: message.ts,
      botUserId: team.botUserId,
      teamId: team.teamId,
      ...inThread,
    }),
    { teamId: team.teamId, botUserId: team.botUserId },
  );
  return { ts: message.ts, status: sent.status };
}

async function waitFor(what: string, predicate: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

function botReplies(r: Rig, team: typeof ALPHA, ts: string): string[] {
  return r.fake
    .workspace(team.teamId)
    .messages(SHARED, ts)
    .filter((m) => m.user === team.botUserId && m.ts !== ts)
    .map((m) => m.text);
}

/** Every byte the SQLite database wrote (the file and its write-ahead log). */
function databaseBytes(dir: string): string {
  return readdirSync(dir)
    .filter((f) => f.startsWith('store.db'))
    .map((f) => readFileSync(join(dir, f)).toString('latin1'))
    .join('');
}

describe('several Slack workspaces through OAuth', () => {
  it('installs two workspaces through Bolt’s routes and answers each with its own token', async () => {
    rig = await start();
    const r = rig;
    for (const team of [ALPHA, BETA]) {
      const done = await install(r, team.teamId);
      expect(done.status).toBe(200);
      expect(await done.text()).toContain('installed');
      expect(r.fake.workspace(team.teamId).installed).toBe(true);
    }
    expect(r.fake.callsOf('oauth.v2.access').map((c) => c.ok)).toEqual([true, true]);
    expect((await r.store.installations().list()).map((row) => row.teamId)).toEqual([
      ALPHA.teamId,
      BETA.teamId,
    ]);

    const a = await mention(r, ALPHA, 'hello from alpha');
    const b = await mention(r, BETA, 'hello from beta');
    expect([a.status, b.status]).toEqual([200, 200]);
    await waitFor(
      'both answers',
      () => botReplies(r, ALPHA, a.ts).length > 0 && botReplies(r, BETA, b.ts).length > 0,
    );
    await r.engine.idle();

    // Each workspace's calls went with its own token (the fake records the caller's team) and
    // its sessions carry its team: one channel id, two Bindings, no conflict.
    const posted = r.fake.calls.filter(
      (c) => c.method === 'chat.postMessage' || c.method === 'chat.startStream',
    );
    expect(posted.filter((c) => c.args.channel === SHARED && c.team === ALPHA.teamId).length).toBeGreaterThan(
      0,
    );
    expect(posted.filter((c) => c.args.channel === SHARED && c.team === BETA.teamId).length).toBeGreaterThan(
      0,
    );
    expect(r.fake.calls.every((c) => c.method === 'oauth.v2.access' || c.team !== undefined)).toBe(true);
    const sessions = r.events
      .filter((e) => e.type === 'turn.settled')
      .map((e) => e.binding)
      .sort();
    expect(sessions).toEqual(['alpha/support', 'beta/support']);

    // No token in clear: not in any log line, not in any byte of the database.
    const dbText = databaseBytes(r.dir);
    for (const token of [ALPHA.botToken, BETA.botToken, CLIENT.clientSecret]) {
      const leak = r.logs.find((l) => l.includes(token));
      expect(leak?.slice(0, 600)).toBeUndefined();
      expect(dbText).not.toContain(token);
    }
    expect(dbText).toContain(ALPHA.teamId);
  });

  it('an uninstall stops that workspace only: its installation goes, its later events make no turn, the other answers on', async () => {
    rig = await start();
    const r = rig;
    await install(r, ALPHA.teamId);
    await install(r, BETA.teamId);
    const first = await mention(r, ALPHA, 'before the uninstall');
    await waitFor('alpha answered', () => botReplies(r, ALPHA, first.ts).length > 0);
    await r.engine.idle();

    // Slack revokes the token, then sends both events (in either order; the second finds nothing).
    r.fake.uninstall(ALPHA.teamId);
    for (const event of [
      { type: 'tokens_revoked', tokens: { bot: [ALPHA.botUserId] } },
      { type: 'app_uninstalled' },
    ]) {
      const sent = await sendSlackEvent(`${r.base}/slack/events`, SECRET, event, {
        teamId: ALPHA.teamId,
        botUserId: ALPHA.botUserId,
      });
      expect(sent.status).toBe(200);
    }
    await waitFor('alpha removed', () =>
      r.logs.join('').includes('the app was removed from a Slack workspace'),
    );
    expect((await r.store.installations().list()).map((row) => row.teamId)).toEqual([BETA.teamId]);
    await expect(r.slack.workspaces?.tokens.tokenFor(ALPHA.teamId)).rejects.toBeInstanceOf(
      WorkspaceNotInstalledError,
    );

    // An event still arriving for Alpha reaches no listener (Bolt finds no installation) and
    // makes no turn; Beta goes on answering with its own token.
    const settledBefore = r.events.filter((e) => e.type === 'turn.settled').length;
    const late = await mention(r, ALPHA, 'after the uninstall');
    expect(late.status).toBe(200);
    const b = await mention(r, BETA, 'still here');
    await waitFor('beta answered', () => botReplies(r, BETA, b.ts).length > 0);
    await r.engine.idle();
    expect(botReplies(r, ALPHA, late.ts)).toEqual([]);
    expect(r.events.filter((e) => e.type === 'turn.settled').length).toBe(settledBefore + 1);
    expect(r.fake.calls.filter((c) => c.team === ALPHA.teamId && !c.ok)).toEqual([]);
    // Expected traffic, said at warn with what happened; nothing at error.
    const lines = r.logs
      .join('')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { level: number; msg: string });
    expect(lines.filter((l) => l.level >= 50).map((l) => l.msg)).toEqual([]);
    expect(lines.some((l) => l.level === 40 && l.msg.includes('not installed'))).toBe(true);
  });

  it('a turn in flight when its workspace uninstalls settles, and its session makes no more calls', async () => {
    rig = await start();
    const r = rig;
    await install(r, ALPHA.teamId);
    await install(r, BETA.teamId);
    // The agent takes its time: the uninstall lands while Alpha's turn is with it.
    r.agent.enqueue(slowHeaders(1_500));
    const pending = await mention(r, ALPHA, 'a long question');
    await waitFor('the turn sent', () => r.agent.queued() === 0);
    // A second message in the thread waits behind the first.
    await mention(r, ALPHA, 'and another thing', pending.ts);
    r.fake.uninstall(ALPHA.teamId);
    await sendSlackEvent(
      `${r.base}/slack/events`,
      SECRET,
      { type: 'app_uninstalled' },
      { teamId: ALPHA.teamId, botUserId: ALPHA.botUserId },
    );
    await waitFor(
      'both alpha turns settled',
      () => r.events.filter((e) => e.type === 'turn.settled').length >= 2,
      15_000,
    );
    await r.engine.idle();
    // The one with the agent finishes there (its answer has nowhere to go); the waiting one is
    // not sent at all: its session's workspace is gone.
    const settled = r.events.filter((e) => e.type === 'turn.settled');
    expect(settled.map((e) => (e as { outcome: string }).outcome)).toEqual([
      'completed',
      'error:binding_removed',
    ]);
    expect(r.agent.queued()).toBe(0);
    // Nothing was answered in Alpha after the uninstall, and no call went with the revoked token.
    expect(botReplies(r, ALPHA, pending.ts)).toEqual([]);
    expect(r.fake.calls.filter((c) => c.team === ALPHA.teamId && c.error === 'token_revoked')).toEqual([]);
    // Beta is untouched.
    const b = await mention(r, BETA, 'still here');
    await waitFor('beta answered', () => botReplies(r, BETA, b.ts).length > 0);
  });

  it('a task already with its agent when the workspace uninstalls is cancelled there, once; the other workspace’s goes on', async () => {
    rig = await start();
    const r = rig;
    await install(r, ALPHA.teamId);
    await install(r, BETA.teamId);
    const long = answer({ chunks: Array.from({ length: 30 }, (_, i) => `part ${i}. `), chunkDelayMs: 100 });
    r.agent.enqueue(long);
    const alpha = await mention(r, ALPHA, 'a long report');
    // The answer streams: the broker knows the task's id.
    await waitFor('alpha’s answer under way', () => r.events.some((e) => e.type === 'answer.started'));
    r.agent.enqueue(long);
    const beta = await mention(r, BETA, 'a long report too');
    await waitFor(
      'beta’s answer under way',
      () => r.events.filter((e) => e.type === 'answer.started').length === 2,
    );
    r.fake.uninstall(ALPHA.teamId);
    await sendSlackEvent(
      `${r.base}/slack/events`,
      SECRET,
      { type: 'app_uninstalled' },
      { teamId: ALPHA.teamId, botUserId: ALPHA.botUserId },
    );
    await waitFor('alpha’s turn settled', () => r.events.some((e) => e.type === 'turn.settled'), 15_000);
    // Alpha's task was cancelled at the agent, once, for the removal; Beta's was not touched.
    expect(r.agent.rpc('CancelTask')).toHaveLength(1);
    expect(r.events.filter((e) => e.type === 'task.cancel')).toEqual([
      expect.objectContaining({ reason: WORKSPACE_REMOVED_REASON, ok: true }),
    ]);
    const states = [...r.agent.tasks.values()].map((t) => t.status.state);
    expect(states.filter((s) => s === 'canceled')).toHaveLength(1);
    expect(r.events.find((e) => e.type === 'turn.settled')).toMatchObject({ outcome: 'canceled' });
    await waitFor(
      'beta answered in full',
      () => botReplies(r, BETA, beta.ts).join('').includes('part 29.'),
      15_000,
    );
    expect(botReplies(r, ALPHA, alpha.ts).join('')).not.toContain('part 29.');
  });

  it('a refused or tampered install changes nothing: a forged state, a code used twice', async () => {
    rig = await start();
    const r = rig;
    const forged = await fetch(`${r.base}/slack/oauth_redirect?code=x&state=forged`, {
      headers: { cookie: 'slack-app-oauth-state=forged' },
    });
    expect(forged.status).toBe(400);
    const page = await fetch(`${r.base}/slack/install`);
    const cookie = (page.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
    const state = /state=([^&"]+)/.exec(await page.text())?.[1] ?? '';
    const code = r.fake.authorizeInstall(ALPHA.teamId);
    const ok = await fetch(`${r.base}/slack/oauth_redirect?code=${code}&state=${state}`, {
      headers: { cookie },
    });
    expect(ok.status).toBe(200);
    await r.store.installations().delete('team:T0ALPHA');
    const again = await fetch(`${r.base}/slack/oauth_redirect?code=${code}&state=${state}`, {
      headers: { cookie },
    });
    expect(again.status).toBe(400);
    expect(await r.store.installations().list()).toEqual([]);
  });

  it('rotates the sealing key without downtime: rows sealed with the old key open, and are sealed again with the new', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kourier-oauth-'));
    const fake = await startFakeSlack({ workspaces: [ALPHA, BETA], oauth: CLIENT });
    rig = await start(`old:${KEY_OLD}`, dir, fake);
    await install(rig, ALPHA.teamId);
    expect((await rig.store.installations().list()).map((row) => row.keyId)).toEqual(['old']);
    // The next rollout lists the new key first, the old one after it.
    rig.stopGate();
    await rig.slack.stop();
    await rig.engine.stop();
    await rig.store.close();
    await rig.agent.close();
    rig = await start(`new:${KEY_NEW},old:${KEY_OLD}`, dir, fake);
    expect((await rig.store.installations().list()).map((row) => row.keyId)).toEqual(['new']);
    const m = await mention(rig, ALPHA, 'after the rotation');
    const r = rig;
    await waitFor('alpha answered', () => botReplies(r, ALPHA, m.ts).length > 0);
  });
  it('with token rotation on, an expired token is refreshed once for a burst of events, and every answer goes out with the new one', async () => {
    // The time the fake Slack and the broker read: real time, moved ahead when the token's
    // second has passed (rather than waiting for it).
    let ahead = 0;
    const clock: Clock = { now: () => Date.now() + ahead, sleep: systemClock.sleep };
    const fake = await startFakeSlack({
      workspaces: [ALPHA, BETA],
      // Alpha's first token lives one second; the refreshed ones twelve hours, as on Slack.
      oauth: { ...CLIENT, rotation: { lifetimesSec: [1, 43_200] } },
      clock: () => clock.now(),
    });
    rig = await start(undefined, undefined, fake, clock);
    const r = rig;
    expect((await install(r, ALPHA.teamId)).status).toBe(200);
    ahead += 1_100;
    // Bolt authorizes each of these events, and the surface looks the token up for its calls:
    // all of them read the one expired token at the same moment.
    const said = await Promise.all(['one', 'two', 'three'].map((t) => mention(r, ALPHA, `rotate ${t}`)));
    expect(said.map((m) => m.status)).toEqual([200, 200, 200]);
    await waitFor('three answers', () => said.every((m) => botReplies(r, ALPHA, m.ts).length > 0));
    await r.engine.idle();
    const refreshes = r.fake.callsOf('oauth.v2.access').filter((c) => c.args.grant_type === 'refresh_token');
    expect(refreshes.map((c) => c.ok)).toEqual([true]);
    // No call went out with the expired token.
    expect(r.fake.calls.filter((c) => c.error === 'token_expired')).toEqual([]);
    expect(r.logs.join('')).not.toMatch(/xoxe/);
  });
});
