import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { type RawData, type WebSocket, WebSocketServer } from 'ws';
import { z } from 'zod';
import type {
  FakeSocketAck,
  FakeSocketConnection,
  FakeSocketEnvelope,
  FakeSocketMode,
  FakeSocketProblem,
  SocketDisconnectReason,
  SocketEnvelopeOptions,
  SocketEventOptions,
} from './api.js';
import { eventEnvelope } from './events.js';
import { RateLimits } from './rate-limits.js';
import { SlackRefusal } from './values.js';

/**
 * Socket Mode as Slack runs it, on the fake's own HTTP server: apps.connections.open hands an
 * app-level token a one-time `ws://…/link/?ticket=…` URL; the WebSocket there says `hello`, then
 * carries `events_api` and `interactive` envelopes that the app acknowledges by envelope id, and
 * `disconnect` messages that make it reconnect.
 *
 * Sources (as read 2026-12):
 * - docs.slack.dev/apis/events-api/using-socket-mode (#call, #connect, #connections, #disconnect,
 *   #events, #acknowledge, #interactivity): the URL's shape, the token in the Authorization header
 *   only, `hello` with `num_connections`, `debug_info`, `connection_info.app_id`; up to 10
 *   connections; `disconnect` with reason `warning` (about 10 s before), `refresh_requested`,
 *   `link_disabled`; envelopes `{payload, envelope_id, type, accepts_response_payload}`; acks
 *   `{envelope_id, payload?}`;
 * - docs.slack.dev/reference/methods/apps.connections.open, as mirrored in slack-ruby/slack-api-ref
 *   (errors invalid_auth, missing_args, insecure_request, …; rate tier 3 there, while the older
 *   api.slack.com page says tier 1: the newer is used);
 * - issues: slack-ruby/slack-ruby-client#363 (a bot token gets not_allowed_token_type),
 *   slackapi/python-slack-sdk#1877 (the app token as a form field gets invalid_auth);
 * - @slack/socket-mode 3.1 (what the client reads: `retry_attempt`, `retry_reason`, the `type`s).
 * What Slack does not document is marked "assumed" and errs on the strict side.
 */

export const SOCKET_LIMITS = {
  /** "up to 10 open WebSocket connections at the same time" (#connections). */
  connections: 10,
  /** Assumed: Slack calls the URL temporary without a lifetime; a ticket is good once, for a minute. */
  ticketTtlMs: 60_000,
  /** Assumed: the Events API's 3 seconds (docs.slack.dev/apis/events-api#responding) for an ack. */
  ackTimeoutMs: 3_000,
  /** apps.connections.open: Tier 3, 50+ per minute (reference page as mirrored). */
  opensPerMinute: 50,
  /** The `hello` example's approximate_connection_time (seconds); the fake never ends one itself. */
  approximateConnectionTimeSec: 3_600,
} as const;

/** The WebSocket path of the URL Slack hands out (`wss://wss-….slack.com/link/?ticket=…`). */
const LINK_PATH = '/link/';
/** What `debug_info.host` says, in hello and disconnect messages. */
const DEBUG_HOST = 'fake-applink-1';

/** An envelope got no ack in time (or no connection opened to send it on). */
export class SocketAckTimeoutError extends Error {
  constructor(
    readonly envelopeId: string,
    readonly timeoutMs: number,
    readonly sent: boolean,
  ) {
    super(
      sent
        ? `fake Slack: no ack for envelope ${envelopeId} within ${timeoutMs} ms`
        : `fake Slack: no Socket Mode connection open within ${timeoutMs} ms to send envelope ${envelopeId}`,
    );
    this.name = 'SocketAckTimeoutError';
  }
}

/** What an app sends back: `{envelope_id, payload?}` (#acknowledge). */
const ackSchema = z.object({
  envelope_id: z.string().min(1),
  payload: z.record(z.string(), z.unknown()).optional(),
});

/** A Host header worth echoing into a URL: a name or an IPv4/IPv6 literal, and a port. */
const HOST_HEADER = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(:\d{1,5})?$/;

