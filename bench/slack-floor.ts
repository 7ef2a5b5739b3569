/**
 * The floor of the whole path through Slack (bench/slack-path.ts): what any broker that answers
 * Slack threads from an A2A agent must pay per thread, whatever its Slack code, run in the same
 * child and timed like the other rounds. Per thread:
 *
 * - in: one signed Events API request on a bare `node:http` server, its v0 signature checked
 *   (HMAC-SHA256 and a constant-time compare), its body parsed, acknowledged, and handed to the
 *   engine as a person's message with the event's id to claim (a redelivered event must not make
 *   a second turn);
 * - the engine on SQLite, as in the engine-alone round;
 * - out: as many Web API calls as the Slack path makes per turn (5 now: the session status, the
 *   running reaction on and off, the stream's start and stop), each one keep-alive `POST` of a
 *   form body of the same fields to the same fake Slack, through undici directly, its JSON
 *   answer parsed and checked. They go to `auth.test`, which every workspace answers, so the
 *   fake keeps no messages for them; the broker's side of a call is the same bytes either way.
 *
 * No Bolt, no zod, no budgets, no retries, no logging: the Slack path measured against this
 * floor says what the broker's Slack side adds above what no Slack client can avoid, where the
 * figure against the engine alone also counts the six HTTP exchanges themselves.
 */
import { timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { trace } from '@opentelemetry/api';
import { Pool } from 'undici';
import { A2AClient } from '../src/a2a/client.js';
import type { AnswerView } from '../src/core/answer.js';
import type { EngineEvent } from '../src/core/events.js';
import type {
  AgentRegistry,
  AgentRoute,
  AnswerSink,
  ChatSurface,
  ChatTarget,
  Notice,
  QuestionPrompt,
  ToolStep,
} from '../src/core/ports.js';
import { SessionEngine } from '../src/core/session/engine.js';
import { sessionIdOf } from '../src/core/store.js';
import { a2aDialect } from '../src/dialects/a2a.js';
import { OtelTurnTracer } from '../src/observability/turn-tracer.js';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.js';
import { signSlackRequest } from '../testkit/slack/events.js';

const BINDING = 'bench/slack-floor';

export interface FloorArgs {
  endpoint: string;
  fakeUrl: string;
  botToken: string;
  signingSecret: string;
  say: (message: Record<string, unknown>) => void;
}

/** One Web API call as a bare client makes it: a form body, a bearer token, the JSON answer checked. */
class BareWebApi {
  readonly #pool: Pool;
  readonly #path: string;
  readonly #headers: Record<string, string>;
  calls = 0;

  constructor(apiUrl: string, token: string) {
    const base = new URL(apiUrl.endsWith('/') ? apiUrl : `${apiUrl}/`);
    // As many requests at once as the surface's WebClient lets go (its maxRequestConcurrency).
    this.#pool = new Pool(base.origin, { connections: 100 });
    this.#path = `${base.pathname}auth.test`;
    this.#headers = {
      authorization: `Bearer ${token}`,
      'content-type': 'application/x-www-form-urlencoded',
    };
  }

  async post(fields: Record<string, string>): Promise<void> {
    let body = '';
    for (const [name, value] of Object.entries(fields))
      body += `${body === '' ? '' : '&'}${name}=${encodeURIComponent(value)}`;
    this.calls++;
    const res = await this.#pool.request({ path: this.#path, method: 'POST', headers: this.#headers, body });
    const answer = (await res.body.json()) as { ok?: boolean; error?: string };
    if (res.statusCode !== 200 || answer.ok !== true)
      throw new Error(`floor call refused: ${res.statusCode} ${answer.error ?? ''}`);
  }

  close(): Promise<void> {
    return this.#pool.close();
  }
}

/** Where a thread's calls go: its channel, its root, its person. */
interface Thread {
  channel: string;
  ts: string;
  team: string;
  user: string;
}

