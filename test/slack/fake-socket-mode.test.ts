import { networkInterfaces } from 'node:os';
import { type Logger, LogLevel } from '@slack/bolt';
import { SocketModeClient } from '@slack/socket-mode';
import { WebAPIPlatformError, WebClient } from '@slack/web-api';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import {
  type FakeSlack,
  type FakeSlackOptions,
  SOCKET_LIMITS,
  SocketAckTimeoutError,
  startFakeSlack,
} from '../../testkit/slack/index.js';

import { blockActionsPayload, mentionEvent } from './events.js';

/**
 * The fake's Socket Mode against the real @slack/socket-mode client (what Bolt's
 * SocketModeReceiver runs) and, for what that client never does wrong, a bare `ws` client.
 */

const silent: Logger = {
  debug: () => {},
  info: () => {},
  warn: () => {},
  error: () => {},
  setLevel: () => {},
  getLevel: () => LogLevel.ERROR,
  setName: () => {},
};

const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const x of open.splice(0).reverse()) await x.close();
});

async function fake(options: FakeSlackOptions = {}): Promise<FakeSlack> {
  const f = await startFakeSlack(options);
  open.push(f);
  return f;
}

/** The real client; a short ping timeout also makes its reconnect wait short (it waits that long × failures). */
function socketClient(f: FakeSlack, appToken = f.appToken): SocketModeClient {
  const client = new SocketModeClient({
    appToken,
    logger: silent,
    clientPingTimeout: 1_000,
    clientOptions: { slackApiUrl: f.url, retryConfig: { retries: 0 } },
  });
  open.push({ close: () => client.disconnect() });
  return client;
}

async function slackError(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (e) {
    if (e instanceof WebAPIPlatformError) return e.data.error;
    throw e;
  }
  throw new Error('expected the call to be refused');
}

async function connectionsOpen(url: string, init: RequestInit = {}): Promise<Record<string, unknown>> {
  const res = await fetch(`${url}apps.connections.open`, { method: 'POST', ...init });
  return (await res.json()) as Record<string, unknown>;
}

/** A bare WebSocket to `url`: its first message (hello), or the HTTP status the upgrade was refused with. */
function bareSocket(
  url: string,
): Promise<{ ws: WebSocket; first: Record<string, unknown> } | { refused: number }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url);
    ws.once('message', (data) => resolve({ ws, first: JSON.parse(String(data)) as Record<string, unknown> }));
    ws.once('unexpected-response', (_req, res) => {
      resolve({ refused: res.statusCode ?? 0 });
      ws.terminate();
    });
    ws.once('error', reject);
  });
}

