/**
 * A stand-in for the Bot Connector service a Teams bot talks back to (its `serviceUrl`), on
 * loopback, for tests that drive Microsoft's real Agents SDK against it. It answers the v3
 * conversations API the SDK's ConnectorClient calls — send, reply, update, a member's lookup —
 * and refuses what Teams refuses (./rules.ts): a token its Entra did not issue for the Bot
 * Connector, a conversation it does not know, a send over a thread's rate limits (429 with
 * `Retry-After`), a message too large, and the streaming protocol's rules (personal chats only,
 * one stream at a time, one update a second, two minutes, a user's Stop as 403).
 *
 * The tests' side: conversations to register, inbound activities to deliver to the bot signed
 * by the fake Entra, what each conversation shows now, the calls made, and the user's Stop.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ChannelTokenOptions, FakeEntra } from './entra.js';
import {
  INFORMATIVE_MAX,
  MESSAGE_MAX_BYTES,
  PACE_TOLERANCE_MS,
  STREAM_CANCELLED,
  STREAM_LIMIT_MS,
  STREAM_PACE_MS,
  STREAM_TIMED_OUT,
  Windows,
} from './rules.js';

export type ConversationType = 'personal' | 'channel' | 'groupChat';

export interface Member {
  /** The 29: id Teams gives the person in the app's conversations. */
  id: string;
  name: string;
  aadObjectId: string;
  email: string;
  userPrincipalName: string;
}

export interface FakeConversation {
  /** A channel's id (19:…@thread.tacv2), a group chat's, or a personal chat's (a:…). */
  id: string;
  type: ConversationType;
  tenantId: string;
  teamId?: string;
  members: Member[];
}

/** A message as the conversation shows it now. */
export interface ShownMessage {
  id: string;
  /** The conversation it is in (a channel thread's: `<channel>;messageid=<root>`). */
  conversationId: string;
  from: 'bot' | string;
  text: string;
  attachments: unknown[];
  /** Streamed (its id is the stream's), and how the stream ended. */
  stream?: { ended: 'final' | 'timed-out' | 'stopped' | 'open'; updates: number; informative: string };
  edits: number;
}

export interface ConnectorCall {
  method: string;
  conversationId: string;
  kind: 'send' | 'update' | 'member' | 'other';
  status: number;
  at: number;
  /** An accepted send or update: the message it left, and the text that message shows now. */
  messageId?: string;
  shows?: string;
}

export interface ConnectorOptions {
  entra: FakeEntra;
  /** The bot's app id: only its tokens are accepted. */
  botId: string;
  /** Streaming's time limit (Teams: two minutes); tests shorten it. */
  streamLimitMs?: number;
}

interface Stream {
  id: string;
  conversationId: string;
  startedAt: number;
  lastAt: number;
  sequence: number;
  stopped: boolean;
  ended: boolean;
}

export class FakeBotConnector {
  readonly calls: ConnectorCall[] = [];
  #server: Server | undefined;
  #url = '';
  readonly #o: ConnectorOptions;
  readonly #conversations = new Map<string, FakeConversation>();
  readonly #messages = new Map<string, ShownMessage>();
  readonly #streams = new Map<string, Stream>();
  readonly #windows = new Windows();
  /** Until then every send and edit is refused with 429, as when Teams throttles the app. */
  #throttledUntil = 0;

  constructor(options: ConnectorOptions) {
    this.#o = options;
  }

  get url(): string {
    return this.#url;
  }

