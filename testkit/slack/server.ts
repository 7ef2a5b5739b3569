// Over our ~450-line rule as one piece: the fake's front door (its test-facing API and the one
// request path every method goes through: body, faults, auth, rate limits, the method, the record).
// What Slack checks per method already lives in modules of its own (./methods/, ./block-kit.ts,
// ./rate-limits.ts, ./workspace.ts); splitting the front door would scatter one request's path.
/**
 * A stand-in for Slack's Web API on loopback, for tests that drive the real `@slack/web-api` WebClient
 * (and Bolt, which uses it) against it, as the surface and Bolt both do:
 * `new WebClient(token, { slackApiUrl: fake.url })`. Socket Mode too: apps.connections.open and the
 * WebSocket it points to are served on the same port (./socket-mode.ts).
 *
 * It answers the way Slack does — HTTP 200 with `{ok: true, …}` or `{ok: false, error: 'code'}`, HTTP 429
 * with `Retry-After` when rate limited — and refuses what Slack refuses, so a test fails where production
 * would. Every limit (./api.ts, ./block-kit.ts, ./rate-limits.ts) names its source; where Slack's
 * behaviour is undocumented the choice is marked "assumed" and errs on the strict side.
 *
 * Sources:
 * - method pages, docs.slack.dev/reference/methods/<method> (arguments, errors, rate tier), as mirrored in
 *   slack-ruby/slack-api-ref `docs.slack.dev/methods/*.json` and `methods/chat/*.json` (2026-08);
 * - Block Kit reference docs.slack.dev/reference/block-kit/blocks/* and the `@slack/types` typings;
 * - rate limits: docs.slack.dev/apis/web-api/rate-limits (tiers 1–4: 1+/20+/50+/100+ per minute, per
 *   method, per workspace, per app; chat.postMessage "special": about 1 per second per channel);
 * - docs/reference/slack.md for the behaviours seen in public issue reports (stream expiry, ~13.2k blocks).
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { type AddressInfo, isIP } from 'node:net';
import { z } from 'zod';
import type {
  FakeAgentSession,
  FakeMessage,
  FakeSlack,
  FakeSlackOptions,
  FakeWorkspace,
  RecordedCall,
} from './api.js';
import { OAuthDesk } from './oauth.js';
import { ResponseUrls } from './responses.js';
import { SocketMode } from './socket-mode.js';
import { TeamView, Tenant } from './tenant.js';
import { type Args, isRecord, type Result, SlackRefusal, str } from './values.js';
import type { Workspace } from './workspace.js';

/**
 * The server: HTTP in (form or JSON bodies, the token), injected faults, auth, rate limits, then
 * the method's handler against the workspace; every call recorded. What Slack checks lives
 * beside it: Block Kit (./block-kit.ts), rate windows (./rate-limits.ts), the workspace's state
 * and shared rules (./workspace.ts) and the methods by family (./methods/).
 */

const STREAM_METHODS = new Set(['chat.startStream', 'chat.appendStream', 'chat.stopStream']);
/** Form fields @slack/web-api JSON-stringifies (any non-primitive value) that Slack parses as JSON. */
const JSON_FIELDS: Record<string, string> = {
  blocks: 'invalid_blocks_format',
  attachments: 'invalid_attachments',
  metadata: 'invalid_metadata_format',
  chunks: 'invalid_chunks',
  unfurls: 'invalid_unfurls',
  file_ids: 'invalid_array_arg',
  prompts: 'invalid_arguments',
};

class FakeSlackServer implements FakeSlack {
  url = '';
  readonly calls: RecordedCall[] = [];
  readonly teamId: string;
  readonly botUserId: string;
  readonly botId: string;
  readonly botToken: string;

  private readonly ws: Workspace;
  /** The first workspace, then `options.workspaces`. */
  private readonly tenants: Tenant[];
  private readonly oauth: OAuthDesk | undefined;
  private readonly streaming: boolean;
  private readonly clock: () => number;
  private readonly failures = new Map<string, Array<{ error: string; left: number }>>();
  private readonly serverErrors = new Map<string, Array<{ status: number; left: number }>>();
  private readonly throttles = new Map<string, Array<{ retryAfter: number; left: number }>>();
  private readonly delays = new Map<string, Array<{ ms: number; left: number }>>();
  private readonly pages = new Map<string, Array<{ left: number }>>();
  /** Methods whose calls wait, unanswered, until the test lets them go (holdCalls). */
  private readonly held = new Map<string, { released: Promise<void>; waiting: number }>();
  private server: Server | undefined;
  private readonly responseUrls: ResponseUrls;
  readonly socketMode: SocketMode;
  private readonly host: string;
  private readonly port: number;