describe('fake Slack Socket Mode', () => {
  it('apps.connections.open takes only its app-level token, in the Authorization header', async () => {
    const f = await fake({ appToken: 'xapp-1-A0APP-1-secret' });
    const app = new WebClient(undefined, {
      slackApiUrl: f.url,
      retryConfig: { retries: 0 },
      logger: silent,
      headers: { authorization: `Bearer ${f.appToken}` },
    });
    const opened = await app.apps.connections.open();
    expect(opened.url).toMatch(
      new RegExp(`^ws://127\\.0\\.0\\.1:${new URL(f.url).port}/link/\\?ticket=[0-9a-f-]{36}&app_id=A0APP$`),
    );

    const bot = new WebClient(f.botToken, {
      slackApiUrl: f.url,
      retryConfig: { retries: 0 },
      logger: silent,
    });
    expect(await slackError(bot.apps.connections.open())).toBe('not_allowed_token_type');
    const other = new WebClient('xapp-1-A0APP-1-other', {
      slackApiUrl: f.url,
      retryConfig: { retries: 0 },
      logger: silent,
    });
    expect(await slackError(other.apps.connections.open())).toBe('invalid_auth');
    expect(await connectionsOpen(f.url)).toEqual({ ok: false, error: 'not_authed' });
    // As a form field, even the right token is refused.
    expect(
      await connectionsOpen(f.url, {
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ token: f.appToken }).toString(),
      }),
    ).toEqual({ ok: false, error: 'invalid_auth' });
    const get = await fetch(`${f.url}apps.connections.open`, {
      headers: { authorization: `Bearer ${f.appToken}` },
    });
    expect(await get.json()).toEqual({ ok: false, error: 'insecure_request' });
    // The app token is no workspace's: Web API methods refuse it.
    const misused = new WebClient(f.appToken, {
      slackApiUrl: f.url,
      retryConfig: { retries: 0 },
      logger: silent,
    });
    expect(await slackError(misused.auth.test())).toBe('not_allowed_token_type');
    expect(f.callsOf('apps.connections.open').map((c) => c.error ?? 'ok')).toEqual([
      'ok',
      'not_allowed_token_type',
      'invalid_auth',
      'not_authed',
      'invalid_auth',
      'insecure_request',
    ]);
  });

  it('a ticket opens one connection, which says hello; a used or unknown one is refused', async () => {
    const f = await fake();
    const { url } = (await connectionsOpen(f.url, {
      headers: { authorization: `Bearer ${f.appToken}` },
    })) as {
      url: string;
    };
    const first = await bareSocket(url);
    if (!('ws' in first)) throw new Error(`refused: ${first.refused}`);
    expect(first.first).toMatchObject({
      type: 'hello',
      num_connections: 1,
      connection_info: { app_id: 'A0APP' },
      debug_info: { approximate_connection_time: SOCKET_LIMITS.approximateConnectionTimeSec },
    });
    expect(await bareSocket(url)).toEqual({ refused: 401 });
    expect(await bareSocket(url.replace(/ticket=[^&]+/, 'ticket=nonesuch'))).toEqual({ refused: 401 });
    expect(f.socketMode.problems.map((p) => p.reason)).toEqual(['ticket used', 'unknown ticket']);
    expect(f.socketMode.openCount).toBe(1);
    first.ws.terminate();
  });

  it('refuses an eleventh connection', async () => {
    const f = await fake();
    const sockets: WebSocket[] = [];
    for (let i = 0; i < SOCKET_LIMITS.connections + 1; i++) {
      const { url } = (await connectionsOpen(f.url, {
        headers: { authorization: `Bearer ${f.appToken}` },
      })) as {
        url: string;
      };
      const s = await bareSocket(url);
      if ('ws' in s) sockets.push(s.ws);
      else expect(s.refused).toBe(429);
    }
    expect(sockets).toHaveLength(SOCKET_LIMITS.connections);
    for (const s of sockets) s.terminate();
  });

  it('the URL names the address the caller reached the fake at', async () => {
    const f = await fake({ host: '0.0.0.0' });
    const port = new URL(f.url).port;
    expect(f.url).toBe(`http://127.0.0.1:${port}/api/`);
    const external = Object.values(networkInterfaces())
      .flat()
      .find((a) => a !== undefined && a.family === 'IPv4' && !a.internal)?.address;
    for (const host of ['127.0.0.1', 'localhost', ...(external === undefined ? [] : [external])]) {
      const opened = (await connectionsOpen(`http://${host}:${port}/api/`, {
        headers: { authorization: `Bearer ${f.appToken}` },
      })) as { url: string };
      expect(new URL(opened.url).host).toBe(`${host}:${port}`);
      const s = await bareSocket(opened.url);
      if (!('ws' in s)) throw new Error(`refused at ${host}: ${s.refused}`);
      s.ws.terminate();
    }
  });

  it('the real client: an event and a button press are delivered and acknowledged', async () => {
    const f = await fake();
    const client = socketClient(f);
    const seen: Array<{ type: string; body: Record<string, unknown> }> = [];
    client.on('slack_event', async ({ ack, type, body }) => {
      seen.push({ type, body });
      await ack(type === 'interactive' ? { text: 'pressed' } : undefined);
    });
    await client.start();
    expect(f.socketMode.connections).toHaveLength(1);

    const event = mentionEvent({
      channel: 'C0CHAN',
      user: 'U0HUMAN',
      text: 'hello',
      ts: '1700000000.000100',
    });
    const ack = await f.socketMode.sendEvent(event, { eventId: 'Ev0001' });
    expect(ack).toMatchObject({ connection: 1 });
    expect(ack.unexpected).toBeUndefined();
    expect(f.socketMode.envelopes[0]).toMatchObject({ envelopeId: ack.envelopeId, type: 'events_api' });
    expect(seen[0]).toEqual({
      type: 'events_api',
      body: expect.objectContaining({ type: 'event_callback', event_id: 'Ev0001', team_id: 'T0001', event }),
    });

    const press = await f.socketMode.sendInteraction(
      blockActionsPayload({
        user: 'U0HUMAN',
        channel: 'C0CHAN',
        messageTs: '1700000000.000200',
        actionId: 'go',
      }),
    );
    expect(press.payload).toEqual({ text: 'pressed' });
    expect(seen[1]?.type).toBe('interactive');
    expect(f.socketMode.problems).toEqual([]);
  });

  it('after a disconnect message or a dropped connection the real client comes back', async () => {
    const f = await fake();
    const client = socketClient(f);
    client.on('slack_event', async ({ ack }) => ack());
    await client.start();

    expect(f.socketMode.disconnect('refresh_requested')).toBe(1);
    await f.socketMode.opened(2);
    expect(f.socketMode.connections[0]?.closedAt).toBeDefined();
    const afterRefresh = await f.socketMode.sendEvent(
      mentionEvent({ channel: 'C0CHAN', user: 'U0HUMAN', text: 'again', ts: '1700000000.000300' }),
    );
    expect(afterRefresh.connection).toBe(2);

    expect(f.socketMode.drop()).toBe(1);
    await f.socketMode.opened(3);
    const afterDrop = await f.socketMode.sendEvent(
      mentionEvent({ channel: 'C0CHAN', user: 'U0HUMAN', text: 'and again', ts: '1700000000.000400' }),
    );
    expect(afterDrop.connection).toBe(3);
    expect(f.callsOf('apps.connections.open')).toHaveLength(3);
  });

  it('an envelope nobody acknowledges times out, and so does one with no connection to go on', async () => {
    const f = await fake();
    const noConnection = f.socketMode.sendEvent(
      mentionEvent({ channel: 'C0CHAN', user: 'U0HUMAN', text: 'x', ts: '1700000000.000500' }),
      { timeoutMs: 200 },
    );
    await expect(noConnection).rejects.toMatchObject({ name: 'SocketAckTimeoutError', sent: false });

    const { url } = (await connectionsOpen(f.url, {
      headers: { authorization: `Bearer ${f.appToken}` },
    })) as {
      url: string;
    };
    const s = await bareSocket(url);
    if (!('ws' in s)) throw new Error('refused');
    s.ws.send('not json');
    s.ws.send(JSON.stringify({ envelope_id: 42 }));
    const unanswered = f.socketMode.sendEvent(
      mentionEvent({ channel: 'C0CHAN', user: 'U0HUMAN', text: 'y', ts: '1700000000.000600' }),
      { timeoutMs: 300 },
    );
    await expect(unanswered).rejects.toBeInstanceOf(SocketAckTimeoutError);
    expect(f.socketMode.problems.map((p) => p.reason)).toEqual([
      'not JSON',
      expect.stringMatching(/^not an acknowledgement: envelope_id /),
    ]);
    // A late ack is kept, marked: nothing was waiting for it any more.
    const sent = f.socketMode.envelopes.at(-1);
    s.ws.send(JSON.stringify({ envelope_id: sent?.envelopeId }));
    await expect.poll(() => f.socketMode.acks.at(-1)?.unexpected).toBe(true);
    s.ws.terminate();
  });
});