  async start(): Promise<this> {
    this.#server = createServer((req, res) => {
      void this.#route(req, res).catch((error: unknown) => {
        if (!res.headersSent) send(res, 500, { error: { code: 'ServiceError', message: String(error) } });
      });
    });
    await new Promise<void>((resolve) => this.#server?.listen(0, '127.0.0.1', resolve));
    this.#url = `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}/teams/`;
    return this;
  }

  conversation(c: FakeConversation): FakeConversation {
    this.#conversations.set(c.id, c);
    return c;
  }

  /** What a conversation (with its channel threads) shows, oldest first. */
  messages(conversationId: string): ShownMessage[] {
    const base = baseOf(conversationId);
    return [...this.#messages.values()].filter((m) => baseOf(m.conversationId) === base);
  }

  /** The person presses Stop on the answer streaming in their chat. */
  stop(conversationId: string): void {
    for (const s of this.#streams.values())
      if (s.conversationId === conversationId && !s.ended) s.stopped = true;
  }

  /**
   * For `ms` from now, every send and edit is refused with 429 and a `Retry-After` of the time
   * left, as Teams does when it throttles the app for reasons of its own (service-wide load).
   */
  throttleFor(ms: number): void {
    this.#throttledUntil = Date.now() + ms;
  }

  /** Sends are refused with 429 meanwhile; how many so far. */
  get throttled(): number {
    return this.calls.filter((c) => c.status === 429).length;
  }

  /**
   * Delivers an inbound activity to the bot as Teams does: POSTed to its endpoint with the
   * channel's token (or `token: null` for none). Returns the bot's status and body.
   */
  async deliver(
    endpoint: string,
    activity: Record<string, unknown>,
    token: Partial<ChannelTokenOptions> | null = {},
  ): Promise<{ status: number; body: string }> {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (token !== null) {
      const jwt = await this.#o.entra.channelToken({
        audience: this.#o.botId,
        serviceUrl: this.#url,
        ...token,
      });
      headers.authorization = `Bearer ${jwt}`;
    }
    const res = await fetch(endpoint, { method: 'POST', headers, body: JSON.stringify(activity) });
    return { status: res.status, body: await res.text() };
  }

  /** A person's message as Teams delivers it (a channel post mentions the bot). */
  message(o: {
    conversation: FakeConversation;
    from: Member;
    text: string;
    /** A reply in a channel thread: the root post's id. */
    threadRoot?: string;
    id?: string;
  }): Record<string, unknown> {
    const id = o.id ?? String(Date.now() + Math.floor(Math.random() * 1000));
    const c = o.conversation;
    const mention =
      c.type === 'personal' ? [] : [{ type: 'mention', mentioned: this.#bot(), text: '<at>Kourier</at>' }];
    const conversationId = c.type === 'channel' ? `${c.id};messageid=${o.threadRoot ?? id}` : c.id;
    this.#messages.set(`${conversationId}/${id}`, {
      id,
      conversationId,
      from: o.from.id,
      text: o.text,
      attachments: [],
      edits: 0,
    });
    return {
      type: 'message',
      id,
      timestamp: new Date().toISOString(),
      serviceUrl: this.#url,
      channelId: 'msteams',
      from: { id: o.from.id, name: o.from.name, aadObjectId: o.from.aadObjectId },
      conversation: {
        id: conversationId,
        conversationType: c.type,
        tenantId: c.tenantId,
        ...(c.type === 'personal' ? {} : { isGroup: true }),
      },
      recipient: this.#bot(),
      text: c.type === 'personal' ? o.text : `<at>Kourier</at> ${o.text}`,
      textFormat: 'plain',
      entities: mention,
      channelData: {
        tenant: { id: c.tenantId },
        ...(c.teamId === undefined ? {} : { team: { id: c.teamId } }),
        ...(c.type === 'channel' ? { channel: { id: c.id } } : {}),
      },
    };
  }

  /**
   * A person's press of an Adaptive Card's Action.Execute on the app's message `messageId`, as
   * Teams invokes the app (`adaptiveCard/action`, the card's inputs merged into the data).
   */
  cardAction(o: {
    conversation: FakeConversation;
    from: Member;
    messageId: string;
    /** A channel's: the thread's root. */
    threadRoot?: string;
    verb: string;
    data: Record<string, unknown>;
  }): Record<string, unknown> {
    const base = this.message({
      conversation: o.conversation,
      from: o.from,
      text: '',
      threadRoot: o.threadRoot ?? o.messageId,
    });
    this.#messages.delete(`${(base.conversation as { id: string }).id}/${base.id as string}`);
    return {
      ...base,
      type: 'invoke',
      name: 'adaptiveCard/action',
      text: undefined,
      replyToId: o.messageId,
      value: { action: { type: 'Action.Execute', verb: o.verb, data: o.data }, trigger: 'manual' },
    };
  }

  async close(): Promise<void> {
    const server = this.#server;
    if (server === undefined) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  #bot() {
    return { id: `28:${this.#o.botId}`, name: 'Kourier' };
  }

  async #route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://connector');
    const match = /^\/teams\/v3\/conversations\/([^/]+)\/(activities|members)(?:\/([^/]+))?$/.exec(
      url.pathname,
    );
    const conversationId = decodeURIComponent(match?.[1] ?? '');
    const record = (kind: ConnectorCall['kind'], status: number): void => {
      this.calls.push({ method: req.method ?? '', conversationId, kind, status, at: Date.now() });
    };
    if (!(await this.#authorized(req))) {
      record('other', 401);
      return send(res, 401, { message: 'Authorization has been denied for this request.' });
    }
    const conversation = this.#conversations.get(baseOf(conversationId));
    if (match === null || conversation === undefined) {
      record('other', 404);
      return send(res, 404, { error: { code: 'ConversationNotFound', message: 'Conversation not found.' } });
    }
    const [, , collection, item] = match;
    if (collection === 'members') {
      // By the 29: id, or by the Entra object id (which Teams takes too; assumed strictly here).
      const wanted = decodeURIComponent(item ?? '');
      const member = conversation.members.find((m) => m.id === wanted || m.aadObjectId === wanted);
      record('member', member === undefined ? 404 : 200);
      if (member === undefined)
        return send(res, 404, { error: { code: 'MemberNotFound', message: 'Not found' } });
      return send(res, 200, { ...member, tenantId: conversation.tenantId, userRole: 'user' });
    }
    const activity = JSON.parse(await body(req)) as Record<string, unknown>;
    const kind = req.method === 'PUT' ? 'update' : 'send';
    const now = Date.now();
    const wait = Math.max(this.#windows.wait(conversationId, now), this.#throttledUntil - now);
    if (wait > 0) {
      record(kind, 429);
      res.setHeader('retry-after', String(Math.ceil(wait / 1000)));
      return send(res, 429, { error: { code: 'TooManyRequests', message: 'Too many requests' } });
    }
    const refusal =
      kind === 'update'
        ? this.#update(conversationId, decodeURIComponent(item ?? ''), activity)
        : this.#send(conversation, conversationId, activity, now);
    if (refusal.status < 300) this.#windows.hit(conversationId, now);
    const id = (refusal.body as { id?: unknown }).id;
    const shown = typeof id === 'string' ? this.#messages.get(`${conversationId}/${id}`) : undefined;
    record(kind, refusal.status);
    if (shown !== undefined && refusal.status < 300) {
      const last = this.calls.at(-1) as ConnectorCall;
      last.messageId = shown.id;
      last.shows = shown.text;
    }
    send(res, refusal.status, refusal.body);
  }

  async #authorized(req: IncomingMessage): Promise<boolean> {
    const header = req.headers.authorization ?? '';
    if (!header.startsWith('Bearer ')) return false;
    try {
      const claims = await this.#o.entra.verify(header.slice(7), 'https://api.botframework.com');
      return claims.appid === this.#o.botId;
    } catch {
      return false;
    }
  }

  #send(
    c: FakeConversation,
    conversationId: string,
    activity: Record<string, unknown>,
    now: number,
  ): { status: number; body: unknown } {
    const info = streamInfo(activity);
    const text = typeof activity.text === 'string' ? activity.text : '';
    const attachments = Array.isArray(activity.attachments) ? activity.attachments : [];
    if (Buffer.byteLength(JSON.stringify({ text, attachments })) > MESSAGE_MAX_BYTES) {
      return refusal(413, 'MessageSizeTooBig', 'Message size too big');
    }
    if (info !== undefined) return this.#stream(c, conversationId, activity, info, text, now);
    if (activity.type !== 'message') return { status: 200, body: {} };
    const id = randomUUID();
    this.#messages.set(`${conversationId}/${id}`, {
      id,
      conversationId,
      from: 'bot',
      text,
      attachments,
      edits: 0,
    });
    return { status: 201, body: { id } };
  }

  #stream(
    c: FakeConversation,
    conversationId: string,
    activity: Record<string, unknown>,
    info: StreamInfo,
    text: string,
    now: number,
  ): { status: number; body: unknown } {
    if (c.type !== 'personal') {
      return refusal(400, 'BadArgument', 'Streaming API is not enabled for this conversation type');
    }
    const limitMs = this.#o.streamLimitMs ?? STREAM_LIMIT_MS;
    if (info.streamId === undefined) {
      if (info.streamType === 'final' || info.streamSequence !== 1) {
        return refusal(400, 'BadArgument', 'A stream starts with streamSequence 1');
      }
      if ([...this.#streams.values()].some((s) => s.conversationId === conversationId && !s.ended)) {
        return refusal(400, 'BadArgument', 'A stream is already in progress in this chat');
      }
      const stream: Stream = {
        id: randomUUID(),
        conversationId,
        startedAt: now,
        lastAt: now,
        sequence: 1,
        stopped: false,
        ended: false,
      };
      this.#streams.set(stream.id, stream);
      this.#messages.set(`${conversationId}/${stream.id}`, {
        id: stream.id,
        conversationId,
        from: 'bot',
        text: info.streamType === 'informative' ? '' : text,
        attachments: [],
        stream: { ended: 'open', updates: 1, informative: info.streamType === 'informative' ? text : '' },
        edits: 0,
      });
      return { status: 201, body: { id: stream.id } };
    }
    const stream = this.#streams.get(info.streamId);
    const shown = this.#messages.get(`${conversationId}/${info.streamId}`);
    if (stream === undefined || shown?.stream === undefined)
      return refusal(404, 'NotFound', 'No such stream');
    if (stream.stopped) {
      stream.ended = true;
      shown.stream.ended = 'stopped';
      return refusal(403, 'ContentStreamNotAllowed', STREAM_CANCELLED);
    }
    if (stream.ended) return refusal(403, 'ContentStreamNotAllowed', 'Content stream has ended.');
    if (now - stream.startedAt > limitMs) {
      stream.ended = true;
      shown.stream.ended = 'timed-out';
      return refusal(403, 'ContentStreamNotAllowed', STREAM_TIMED_OUT);
    }
    if (info.streamType !== 'final') {
      if (info.streamSequence === undefined || info.streamSequence <= stream.sequence) {
        return refusal(400, 'BadArgument', 'streamSequence must increase');
      }
      if (now - stream.lastAt < STREAM_PACE_MS - PACE_TOLERANCE_MS) {
        return refusal(429, 'TooManyRequests', 'Stream updates are limited to one a second');
      }
      if (info.streamType === 'informative' && text.length > INFORMATIVE_MAX) {
        return refusal(400, 'BadArgument', 'Informative text is limited to 1000 characters');
      }
      stream.sequence = info.streamSequence;
    }
    stream.lastAt = now;
    shown.stream.updates++;
    if (info.streamType === 'informative') shown.stream.informative = text;
    else shown.text = text;
    if (info.streamType === 'final' && activity.type === 'message') {
      stream.ended = true;
      shown.stream.ended = 'final';
      shown.attachments = Array.isArray(activity.attachments) ? activity.attachments : [];
    }
    return { status: 201, body: { id: stream.id } };
  }

  #update(
    conversationId: string,
    id: string,
    activity: Record<string, unknown>,
  ): { status: number; body: unknown } {
    const shown = this.#messages.get(`${conversationId}/${id}`);
    if (shown === undefined || shown.from !== 'bot') return refusal(404, 'NotFound', 'Activity not found');
    if (shown.stream !== undefined && shown.stream.ended === 'open') {
      return refusal(400, 'BadArgument', 'A message being streamed cannot be edited');
    }
    shown.text = typeof activity.text === 'string' ? activity.text : '';
    shown.attachments = Array.isArray(activity.attachments) ? activity.attachments : [];
    shown.edits++;
    return { status: 200, body: { id } };
  }
}

interface StreamInfo {
  streamType: 'informative' | 'streaming' | 'final';
  streamId?: string;
  streamSequence?: number;
}

function streamInfo(activity: Record<string, unknown>): StreamInfo | undefined {
  const entities = Array.isArray(activity.entities)
    ? (activity.entities as Array<Record<string, unknown>>)
    : [];
  const e = entities.find((x) => x.type === 'streaminfo');
  if (e === undefined) return undefined;
  return {
    streamType: e.streamType as StreamInfo['streamType'],
    ...(typeof e.streamId === 'string' ? { streamId: e.streamId } : {}),
    ...(typeof e.streamSequence === 'number' ? { streamSequence: e.streamSequence } : {}),
  };
}

function baseOf(conversationId: string): string {
  return conversationId.split(';')[0] ?? conversationId;
}

function refusal(status: number, code: string, message: string): { status: number; body: unknown } {
  return { status, body: { error: { code, message } } };
}

function send(res: ServerResponse, status: number, value: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(value));
}

function body(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => {
      text += chunk;
    });
    req.on('end', () => resolve(text));
    req.on('error', reject);
  });
}