/**
 * The surface of the floor: the stream's start on the first update (the text so far), its stop
 * at the finish (the rest of the text, the session status with it). A stream's chunks between
 * them would be appends, which a short answer does not make on the Slack path either.
 */
class FloorSurface implements ChatSurface {
  readonly #api: BareWebApi;
  readonly #threads: Map<string, Thread>;

  constructor(api: BareWebApi, threads: Map<string, Thread>) {
    this.#api = api;
    this.#threads = threads;
  }

  openAnswer(
    target: ChatTarget,
    turnId: string,
    ref: string | null,
    onRef: (ref: string) => void,
  ): AnswerSink {
    const thread = this.#threads.get(target.key.threadId);
    if (thread === undefined) throw new Error(`floor: no thread ${target.key.threadId}`);
    let started: Promise<void> | undefined;
    let sent = 0;
    let posted = ref !== null;
    return {
      update: (view: AnswerView) => {
        if (started !== undefined) return;
        const text = view.text();
        sent = text.length;
        started = this.#api.post({
          channel: thread.channel,
          thread_ts: thread.ts,
          recipient_team_id: thread.team,
          recipient_user_id: thread.user,
          markdown_text: text,
        });
        if (!posted) {
          posted = true;
          onRef(`answer:${turnId}`);
        }
      },
      finish: async (view: AnswerView) => {
        await started;
        await this.#api.post({
          channel: thread.channel,
          ts: `${thread.ts}1`,
          markdown_text: view.text().slice(sent),
          session_status: 'active',
        });
      },
    };
  }

  async postNotice(_target: ChatTarget, _notice: Notice): Promise<void> {}
  async askQuestion(_target: ChatTarget, _prompt: QuestionPrompt): Promise<string | null> {
    return null;
  }
  async showToolStep(_target: ChatTarget, _turnId: string, _step: ToolStep): Promise<void> {}
}

/** The status and the running reaction: `processing` and the reaction on at the send, off at the settle. */
class FloorIndicators {
  readonly #api: BareWebApi;
  readonly #bySession: Map<string, Thread>;
  readonly pending: Promise<void>[] = [];
  settled = 0;
  completed = 0;
  #want = Number.POSITIVE_INFINITY;
  #resolve: (() => void) | undefined;
  failed: unknown;

  constructor(api: BareWebApi, bySession: Map<string, Thread>) {
    this.#api = api;
    this.#bySession = bySession;
  }

  emit(event: EngineEvent): void {
    if (event.type === 'turn.sending') {
      const thread = this.#bySession.get(event.sessionId);
      if (thread === undefined) return;
      this.#call({ channel: thread.channel, thread_ts: thread.ts, status: 'processing' });
      this.#call({ channel: thread.channel, timestamp: thread.ts, name: 'hourglass_flowing_sand' });
    } else if (event.type === 'turn.settled') {
      const thread = this.#bySession.get(event.sessionId);
      if (thread !== undefined)
        this.#call({ channel: thread.channel, timestamp: thread.ts, name: 'hourglass_flowing_sand' });
      if (event.outcome === 'completed') this.completed++;
      this.settled++;
      if (this.settled >= this.#want) this.#resolve?.();
    }
  }

  until(n: number): Promise<void> {
    if (this.settled >= n) return Promise.resolve();
    this.#want = n;
    return new Promise((resolve) => {
      this.#resolve = resolve;
    });
  }

  #call(fields: Record<string, string>): void {
    this.pending.push(
      this.#api.post(fields).catch((error: unknown) => {
        this.failed ??= error;
      }),
    );
  }
}