  constructor(options: FakeSlackOptions) {
    const first = new Tenant(options, 'installed');
    this.tenants = [first];
    for (const w of options.workspaces ?? []) {
      if (this.tenants.some((t) => t.ws.teamId === w.teamId || t.token === w.botToken))
        throw new Error(`fake Slack: workspace ${w.teamId} (or its token) is listed twice`);
      this.tenants.push(
        new Tenant(
          {
            ...w,
            clock: options.clock ?? Date.now,
            ...(options.rateLimitsEnabled === undefined
              ? {}
              : { rateLimitsEnabled: options.rateLimitsEnabled }),
          },
          options.oauth === undefined ? 'installed' : 'new',
        ),
      );
    }
    this.oauth = options.oauth === undefined ? undefined : new OAuthDesk(options.oauth);
    this.ws = first.ws;
    this.teamId = this.ws.teamId;
    this.botUserId = this.ws.botUserId;
    this.botId = this.ws.botId;
    this.botToken = first.token;
    this.streaming = options.streaming ?? true;
    this.clock = this.ws.clock;
    this.responseUrls = new ResponseUrls(this.clock);
    const listenOn = LISTEN_OPTIONS.safeParse({ host: options.host, port: options.port });
    if (!listenOn.success)
      throw new Error(
        `fake Slack: ${listenOn.error.issues.map((i) => `${i.path.join('.')} ${i.message}`).join('; ')}`,
      );
    this.host = listenOn.data.host ?? '127.0.0.1';
    this.port = listenOn.data.port ?? 0;
    const opensPerMinute = options.rateLimits?.['apps.connections.open'];
    this.socketMode = new SocketMode({
      appToken: options.appToken ?? 'xapp-test',
      appId: this.ws.appId,
      teamId: this.teamId,
      botUserId: this.botUserId,
      clock: this.clock,
      rateLimitsEnabled: options.rateLimitsEnabled ?? true,
      ...(opensPerMinute === undefined
        ? {}
        : { opensPerMinute: typeof opensPerMinute === 'number' ? opensPerMinute : opensPerMinute.perMinute }),
    });
  }

  get appToken(): string {
    return this.socketMode.appToken;
  }

  responseUrl(o: Parameters<FakeSlack['responseUrl']>[0]): string {
    const base = this.url.replace(/\/api\/$/, '');
    return this.responseUrls.mint(base, {
      ws: this.#tenant(o.teamId ?? this.teamId).ws,
      channel: o.channel,
      user: o.user,
      messageTs: o.messageTs,
      ephemeral: o.ephemeral ?? false,
    });
  }

  get responses(): FakeSlack['responses'] {
    return this.responseUrls.records;
  }

  workspace(teamId: string): FakeWorkspace {
    return new TeamView(this.#tenant(teamId), () => this.calls);
  }

  authorizeInstall(teamId: string, redirectUri?: string): string {
    if (this.oauth === undefined)
      throw new Error('fake Slack: start it with `oauth` to install through OAuth');
    this.#tenant(teamId);
    return this.oauth.authorize(teamId, this.clock(), redirectUri);
  }

  uninstall(teamId: string): void {
    this.#tenant(teamId).state = 'revoked';
  }

  #tenant(teamId: string): Tenant {
    const tenant = this.tenants.find((t) => t.ws.teamId === teamId);
    if (tenant === undefined) throw new Error(`fake Slack: no workspace ${teamId}`);
    return tenant;
  }

  get ephemerals(): FakeSlack['ephemerals'] {
    return this.ws.ephemerals;
  }

  get reactions(): FakeSlack['reactions'] {
    return this.ws.reactions;
  }

  get views(): FakeSlack['views'] {
    return this.ws.views;
  }