interface Live {
  record: FakeSocketConnection;
  ws: WebSocket;
}

interface Waiting {
  resolve(ack: FakeSocketAck): void;
  timer: NodeJS.Timeout;
}

export interface SocketModeOptions {
  appToken: string;
  appId: string;
  teamId: string;
  botUserId: string;
  clock: () => number;
  rateLimitsEnabled: boolean;
  /** Overrides of opens per minute (FakeSlackOptions.rateLimits['apps.connections.open']). */
  opensPerMinute?: number;
}

export class SocketMode implements FakeSocketMode {
  readonly connections: FakeSocketConnection[] = [];
  readonly envelopes: FakeSocketEnvelope[] = [];
  readonly acks: FakeSocketAck[] = [];
  readonly problems: FakeSocketProblem[] = [];
  readonly appToken: string;

  readonly #options: SocketModeOptions;
  readonly #wss = new WebSocketServer({ noServer: true });
  readonly #tickets = new Map<string, { issuedAt: number; used: boolean }>();
  readonly #live = new Set<Live>();
  readonly #waiting = new Map<string, Waiting>();
  /** Called whenever a connection opens (what `opened()` and a pending delivery wait for). */
  readonly #onOpen = new Set<() => void>();
  /** apps.connections.open is limited per app, not per workspace: its own window. */
  readonly #rateLimits: RateLimits;