/** The v0 signature check a Slack app must make: HMAC-SHA256 of `v0:<ts>:<body>`, compared in constant time. */
function signedBy(secret: string, req: IncomingMessage, body: string): boolean {
  const timestamp = req.headers['x-slack-request-timestamp'];
  const signature = req.headers['x-slack-signature'];
  if (typeof timestamp !== 'string' || typeof signature !== 'string') return false;
  if (Math.abs(Date.now() / 1000 - Number(timestamp)) > 300) return false;
  // The same HMAC the sender signed with (testkit/slack/events.ts), computed from the request's own timestamp.
  const expected = Buffer.from(signSlackRequest(secret, body, Number(timestamp))['x-slack-signature']);
  const given = Buffer.from(signature);
  return expected.length === given.length && timingSafeEqual(expected, given);
}

/**
 * One floor round: `n` threads whose signed events the parent posts after `slack-ready-<round>`;
 * timed from that line to every turn settled (its stop answered), the reactions' removal waited
 * for untimed, as the Slack round waits for its indicators.
 */
export async function floorRound(
  a: FloorArgs,
  round: string,
  n: number,
  dbPath: string,
): Promise<{ ms: number; cpuMs: number; calls: number }> {
  const api = new BareWebApi(a.fakeUrl, a.botToken);
  // A thread by its root (the surface's target) and by its session (the engine's events).
  const threads = new Map<string, Thread>();
  const bySession = new Map<string, Thread>();
  const indicators = new FloorIndicators(api, bySession);
  const store = new SqliteStore(dbPath);
  await store.migrate();
  const client = new A2AClient({ endpoint: a.endpoint, identity: { kind: 'user-id', userId: 'bench' } });
  await client.card();
  const route: AgentRoute = { client, dialect: a2aDialect, settings: { questionTimeoutMs: null } };
  const registry: AgentRegistry = { resolve: (binding) => (binding === BINDING ? route : undefined) };
  const engine = new SessionEngine({
    store,
    registry,
    surface: new FloorSurface(api, threads),
    events: indicators,
    tracer: new OtelTurnTracer(trace.getTracer('agentkourier.engine')),
  });
  await engine.start();
  let refused = 0;
  const taking: Promise<unknown>[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const parts: Buffer[] = [];
    req.on('data', (part: Buffer) => parts.push(part));
    req.on('end', () => {
      const body = Buffer.concat(parts).toString('utf8');
      if (!signedBy(a.signingSecret, req, body)) {
        refused++;
        res.writeHead(401).end();
        return;
      }
      const envelope = JSON.parse(body) as {
        team_id: string;
        event_id: string;
        event: { channel: string; ts: string; user: string; text: string };
      };
      res.writeHead(200).end();
      const { event } = envelope;
      const thread = { channel: event.channel, ts: event.ts, team: envelope.team_id, user: event.user };
      const key = {
        surface: 'slack',
        workspaceId: thread.team,
        channelId: thread.channel,
        threadId: thread.ts,
      };
      threads.set(thread.ts, thread);
      bySession.set(sessionIdOf(key), thread);
      taking.push(
        engine.receive({
          kind: 'person',
          key,
          binding: BINDING,
          chatMessageId: event.ts,
          actor: { id: event.user, name: 'Ada', label: `[Slack: Ada (${event.user})]` },
          text: event.text,
          addressed: true,
          inboundEvent: `${envelope.team_id}:${envelope.event_id}`,
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const { port } = server.address() as AddressInfo;
    const cpu = process.cpuUsage();
    const started = performance.now();
    a.say({ type: `slack-ready-${round}`, url: `http://127.0.0.1:${port}/slack/events`, sessions: n });
    await indicators.until(n);
    const ms = performance.now() - started;
    const used = process.cpuUsage(cpu);
    await Promise.all(taking);
    await Promise.all(indicators.pending);
    if (indicators.failed !== undefined) throw indicators.failed;
    if (refused > 0) throw new Error(`floor round ${round}: ${refused} events refused`);
    if (indicators.completed !== n)
      throw new Error(`floor round ${round}: ${indicators.completed} of ${n} turns completed`);
    return { ms, cpuMs: (used.user + used.system) / 1000, calls: api.calls };
  } finally {
    await engine.stop();
    await store.close();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await api.close();
  }
}