  async listen(): Promise<void> {
    const server = createServer((req, res) => {
      this.handle(req, res).catch((err: unknown) => {
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
        res.end(String(err));
      });
    });
    server.on('upgrade', (req, socket, head) => this.socketMode.upgrade(req, socket, head));
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, this.host, () => resolve());
    });
    const { port } = server.address() as AddressInfo;
    this.url = `http://${urlHost(this.host)}:${port}/api/`;
  }

  close(): Promise<void> {
    const server = this.server;
    if (!server) return Promise.resolve();
    this.server = undefined;
    // Upgraded sockets are no longer the HTTP server's to close: the WebSockets end first.
    this.socketMode.close();
    return new Promise((resolve, reject) => {
      server.close((err) => (err ? reject(err) : resolve()));
      server.closeAllConnections();
    });
  }

  // ---- test-facing API ----

  callsOf(method: string): RecordedCall[] {
    return this.calls.filter((c) => c.method === method);
  }

  clearCalls(): void {
    this.calls.length = 0;
  }

  messages(channel: string, threadTs?: string): FakeMessage[] {
    return this.ws.messages(channel, threadTs);
  }

  message(channel: string, ts: string): FakeMessage | undefined {
    return this.ws.message(channel, ts);
  }

  addUser(u: Parameters<FakeSlack['addUser']>[0]): void {
    this.ws.addUser(u);
  }

  addUserGroup(id: string, userIds: string[], options?: { disabled?: boolean }): void {
    this.ws.addUserGroup(id, userIds, options);
  }

  endStreamEarly(channel: string, ts: string): void {
    this.ws.endStreamEarly(channel, ts);
  }

  get suggestedPrompts(): FakeSlack['suggestedPrompts'] {
    return this.ws.suggestedPrompts;
  }

  session(channel: string, threadTs: string): FakeAgentSession | undefined {
    const s = this.ws.sessions.get(`${channel} ${threadTs}`);
    return s === undefined ? undefined : structuredClone(s);
  }

  pressStop(channel: string, threadTs: string, user: string): Record<string, unknown> {
    return this.ws.pressStop(channel, threadTs, user);
  }

  addChannelMember(channel: string, user: string): void {
    this.ws.addChannelMember(channel, user);
  }

  postUserMessage(m: { channel: string; user: string; text: string; threadTs?: string }): FakeMessage {
    return this.ws.postUserMessage(m);
  }

  failNext(method: string, error: string, times = 1): void {
    const list = this.failures.get(method) ?? [];
    list.push({ error, left: times });
    this.failures.set(method, list);
  }

  serverErrorNext(method: string, status = 503, times = 1): void {
    const list = this.serverErrors.get(method) ?? [];
    list.push({ status, left: times });
    this.serverErrors.set(method, list);
  }

  rateLimitNext(method: string, retryAfterSeconds: number, times = 1): void {
    const list = this.throttles.get(method) ?? [];
    list.push({ retryAfter: retryAfterSeconds, left: times });
    this.throttles.set(method, list);
  }

  delayNext(method: string, ms: number, times = 1): void {
    const list = this.delays.get(method) ?? [];
    list.push({ ms, left: times });
    this.delays.set(method, list);
  }

  /**
   * Every call of `method` from now on waits, unanswered, until the returned function is
   * called; `waiting()` says how many calls are waiting. As a Slack that is slow for as long as
   * a test needs, with no figure to guess.
   */
  holdCalls(method: string): { release: () => void; waiting: () => number } {
    let release = (): void => undefined;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    const hold = { released, waiting: 0 };
    this.held.set(method, hold);
    return {
      release: () => {
        if (this.held.get(method) === hold) this.held.delete(method);
        release();
      },
      waiting: () => hold.waiting,
    };
  }

  htmlNext(method: string, times = 1): void {
    const list = this.pages.get(method) ?? [];
    list.push({ left: times });
    this.pages.set(method, list);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (url.pathname.startsWith('/actions/') && req.method === 'POST') {
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      const answer = this.responseUrls.post(url.pathname, Buffer.concat(chunks).toString('utf8'));
      res.writeHead(answer.status, { 'content-type': 'application/json; charset=utf-8' });
      res.end(JSON.stringify(answer.body));
      return;
    }
    if (!url.pathname.startsWith('/api/') || (req.method !== 'POST' && req.method !== 'GET')) {
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('not found');
      return;
    }
    const method = decodeURIComponent(url.pathname.slice('/api/'.length));
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    const contentType = (req.headers['content-type'] ?? '').toLowerCase();
    const isJson = contentType.startsWith('application/json');

    const args: Args = Object.fromEntries(url.searchParams);
    let bodyError: string | undefined;
    if (raw.length > 0) {
      if (isJson) {
        try {
          const parsed: unknown = JSON.parse(raw);
          if (isRecord(parsed)) Object.assign(args, parsed);
          else bodyError = 'invalid_json';
        } catch {
          bodyError = 'invalid_json';
        }
      } else if (contentType.startsWith('application/x-www-form-urlencoded') || contentType === '') {
        for (const [k, v] of new URLSearchParams(raw)) args[k] = v;
      } else {
        bodyError = 'invalid_form_data';
      }
    }

    // Nested values arrive JSON-encoded in form bodies (WebClient JSON.stringifies any non-primitive).
    // Decoded up front so recorded calls show them as objects; a bad one is refused after auth.
    let badJson: string | undefined;
    for (const [field, code] of Object.entries(JSON_FIELDS)) {
      const v = args[field];
      if (typeof v !== 'string') continue;
      try {
        args[field] = JSON.parse(v);
      } catch {
        badJson ??= code;
      }
    }

    // Token: the Authorization header, or (form bodies only) a `token` field; JSON bodies must use the header.
    const header = req.headers.authorization;
    const bearer = header?.startsWith('Bearer ') ? header.slice('Bearer '.length) : undefined;
    const bodyToken = !isJson ? str(args, 'token') : undefined;
    const token = bearer ?? bodyToken;
    const tokenIn =
      bearer !== undefined && bodyToken !== undefined
        ? ('both' as const)
        : bearer !== undefined
          ? ('header' as const)
          : bodyToken !== undefined
            ? ('body' as const)
            : undefined;
    delete args.token;

    const caller =
      token === undefined ? undefined : this.tenants.find((t) => t.token === token || t.rotated.has(token));
    const reply = (status: number, body: Result, headers: Record<string, string> = {}): void => {
      const ok = body.ok === true;
      this.calls.push({
        method,
        args,
        ok,
        ...(ok ? {} : { error: String(body.error) }),
        status,
        at: this.clock(),
        ...(caller === undefined ? {} : { team: caller.ws.teamId }),
        ...(tokenIn === undefined ? {} : { tokenIn }),
        ...(contentType === '' ? {} : { contentType }),
      });
      res.writeHead(status, {
        'content-type': 'application/json; charset=utf-8',
        'x-slack-req-id': randomUUID(),
        ...headers,
      });
      res.end(JSON.stringify(body));
    };
    const refuse = (e: SlackRefusal, warnings: string[] = []): void => {
      const body: Result = { ok: false, error: e.code, ...e.extra };
      const meta: Record<string, unknown> = {};
      if (e.messages.length > 0) meta.messages = e.messages;
      if (warnings.length > 0) {
        meta.warnings = warnings;
        body.warning = warnings.join(',');
      }
      if (Object.keys(meta).length > 0) body.response_metadata = meta;
      reply(200, body);
    };

    // Injected faults first: they model Slack's state, whatever the request.
    const hold = this.held.get(method);
    if (hold !== undefined) {
      hold.waiting++;
      await hold.released;
      hold.waiting--;
      if (res.destroyed || req.socket.destroyed) return;
    }
    const delay = this.take(this.delays, method);
    if (delay) {
      await new Promise((resolve) => setTimeout(resolve, delay.ms));
      // The caller gave up meanwhile: there is nobody to answer.
      if (res.destroyed || req.socket.destroyed) return;
    }
    if (this.take(this.pages, method)) {
      this.calls.push({ method, args, ok: false, error: 'html_page', status: 200, at: this.clock() });
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end('<html><body><h1>Service temporarily unavailable</h1></body></html>');
      return;
    }
    const outage = this.take(this.serverErrors, method);
    if (outage) {
      reply(outage.status, { ok: false, error: 'service_unavailable' });
      return;
    }
    const throttle = this.take(this.throttles, method);
    if (throttle) {
      reply(429, { ok: false, error: 'ratelimited' }, { 'retry-after': String(throttle.retryAfter) });
      return;
    }
    const failure = this.take(this.failures, method);
    if (failure) {
      refuse(new SlackRefusal(failure.error));
      return;
    }
    if (bodyError) {
      refuse(new SlackRefusal(bodyError));
      return;
    }
    // Socket Mode's URL takes the app-level token, not a workspace's (./socket-mode.ts).
    if (method === 'apps.connections.open') {
      try {
        const opened = this.socketMode.open(
          { httpMethod: req.method ?? '', token, tokenIn },
          (t) => this.tenants.some((x) => x.token === t || x.rotated.has(t)),
          req.headers.host,
          new URL(this.url).host,
        );
        if ('retryAfter' in opened)
          reply(429, { ok: false, error: 'ratelimited' }, { 'retry-after': String(opened.retryAfter) });
        else reply(200, opened);
      } catch (e) {
        if (e instanceof SlackRefusal) refuse(e);
        else throw e;
      }
      return;
    }
    // oauth.v2.access takes the app's credentials, not a token.
    if (method === 'oauth.v2.access' && this.oauth !== undefined) {
      try {
        reply(200, { ok: true, ...this.oauth.exchange(args, header, this.tenants, this.clock()) });
      } catch (e) {
        if (e instanceof SlackRefusal) refuse(e);
        else throw e;
      }
      return;
    }
    if (token === undefined || token === '') {
      refuse(new SlackRefusal('not_authed'));
      return;
    }
    // Assumed: an app-level token works only with the few methods Slack lists for it
    // (docs.slack.dev/authentication/tokens#app); elsewhere the answer a wrong kind of token
    // gets on apps.connections.open (slack-ruby-client#363).
    if (token === this.socketMode.appToken) {
      refuse(new SlackRefusal('not_allowed_token_type'));
      return;
    }
    if (caller === undefined || caller.state === 'new') {
      refuse(new SlackRefusal('invalid_auth'));
      return;
    }
    if (caller.state === 'revoked') {
      refuse(new SlackRefusal('token_revoked'));
      return;
    }
    const expiresAt = token === undefined ? undefined : caller.rotated.get(token);
    if (expiresAt !== undefined && expiresAt <= this.clock()) {
      refuse(new SlackRefusal('token_expired'));
      return;
    }
    const handler = caller.handlers[method];
    if (!handler || (STREAM_METHODS.has(method) && !this.streaming)) {
      refuse(new SlackRefusal('unknown_method', [], { req_method: method }));
      return;
    }
    const retryAfter = caller.rateLimits.check(method, args, this.clock());
    if (retryAfter !== undefined) {
      reply(429, { ok: false, error: 'ratelimited' }, { 'retry-after': String(retryAfter) });
      return;
    }
    const warnings: string[] = [];
    if (isJson && !contentType.includes('charset')) warnings.push('missing_charset');
    try {
      if (badJson) throw new SlackRefusal(badJson);
      const result = handler(args, warnings);
      const body: Result = { ok: true, ...result };
      if (warnings.length > 0) {
        body.warning = warnings.join(',');
        body.response_metadata = { warnings };
      }
      reply(200, body);
    } catch (e) {
      if (e instanceof SlackRefusal) refuse(e, warnings);
      else throw e;
    }
  }

  private take<T extends { left: number }>(map: Map<string, T[]>, method: string): T | undefined {
    const list = map.get(method);
    const head = list?.[0];
    if (!list || !head) return undefined;
    head.left -= 1;
    if (head.left <= 0) list.shift();
    return head;
  }
}

/** The listen address and port a test may choose (the rest of the options are Slack's). */
const LISTEN_OPTIONS = z.object({
  host: z.string().min(1, 'must name an address, such as 127.0.0.1 or 0.0.0.0').optional(),
  port: z.number().int().min(0).max(65_535).optional(),
});

/** The host part of the fake's own URL: a wildcard address is reached at loopback from here. */
function urlHost(host: string): string {
  if (host === '0.0.0.0') return '127.0.0.1';
  if (host === '::') return '[::1]';
  return isIP(host) === 6 ? `[${host}]` : host;
}

export async function startFakeSlack(options: FakeSlackOptions = {}): Promise<FakeSlack> {
  const fake = new FakeSlackServer(options);
  await fake.listen();
  return fake;
}