  constructor(options: SocketModeOptions) {
    if (!options.appToken.startsWith('xapp-'))
      throw new Error('fake Slack: appToken must be an app-level token (xapp-…)');
    this.#options = options;
    this.appToken = options.appToken;
    this.#rateLimits = new RateLimits({
      rateLimitsEnabled: options.rateLimitsEnabled,
      rateLimits: { 'apps.connections.open': options.opensPerMinute ?? SOCKET_LIMITS.opensPerMinute },
    });
  }

  get openCount(): number {
    return this.#live.size;
  }

  /**
   * apps.connections.open, after the server's injected faults: the token, then the rate window,
   * then a fresh ticket. `host` is the Host header the caller sent (the URL names the address it
   * reached the fake at); `fallbackHost` the fake's own, for a request without a usable one.
   */
  open(
    request: {
      httpMethod: string;
      token: string | undefined;
      tokenIn: 'header' | 'body' | 'both' | undefined;
    },
    botTokens: (token: string) => boolean,
    host: string | undefined,
    fallbackHost: string,
  ): { ok: true; url: string } | { retryAfter: number } {
    if (request.httpMethod !== 'POST') throw new SlackRefusal('insecure_request');
    const { token } = request;
    if (token === undefined || token === '') throw new SlackRefusal('not_authed');
    // The method page: the token goes in the Authorization header; as a POST field it is refused
    // (invalid_auth in python-slack-sdk#1877's reproduction).
    if (request.tokenIn !== 'header') throw new SlackRefusal('invalid_auth');
    if (botTokens(token)) throw new SlackRefusal('not_allowed_token_type');
    if (token !== this.appToken) throw new SlackRefusal('invalid_auth');
    const now = this.#options.clock();
    const retryAfter = this.#rateLimits.check('apps.connections.open', {}, now);
    if (retryAfter !== undefined) return { retryAfter };
    const ticket = randomUUID();
    this.#tickets.set(ticket, { issuedAt: now, used: false });
    const reached = host !== undefined && HOST_HEADER.test(host) ? host : fallbackHost;
    return { ok: true, url: `ws://${reached}${LINK_PATH}?ticket=${ticket}&app_id=${this.#options.appId}` };
  }

  /** An HTTP upgrade to the server: a WebSocket for a good ticket, else refused. */
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const url = new URL(req.url ?? '/', 'http://fake');
    if (url.pathname !== LINK_PATH) {
      this.#refuse(socket, 404, `no WebSocket at ${url.pathname}`);
      return;
    }
    const ticket = this.#tickets.get(url.searchParams.get('ticket') ?? '');
    // Assumed: Slack answers a bad ticket by refusing the upgrade; its code is not documented.
    if (ticket === undefined) {
      this.#refuse(socket, 401, 'unknown ticket');
      return;
    }
    if (ticket.used) {
      this.#refuse(socket, 401, 'ticket used');
      return;
    }
    if (ticket.issuedAt + SOCKET_LIMITS.ticketTtlMs <= this.#options.clock()) {
      this.#refuse(socket, 401, 'ticket expired');
      return;
    }
    // Assumed: an eleventh connection is refused at the upgrade (Slack documents only the limit).
    if (this.#live.size >= SOCKET_LIMITS.connections) {
      this.#refuse(socket, 429, `already ${SOCKET_LIMITS.connections} connections`);
      return;
    }
    ticket.used = true;
    this.#wss.handleUpgrade(req, socket, head, (ws) => this.#connected(ws, req));
  }

  sendEvent(event: Record<string, unknown>, options: SocketEventOptions = {}): Promise<FakeSocketAck> {
    const payload = eventEnvelope(event, {
      teamId: options.teamId ?? this.#options.teamId,
      apiAppId: this.#options.appId,
      botUserId: this.#options.botUserId,
      ...(options.eventId === undefined ? {} : { eventId: options.eventId }),
      ...(options.eventTime === undefined ? {} : { eventTime: options.eventTime }),
    });
    // retry_attempt / retry_reason: what @slack/socket-mode reads for a redelivery (Slack's page
    // does not show them; assumed present on every events_api envelope).
    return this.#deliver('events_api', payload, false, options, {
      retry_attempt: options.retryAttempt ?? 0,
      retry_reason: options.retryReason ?? '',
    });
  }

  sendInteraction(
    payload: Record<string, unknown>,
    options: SocketEnvelopeOptions = {},
  ): Promise<FakeSocketAck> {
    // The page's block_actions and view_submission examples both accept a response payload.
    return this.#deliver('interactive', payload, true, options, {});
  }

  disconnect(reason: SocketDisconnectReason = 'refresh_requested'): number {
    const message = JSON.stringify({ type: 'disconnect', reason, debug_info: { host: DEBUG_HOST } });
    for (const live of this.#live) live.ws.send(message);
    return this.#live.size;
  }

  drop(): number {
    const n = this.#live.size;
    // terminate(): the TCP connection is destroyed, no close frame — what a cut network looks like.
    for (const live of [...this.#live]) live.ws.terminate();
    return n;
  }

  opened(count: number, timeoutMs = 10_000): Promise<void> {
    const done = (): boolean => this.connections.length >= count && this.#live.size > 0;
    if (done()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const check = (): void => {
        if (!done()) return;
        clearTimeout(timer);
        this.#onOpen.delete(check);
        resolve();
      };
      const timer = setTimeout(() => {
        this.#onOpen.delete(check);
        reject(
          new Error(
            `fake Slack: ${count} Socket Mode connection(s) did not open within ${timeoutMs} ms (${this.connections.length} so far)`,
          ),
        );
      }, timeoutMs);
      this.#onOpen.add(check);
    });
  }

  /** Ends every connection (the fake is closing). */
  close(): void {
    for (const live of [...this.#live]) live.ws.terminate();
    for (const [, waiting] of this.#waiting) clearTimeout(waiting.timer);
    this.#waiting.clear();
    this.#wss.close();
  }

  #connected(ws: WebSocket, req: IncomingMessage): void {
    const record: FakeSocketConnection = {
      id: this.connections.length + 1,
      openedAt: this.#options.clock(),
      remoteAddress: req.socket.remoteAddress ?? '',
    };
    const live: Live = { record, ws };
    this.connections.push(record);
    this.#live.add(live);
    ws.on('message', (data, isBinary) => this.#received(record, data, isBinary));
    // A dropped peer: 'close' follows; the error itself says nothing a test asserts.
    ws.on('error', () => undefined);
    ws.on('close', (code) => {
      record.closedAt = this.#options.clock();
      record.closeCode = code;
      this.#live.delete(live);
    });
    ws.send(
      JSON.stringify({
        type: 'hello',
        num_connections: this.#live.size,
        debug_info: {
          host: DEBUG_HOST,
          build_number: 1,
          approximate_connection_time: SOCKET_LIMITS.approximateConnectionTimeSec,
        },
        connection_info: { app_id: this.#options.appId },
      }),
    );
    for (const notify of [...this.#onOpen]) notify();
  }

  #received(connection: FakeSocketConnection, data: RawData, isBinary: boolean): void {
    const problem = (reason: string): void => {
      this.problems.push({ connection: connection.id, reason, at: this.#options.clock() });
    };
    if (isBinary) {
      problem('a binary message');
      return;
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(Buffer.isBuffer(data) ? data.toString('utf8') : String(data));
    } catch {
      problem('not JSON');
      return;
    }
    const ack = ackSchema.safeParse(parsed);
    if (!ack.success) {
      problem(
        `not an acknowledgement: ${ack.error.issues.map((i) => `${i.path.join('.')} ${i.message}`).join('; ')}`,
      );
      return;
    }
    const record: FakeSocketAck = {
      envelopeId: ack.data.envelope_id,
      ...(ack.data.payload === undefined ? {} : { payload: ack.data.payload }),
      connection: connection.id,
      at: this.#options.clock(),
    };
    const waiting = this.#waiting.get(record.envelopeId);
    if (waiting === undefined) record.unexpected = true;
    this.acks.push(record);
    if (waiting === undefined) return;
    this.#waiting.delete(record.envelopeId);
    clearTimeout(waiting.timer);
    waiting.resolve(record);
  }

  async #deliver(
    type: FakeSocketEnvelope['type'],
    payload: Record<string, unknown>,
    acceptsResponsePayload: boolean,
    options: SocketEnvelopeOptions,
    extra: Record<string, unknown>,
  ): Promise<FakeSocketAck> {
    const envelopeId = randomUUID();
    const timeoutMs = options.timeoutMs ?? SOCKET_LIMITS.ackTimeoutMs;
    const deadline = Date.now() + timeoutMs;
    // Assumed: Slack holds an envelope while the app has no connection (it retries deliveries
    // until acknowledged); the fake waits for one within the same timeout.
    const live = await this.#anOpenConnection(deadline);
    if (live === undefined) throw new SocketAckTimeoutError(envelopeId, timeoutMs, false);
    const acked = new Promise<FakeSocketAck>((resolve, reject) => {
      const timer = setTimeout(
        () => {
          this.#waiting.delete(envelopeId);
          reject(new SocketAckTimeoutError(envelopeId, timeoutMs, true));
        },
        Math.max(0, deadline - Date.now()),
      );
      this.#waiting.set(envelopeId, { resolve, timer });
    });
    this.envelopes.push({ envelopeId, type, payload, connection: live.record.id, at: this.#options.clock() });
    live.ws.send(
      JSON.stringify({
        envelope_id: envelopeId,
        payload,
        type,
        accepts_response_payload: acceptsResponsePayload,
        ...extra,
      }),
    );
    return acked;
  }

  /** The newest open connection (Slack may pick any; the newest keeps tests deterministic). */
  async #anOpenConnection(deadline: number): Promise<Live | undefined> {
    // Only an open one: a connection told to go may still be closing, and a send there is lost.
    const newest = (): Live | undefined =>
      [...this.#live].filter((l) => l.ws.readyState === l.ws.OPEN).at(-1);
    const now = newest();
    if (now !== undefined) return now;
    return new Promise((resolve) => {
      const check = (): void => {
        const live = newest();
        if (live === undefined) return;
        clearTimeout(timer);
        this.#onOpen.delete(check);
        resolve(live);
      };
      const timer = setTimeout(
        () => {
          this.#onOpen.delete(check);
          resolve(undefined);
        },
        Math.max(0, deadline - Date.now()),
      );
      this.#onOpen.add(check);
    });
  }

  #refuse(socket: Duplex, status: number, reason: string): void {
    this.problems.push({ reason, at: this.#options.clock() });
    const text = status === 404 ? 'Not Found' : status === 429 ? 'Too Many Requests' : 'Unauthorized';
    socket.end(`HTTP/1.1 ${status} ${text}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
  }
}
