/**
 * The contract agent: a real A2A JSON-RPC + SSE server (node:http on 127.0.0.1, port 0) that
 * speaks 1.0 or 0.3, behaves well by default and misbehaves on demand in every way the agent
 * contract names. It writes its wire JSON itself (./wire.ts) and imports nothing from src/, so
 * it stays an independent peer for the client, the session engine and the contract checker.
 *
 *   const agent = await startContractAgent({ version: '1.0' });
 *   agent.enqueue(dropAfter(2));          // the next JSON-RPC call, whatever its method
 *   ...
 *   await agent.close();
 *
 * Why this file is one piece (well over 450 lines): it is the agent's dispatch — one class whose
 * methods (send, send-unary, subscribe, get, cancel, list, the transport misbehaviours) share the
 * same misbehaviour queue, task store, open sockets and shutdown signal, and each method reads
 * the next behaviour in the order the test queued it. What does not need that shared state
 * already lives apart: the wire JSON (wire.ts), SSE framing (sse.ts), the card (card.ts), answer
 * plans (ops.ts), the kagent extension (kagent.ts) and task storage (task-store.ts).
 */

import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse, STATUS_CODES } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import type { AnswerOptions, Behaviour } from './behaviours.js';
import { buildCard, type CardOptions } from './card.js';
import {
  hitlActivated,
  type KagentBehaviour,
  type KagentLedger,
  kagentPauseOps,
  kagentResume,
  newLedger,
  type PendingPause,
} from './kagent.js';
import { agentMessage, answerOps, isEventOp, type Op, type Plan, shapeOps, stepsToOps } from './ops.js';
import {
  awkwardSseFrame,
  isGone,
  sleep,
  sseFrame,
  sseHeaders,
  untilGone,
  write,
  writeInPieces,
} from './sse.js';
import { now, RpcFailure, type SeedTask, TaskStore } from './task-store.js';
import {
  decodeMessage,
  type EncodeOptions,
  encodeStreamResult,
  encodeTask,
  errorEnvelope,
  isRecord,
  type JsonObject,
  type JsonRpcId,
  type RpcErrorObject,
  resultEnvelope,
  rpcErrorObject,
  type StoredMessage,
  type StoredTask,
  TERMINAL_STATES,
  type WireVersion,
} from './wire.js';

export * from './behaviours.js';
export type { CardOptions } from './card.js';
export * from './kagent.js';
export type { SeedTask } from './task-store.js';
export type {
  StoredArtifact,
  StoredMessage,
  StoredPart,
  StoredStatus,
  StoredTask,
  TaskState,
  WireVersion,
} from './wire.js';
export { rpcErrorObject } from './wire.js';

export interface ContractAgentOptions {
  version: WireVersion;
  card?: CardOptions;
  /** Endpoint path, default '/a2a'. */
  path?: string;
  /**
   * treat a repeated messageId as the same turn (default true): a second send of it gets
   * the existing task, once settled, instead of a second run. false plays an agent that runs
   * it twice.
   */
  dedupe?: boolean;
  /** The answer a send gets when no behaviour is queued (default: the echo answer). */
  defaultAnswer?: AnswerOptions;
  /**
   * Verify the broker's per-person assertion on every JSON-RPC call, with jose against the JWKS
   * at the issuer (as an agent author would, docs/identity.md); refused with 401 otherwise.
   */
  verifyIdentity?: { issuer: string; audience: string; header?: string };
  /**
   * Keep working on a task after its client went away, as agents built on the SDKs do (default
   * false: the task stays where the stream stopped, so tests can script what follows).
   */
  workOn?: boolean;
  /**
   * Where it listens, and the address its card and endpoint name (default 127.0.0.1 for both).
   * The cluster tests listen on every address and advertise the node's, which pods can reach.
   */
  host?: { listen: string; advertise: string };
}

export interface RecordedRequest {
  httpMethod: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  /** The JSON-RPC method, when the body was a JSON object with one. */
  rpcMethod?: string;
  /** The parsed JSON body, or the raw text when it was not JSON. */
  body?: unknown;
  /** verifyIdentity refused its assertion (401). */
  identityRefused?: boolean;
}

export interface ContractAgent {
  readonly version: WireVersion;
  /** http://127.0.0.1:PORT/a2a */
  readonly endpoint: string;
  /** http://127.0.0.1:PORT */
  readonly origin: string;
  /** Every HTTP request, card GETs included, in arrival order. */
  readonly requests: RecordedRequest[];
  /** Recorded JSON-RPC requests with that method name. */
  rpc(method: string): RecordedRequest[];
  /** Behaviours for the next JSON-RPC calls, FIFO, one per call (any method). */
  enqueue(...b: Behaviour[]): void;
  /** Behaviours only calls of this method consume; they go before the shared queue. */
  enqueueFor(method: string, ...b: Behaviour[]): void;
  /** How many enqueued behaviours are still waiting. */
  queued(): number;
  /** Drops every behaviour still waiting: the agent behaves well from now on. */
  clear(): void;
  setCard(c: CardOptions): void;
  /** The agent's task store, live: seed it or inspect it. */
  readonly tasks: Map<string, StoredTask>;
  /** Puts a task in the store (defaults: fresh ids, state working, no history). */
  seedTask(t?: SeedTask): StoredTask;
  /** How many times each user messageId started a task: the agent's runs of that turn. */
  readonly runs: Map<string, number>;
  /**
   * R-7 from the agent's side: each time a message opened a task in a context where a task of
   * another message was still submitted or working.
   */
  readonly overlaps: Array<{ contextId: string; messageId: string; runningMessageId: string }>;
  /** What the kagent behaviours did with the replies to their pauses (tools run, refusals). */
  readonly kagent: KagentLedger;
  /** Closes the server and destroys open sockets, hanging streams included. */
  close(): Promise<void>;
}

type Operation = 'send' | 'send-unary' | 'get' | 'subscribe' | 'cancel' | 'list';

const METHODS: Record<WireVersion, Record<string, Operation>> = {
  '1.0': {
    SendStreamingMessage: 'send',
    SendMessage: 'send-unary',
    GetTask: 'get',
    SubscribeToTask: 'subscribe',
    CancelTask: 'cancel',
    ListTasks: 'list',
  },
  '0.3': {
    'message/stream': 'send',
    'message/send': 'send-unary',
    'tasks/get': 'get',
    'tasks/resubscribe': 'subscribe',
    'tasks/cancel': 'cancel',
  },
};

const CARD_FILE = '/.well-known/agent-card.json';

interface Call {
  req: IncomingMessage;
  res: ServerResponse;
  id: JsonRpcId;
  method: string | undefined;
  params: JsonObject;
  /** The body was not JSON at all. */
  unparsable: boolean;
  /** The body was JSON but not a JSON-RPC request. */
  invalid: boolean;
}

function trimSlashes(path: string): string {
  return path.replace(/\/+$/, '');
}

function otherId(id: JsonRpcId): JsonRpcId {
  if (typeof id === 'number') return id + 1000;
  return `${id ?? 'null'}-not-yours`;
}

function json(res: ServerResponse, status: number, payload: unknown): void {
  res.writeHead(status, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify(payload));
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function isKagent(b: Behaviour | undefined): b is KagentBehaviour {
  return b?.kind === 'kagent-approval' || b?.kind === 'kagent-ask-user' || b?.kind === 'kagent-malformed';
}

function isSettledState(state: StoredTask['status']['state']): boolean {
  return TERMINAL_STATES.has(state) || state === 'input-required' || state === 'auth-required';
}

class Agent implements ContractAgent {
  readonly requests: RecordedRequest[] = [];
  readonly tasks = new Map<string, StoredTask>();
  readonly runs = new Map<string, number>();
  readonly overlaps: Array<{ contextId: string; messageId: string; runningMessageId: string }> = [];
  readonly kagent: KagentLedger = newLedger();
  /** kagent pauses waiting for their reply, by task id. */
  private readonly hitlPauses = new Map<string, PendingPause>();
  private readonly store: TaskStore;
  endpoint = '';
  origin = '';
  private card: CardOptions;
  private readonly queue: Behaviour[] = [];
  private readonly byMethod = new Map<string, Behaviour[]>();
  private readonly sockets = new Set<Socket>();
  private readonly closing = new AbortController();
  private readonly server = createServer((req, res) => {
    this.handle(req, res).catch((err: unknown) => {
      // A bug in the agent itself: make it loud in the test that hit it rather than hang.
      if (!res.headersSent) {
        res.writeHead(500, { 'Content-Type': 'text/plain' });
        res.end(`contract agent failed: ${err instanceof Error ? err.stack : String(err)}`);
      } else {
        res.destroy();
      }
    });
  });
  private closed: Promise<void> | undefined;
  private readonly endpointPath: string;

  constructor(
    readonly version: WireVersion,
    card: CardOptions,
    path: string,
    private readonly dedupe: boolean,
    private readonly defaultAnswer: AnswerOptions,
    private readonly workOn: boolean,
    private readonly verify: ContractAgentOptions['verifyIdentity'],
  ) {
    this.card = card;
    this.store = new TaskStore(version, this.tasks);
    this.endpointPath = trimSlashes(path.startsWith('/') ? path : `/${path}`);
    this.server.on('connection', (s: Socket) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
  }

  async listen(host = { listen: '127.0.0.1', advertise: '127.0.0.1' }): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(0, host.listen, () => resolve());
    });
    const { port } = this.server.address() as AddressInfo;
    this.origin = `http://${host.advertise}:${port}`;
    this.endpoint = `${this.origin}${this.endpointPath || '/'}`;
  }

  rpc(method: string): RecordedRequest[] {
    return this.requests.filter((r) => r.rpcMethod === method);
  }

  enqueue(...b: Behaviour[]): void {
    this.queue.push(...b);
  }

  enqueueFor(method: string, ...b: Behaviour[]): void {
    const q = this.byMethod.get(method) ?? [];
    q.push(...b);
    this.byMethod.set(method, q);
  }

  queued(): number {
    let n = this.queue.length;
    for (const q of this.byMethod.values()) n += q.length;
    return n;
  }

  clear(): void {
    this.queue.length = 0;
    this.byMethod.clear();
  }

  setCard(c: CardOptions): void {
    this.card = c;
  }

  seedTask(t: SeedTask = {}): StoredTask {
    return this.store.seed(t);
  }

  close(): Promise<void> {
    this.closed ??= new Promise<void>((resolve) => {
      this.closing.abort();
      this.server.close(() => resolve());
      for (const s of this.sockets) s.destroy();
    });
    return this.closed;
  }

  private get signal(): AbortSignal {
    return this.closing.signal;
  }

  private take(method: string | undefined): Behaviour | undefined {
    const own = method === undefined ? undefined : this.byMethod.get(method);
    if (own !== undefined && own.length > 0) return own.shift();
    return this.queue.shift();
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? '/', 'http://agent.invalid').pathname;
    const rec: RecordedRequest = { httpMethod: req.method ?? '', path, headers: { ...req.headers } };
    this.requests.push(rec);
    const text = await readBody(req);
    if (text !== '') {
      try {
        rec.body = JSON.parse(text);
      } catch {
        rec.body = text;
      }
    }
    if (req.method === 'GET' && (path === CARD_FILE || path === `${this.endpointPath}${CARD_FILE}`)) {
      await this.serveCard(res);
      return;
    }
    if (req.method !== 'POST' || trimSlashes(path) !== this.endpointPath) {
      res.writeHead(404, { 'Content-Type': 'text/plain' });
      res.end('not found');
      return;
    }
    if (this.verify !== undefined && !(await this.identityVerified(req))) {
      rec.identityRefused = true;
      res.writeHead(401, { 'Content-Type': 'text/plain', 'WWW-Authenticate': 'Bearer' });
      res.end('the assertion was refused');
      return;
    }
    const body = rec.body;
    const invalid = !isRecord(body) || body.jsonrpc !== '2.0' || typeof body.method !== 'string';
    const call: Call = {
      req,
      res,
      id: isRecord(body) && (typeof body.id === 'string' || typeof body.id === 'number') ? body.id : null,
      method: isRecord(body) && typeof body.method === 'string' ? body.method : undefined,
      params: isRecord(body) && isRecord(body.params) ? body.params : {},
      unparsable: typeof body === 'string' || body === undefined,
      invalid,
    };
    if (call.method !== undefined) rec.rpcMethod = call.method;
    await this.run(call, this.take(call.method));
  }

  #jwks: ReturnType<typeof createRemoteJWKSet> | undefined;

  private async identityVerified(req: IncomingMessage): Promise<boolean> {
    const v = this.verify;
    if (v === undefined) return true;
    this.#jwks ??= createRemoteJWKSet(new URL(`${v.issuer}/.well-known/jwks.json`));
    const header = (v.header ?? 'authorization').toLowerCase();
    const raw = req.headers[header];
    const value = typeof raw === 'string' ? raw : '';
    const token = header === 'authorization' ? value.replace(/^Bearer /, '') : value;
    try {
      await jwtVerify(token, this.#jwks, {
        issuer: v.issuer,
        audience: v.audience,
        algorithms: ['ES256', 'EdDSA'],
      });
      return true;
    } catch {
      return false;
    }
  }

  private async serveCard(res: ServerResponse): Promise<void> {
    const c = this.card;
    if (c.redirectTo !== undefined) {
      res.writeHead(302, { Location: c.redirectTo });
      res.end();
      return;
    }
    const body = c.raw ?? JSON.stringify(buildCard(this.version, this.endpoint, c));
    res.writeHead(c.status ?? 200, { 'Content-Type': 'application/json' });
    if (c.trickleMs === undefined) {
      res.end(body);
      return;
    }
    res.flushHeaders();
    for (const byte of Buffer.from(body, 'utf8')) {
      if (isGone(res) || this.signal.aborted) return;
      await write(res, Buffer.of(byte));
      await sleep(c.trickleMs, this.signal);
    }
    res.end();
  }

  /** Headers, the first byte of a body, then one space (valid JSON, valid SSE data) per interval. */
  private async trickleBody(
    res: ServerResponse,
    as: 'json' | 'sse',
    intervalMs: number | null,
    status = 200,
  ): Promise<void> {
    if (as === 'sse') sseHeaders(res);
    else {
      res.writeHead(status, { 'Content-Type': 'application/json' });
      res.flushHeaders();
    }
    await write(res, as === 'sse' ? 'data: {' : '{');
    if (intervalMs === null) return untilGone(res, this.signal);
    while (!isGone(res) && !this.signal.aborted) {
      await sleep(intervalMs, this.signal);
      await write(res, ' ');
    }
  }

  private rpcError(code: number, message?: string, data?: unknown): RpcErrorObject {
    return rpcErrorObject(this.version, code, message, data);
  }

  /** Transport-level behaviours apply to any method; the rest are up to the method. */
  private async run(call: Call, b: Behaviour | undefined): Promise<void> {
    const { req, res } = call;
    switch (b?.kind) {
      case 'redirect':
        res.writeHead(b.status, { Location: b.location });
        res.end();
        return;
      case 'http-status':
        res.writeHead(b.status, { 'Content-Type': 'text/plain', ...b.headers });
        res.end(b.body ?? STATUS_CODES[b.status] ?? '');
        return;
      case 'rpc-error':
        json(res, b.httpStatus, errorEnvelope(call.id, this.rpcError(b.code, b.message, b.data)));
        return;
      case 'drop-before-headers':
        if (b.createTask && METHODS[this.version][call.method ?? ''] === 'send') {
          try {
            this.openTask(call.params, undefined);
          } catch {
            // The request could not have created a task anyway; drop it all the same.
          }
        }
        if (b.createTask && METHODS[this.version][call.method ?? ''] === 'send-unary') {
          // A non-streaming agent took the send and works on it; only its answer is lost.
          try {
            const task = this.openTask(call.params, undefined);
            void this.work(task, answerOps(task, this.defaultAnswer, { snapshot: false, working: true }));
          } catch {
            // The request could not have created a task anyway; drop it all the same.
          }
        }
        req.socket.destroy();
        return;
      case 'slow-headers':
        await sleep(b.ms, this.signal);
        if (isGone(res) || this.signal.aborted) return;
        return this.run(call, b.then);
      case 'held': {
        const aborted = new Promise<void>((resolve) =>
          this.signal.addEventListener('abort', () => resolve()),
        );
        await Promise.race([b.until.catch(() => undefined), aborted]);
        if (isGone(res) || this.signal.aborted) return;
        return this.run(call, b.then);
      }
      case 'silent-stream':
        sseHeaders(res);
        await untilGone(res, this.signal);
        return;
      case 'trickle':
        return this.trickleBody(res, b.as, b.intervalMs, b.status);
      case 'stall':
        return this.trickleBody(res, b.as, null);
      case 'keep-alive-only':
        sseHeaders(res);
        while (!isGone(res) && !this.signal.aborted) {
          await write(res, ': ping\n\n');
          await sleep(b.intervalMs, this.signal);
        }
        return;
    }
    if (call.unparsable) {
      json(res, 200, errorEnvelope(null, this.rpcError(-32700, 'Invalid JSON payload')));
      return;
    }
    if (call.invalid) {
      json(res, 200, errorEnvelope(call.id, this.rpcError(-32600, 'Request payload validation error')));
      return;
    }
    const operation = METHODS[this.version][call.method ?? ''];
    try {
      switch (operation) {
        case 'send':
          return await this.send(call, b);
        case 'send-unary':
          return await this.sendUnary(call, b);
        case 'subscribe':
          return await this.subscribe(call, b);
        case 'get':
          return await this.unary(call, b, (o) => this.store.get(call.params, o));
        case 'cancel':
          return await this.unary(call, b, (o) => this.store.cancel(call.params, o));
        case 'list':
          return await this.unary(call, b, (o) => this.store.list(call.params, o));
        case undefined:
          throw new RpcFailure(-32601, `Method not found: ${call.method}`);
      }
    } catch (err) {
      if (!(err instanceof RpcFailure)) throw err;
      json(res, 200, errorEnvelope(call.id, this.rpcError(err.code, err.message)));
    }
  }

  private requireStreaming(): void {
    // Reference §6: streaming without capabilities.streaming is UnsupportedOperation.
    if (this.card.streaming === false) {
      throw new RpcFailure(-32004, 'Streaming is not supported by this agent');
    }
  }

  private async send(call: Call, b: Behaviour | undefined): Promise<void> {
    this.requireStreaming();
    if (b?.kind === 'bare-message') {
      const msg = decodeMessage(call.params.message);
      const reply = agentMessage(undefined, [{ text: b.text }]);
      reply.contextId = msg?.contextId ?? randomUUID();
      return this.stream(call, undefined, { ops: [{ op: 'message', message: reply }], end: 'close' });
    }
    const msg = decodeMessage(call.params.message);
    if (this.dedupe && msg !== undefined && msg.taskId === undefined) {
      const earlier = [...this.tasks.values()].find((t) =>
        t.history.some((m) => m.role === 'user' && m.messageId === msg.messageId),
      );
      if (earlier !== undefined) return this.reattach(call, earlier);
    }
    const forced =
      b?.kind === 'new-context' ? randomUUID() : b?.kind === 'answer' ? b.options.contextId : undefined;
    const task = this.openTask(call.params, forced);
    if (b?.kind === 'script') return this.stream(call, task, { ops: stepsToOps(b.steps, task), end: b.end });
    if (isKagent(b)) {
      const activated = hitlActivated(call.req.headers['a2a-extensions']);
      return this.stream(call, task, {
        ops: kagentPauseOps(task, b, activated, this.hitlPauses),
        end: 'close',
      });
    }
    const pause = b === undefined && msg?.taskId !== undefined ? this.hitlPauses.get(task.id) : undefined;
    if (pause !== undefined && msg !== undefined) return this.resumeKagent(call, task, msg, pause);
    const options = b?.kind === 'answer' ? b.options : b === undefined ? this.defaultAnswer : {};
    const base = answerOps(task, options, { snapshot: true, working: true });
    return this.stream(
      call,
      task,
      shapeOps(base, b, () => this.oversized(task, b)),
    );
  }

  /**
   * The non-streaming send (SendMessage, message/send), as an agent without streaming serves it:
   * one JSON answer. Asked to return at once (1.0 `returnImmediately: true`, 0.3 `blocking:
   * false`) it answers with the task as just opened and works on it in the background, so
   * GetTask sees the answer grow; otherwise it answers once the task settles. A repeated
   * messageId gets the existing task back (idempotent replay), never a second run.
   */
  private async sendUnary(call: Call, b: Behaviour | undefined): Promise<void> {
    const v = this.version;
    const msg = decodeMessage(call.params.message);
    if (b?.kind === 'bare-message') {
      const reply = agentMessage(undefined, [{ text: b.text }]);
      reply.contextId = msg?.contextId ?? randomUUID();
      json(
        call.res,
        200,
        resultEnvelope(call.id, encodeStreamResult(v, { kind: 'message', message: reply })),
      );
      return;
    }
    if (this.dedupe && msg !== undefined) {
      const earlier = [...this.tasks.values()].find((t) =>
        t.history.some((m) => m.role === 'user' && m.messageId === msg.messageId),
      );
      if (earlier !== undefined) {
        json(call.res, 200, resultEnvelope(call.id, encodeStreamResult(v, { kind: 'task', task: earlier })));
        return;
      }
    }
    const forced =
      b?.kind === 'new-context' ? randomUUID() : b?.kind === 'answer' ? b.options.contextId : undefined;
    const task = this.openTask(call.params, forced);
    const ops =
      b?.kind === 'script'
        ? stepsToOps(b.steps, task)
        : answerOps(task, b?.kind === 'answer' ? b.options : this.defaultAnswer, {
            snapshot: false,
            working: true,
          });
    const configuration = isRecord(call.params.configuration) ? call.params.configuration : {};
    const immediate =
      v === '1.0' ? configuration.returnImmediately === true : configuration.blocking === false;
    if (immediate) {
      json(call.res, 200, resultEnvelope(call.id, encodeStreamResult(v, { kind: 'task', task })));
      void this.work(task, ops);
      return;
    }
    await this.work(task, ops);
    json(call.res, 200, resultEnvelope(call.id, encodeStreamResult(v, { kind: 'task', task })));
  }

  /**
   * Runs a plan's event ops on the store with nobody listening (the task of a non-streaming
   * send): waits are waited, events change the task. Stops once something else (a cancel) has
   * ended the task, or the agent closes.
   */
  private async work(task: StoredTask, ops: Op[]): Promise<void> {
    for (const op of ops) {
      if (this.signal.aborted || TERMINAL_STATES.has(task.status.state)) return;
      if (op.op === 'wait') {
        await sleep(op.ms, this.signal).catch(() => undefined);
        continue;
      }
      if (op.op === 'await-settled' || op.op === 'raw' || op.op === 'result' || op.op === 'error') continue;
      this.apply(op, task, null, {}, true);
    }
  }

  /** The reply to a kagent pause: refused as kagent refuses it, or the approved tools run. */
  private async resumeKagent(
    call: Call,
    task: StoredTask,
    msg: StoredMessage,
    pause: PendingPause,
  ): Promise<void> {
    const outcome = kagentResume(task, msg, pause, this.kagent);
    if ('refuse' in outcome) {
      // The task stays paused on an RPC error; kagent's executor instead fails the task.
      if (outcome.onInvalid === 'rpc-error') throw new RpcFailure(-32603, outcome.refuse);
      this.hitlPauses.delete(task.id);
      const failed: Op = {
        op: 'status',
        state: 'failed',
        message: agentMessage(task, [{ text: outcome.refuse }]),
      };
      return this.stream(call, task, { ops: [{ op: 'snapshot' }, failed], end: 'close' });
    }
    this.hitlPauses.delete(task.id);
    return this.stream(call, task, { ops: outcome.ops, end: 'close' });
  }

  /** Opens (or continues) the task of a send, counting a new task as a run of its messageId. */
  private openTask(params: JsonObject, forced: string | undefined): StoredTask {
    const msg = decodeMessage(params.message);
    const task = this.store.open(params, forced);
    if (msg !== undefined && msg.taskId === undefined) {
      this.runs.set(msg.messageId, (this.runs.get(msg.messageId) ?? 0) + 1);
      for (const other of this.tasks.values()) {
        if (other === task || other.contextId !== task.contextId) continue;
        if (other.status.state !== 'submitted' && other.status.state !== 'working') continue;
        const running = other.history.find((m) => m.role === 'user')?.messageId ?? '';
        if (running !== msg.messageId) {
          this.overlaps.push({
            contextId: task.contextId,
            messageId: msg.messageId,
            runningMessageId: running,
          });
        }
      }
    }
    return task;
  }

  /** A repeated messageId: wait for the first run to settle, then answer with its task. */
  private async reattach(call: Call, task: StoredTask): Promise<void> {
    return this.stream(call, task, {
      ops: [{ op: 'snapshot' }, { op: 'await-settled' }, { op: 'snapshot' }],
      end: 'close',
    });
  }

  private async subscribe(call: Call, b: Behaviour | undefined): Promise<void> {
    this.requireStreaming();
    const task = this.store.find(call.params);
    if (b?.kind === 'script') return this.stream(call, task, { ops: stepsToOps(b.steps, task), end: b.end });
    if (b?.kind === 'bare-message') {
      const reply = agentMessage(undefined, [{ text: b.text }]);
      reply.contextId = task.contextId;
      return this.stream(call, task, { ops: [{ op: 'message', message: reply }], end: 'close' });
    }
    // An agent that works on without its client has the task's real events to tell: attach.
    if (b === undefined && this.workOn && !TERMINAL_STATES.has(task.status.state))
      return this.reattach(call, task);
    const forced =
      b?.kind === 'new-context' ? randomUUID() : b?.kind === 'answer' ? b.options.contextId : undefined;
    if (forced !== undefined) task.contextId = forced;
    // A2A: a subscription starts with a snapshot; a terminal task has nothing more to say.
    const base: Op[] = [{ op: 'snapshot' }];
    if (!TERMINAL_STATES.has(task.status.state)) {
      const opts = b?.kind === 'answer' ? b.options : {};
      base.push(...answerOps(task, opts, { snapshot: false, working: b?.kind === 'answer' }));
    }
    return this.stream(
      call,
      task,
      shapeOps(base, b, () => this.oversized(task, b)),
    );
  }

  private oversized(task: StoredTask, b: Behaviour | undefined): unknown {
    const bytes = b?.kind === 'oversized-event' ? b.bytes : 0;
    return encodeStreamResult(this.version, {
      kind: 'artifact',
      taskId: task.id,
      contextId: task.contextId,
      artifact: { artifactId: 'oversized', parts: [{ text: 'x'.repeat(bytes + 1) }] },
      append: false,
      lastChunk: true,
    });
  }

  /**
   * GetTask, CancelTask and ListTasks. A script answers with a JSON body built from its steps;
   * the envelope misbehaviours apply to the body; stream-shaping ones (answer, bareMessage,
   * newContext, splitFrames, oversizedEvent) mean nothing here and are used up as the default.
   */
  private async unary(
    call: Call,
    b: Behaviour | undefined,
    compute: (o: EncodeOptions) => unknown,
  ): Promise<void> {
    const { res } = call;
    if (b?.kind === 'script') {
      const id = call.params.id;
      const task = typeof id === 'string' ? this.tasks.get(id) : undefined;
      return this.stream(call, task, { ops: stepsToOps(b.steps, task), end: b.end }, true);
    }
    if (b?.kind === 'drop-after') {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.flushHeaders();
      res.destroy();
      return;
    }
    if (b?.kind === 'malformed-sse') {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end('{"jsonrpc":"2.0",oops');
      return;
    }
    if (b?.kind === 'oversized-body') {
      const result = { ...(compute({}) as JsonObject), padding: 'x'.repeat(b.bytes + 1) };
      json(res, 200, resultEnvelope(call.id, result));
      return;
    }
    const result = b?.kind === 'invalid-event' ? { foo: 1 } : compute({ omitIds: b?.kind === 'no-ids' });
    json(res, 200, resultEnvelope(b?.kind === 'wrong-id' ? otherId(call.id) : call.id, result));
  }

  /** Writes a plan: SSE for streaming methods, one JSON body for unary ones (scripts only). */
  private async stream(call: Call, task: StoredTask | undefined, plan: Plan, unary = false): Promise<void> {
    const { res } = call;
    if (unary) {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.flushHeaders();
    } else {
      sseHeaders(res);
    }
    const id = plan.wrongId ? otherId(call.id) : call.id;
    const o: EncodeOptions = { omitIds: plan.omitIds ?? false };
    const canceled = (): boolean =>
      task !== undefined && (this.tasks.get(task.id) ?? task).status.state === 'canceled';
    const canceledBefore = canceled();
    for (const op of plan.ops) {
      if (this.signal.aborted) return;
      const gone = isGone(res);
      if (gone && !this.workOn) return;
      // A CancelTask while the task streams ends the stream with its canceled status, as the
      // SDKs' servers do (their executor's cancel publishes it); nothing after it is sent.
      if (!unary && !canceledBefore && canceled() && isEventOp(op)) {
        if (!gone) {
          await write(res, sseFrame(this.apply({ op: 'status', state: 'canceled' }, task, id, o, false)));
          res.end();
        }
        return;
      }
      if (op.op === 'wait') {
        await sleep(op.ms, this.signal).catch(() => undefined);
        continue;
      }
      if (op.op === 'await-settled') {
        while (
          task !== undefined &&
          !isSettledState(task.status.state) &&
          !this.signal.aborted &&
          !isGone(res)
        ) {
          await sleep(20, this.signal).catch(() => undefined);
        }
        continue;
      }
      if (op.op === 'raw') {
        if (!gone) await write(res, op.text);
        continue;
      }
      const payload = this.apply(op, task, id, o, unary);
      if (gone) continue; // the task moves on; nobody is listening
      const isError = op.op === 'error' || 'error' in payload;
      if (unary) {
        await write(res, JSON.stringify(payload));
      } else if (plan.pieces !== undefined) {
        const frame = awkwardSseFrame(payload, isError ? 'error' : undefined);
        await writeInPieces(res, frame, plan.pieces, this.signal);
      } else {
        await write(res, sseFrame(payload, isError ? 'error' : undefined));
      }
    }
    if (isGone(res)) return;
    if (plan.end === 'close') res.end();
    else if (plan.end === 'destroy') {
      // A drop after events: let what was written reach the client first, as it would over a
      // real network, then cut the connection without ending the response.
      await new Promise<void>((resolve) => res.write('', () => resolve()));
      await sleep(20, this.signal);
      res.destroy();
    } else await untilGone(res, this.signal);
  }

  /** Performs one event op on the live store and returns its JSON-RPC envelope. */
  private apply(
    op: Exclude<Op, { op: 'wait' | 'raw' | 'await-settled' }>,
    given: StoredTask | undefined,
    id: JsonRpcId,
    o: EncodeOptions,
    unary: boolean,
  ): JsonObject {
    const v = this.version;
    if (op.op === 'result') {
      const task = given === undefined ? undefined : (this.tasks.get(given.id) ?? given);
      const built =
        typeof op.result === 'function' && task !== undefined
          ? (op.result as (t: { id: string; contextId: string }) => unknown)(task)
          : op.result;
      return resultEnvelope(id, built);
    }
    if (op.op === 'error') return errorEnvelope(id, op.error);
    if (op.op === 'message') {
      return resultEnvelope(id, encodeStreamResult(v, { kind: 'message', message: op.message }, o));
    }
    // Look the task up again: a test may have replaced it in the store mid-stream.
    const task = given === undefined ? undefined : (this.tasks.get(given.id) ?? given);
    if (task === undefined) return errorEnvelope(id, this.rpcError(-32001, 'this step needs a task'));
    if (op.op === 'snapshot') {
      return resultEnvelope(
        id,
        unary ? encodeTask(v, task, o) : encodeStreamResult(v, { kind: 'task', task }, o),
      );
    }
    if (op.op === 'status') {
      task.status = { state: op.state, timestamp: now() };
      if (op.message !== undefined) task.status.message = op.message;
      const status = task.status;
      return resultEnvelope(
        id,
        encodeStreamResult(v, { kind: 'status', taskId: task.id, contextId: task.contextId, status }, o),
      );
    }
    const existing = task.artifacts.find((a) => a.artifactId === op.artifactId);
    if (existing === undefined) task.artifacts.push({ artifactId: op.artifactId, parts: [...op.parts] });
    else existing.parts = op.append ? [...existing.parts, ...op.parts] : [...op.parts];
    return resultEnvelope(
      id,
      encodeStreamResult(
        v,
        {
          kind: 'artifact',
          taskId: task.id,
          contextId: task.contextId,
          artifact: { artifactId: op.artifactId, parts: op.parts },
          append: op.append,
          lastChunk: op.lastChunk,
        },
        o,
      ),
    );
  }
}

export async function startContractAgent(o: ContractAgentOptions): Promise<ContractAgent> {
  const agent = new Agent(
    o.version,
    o.card ?? {},
    o.path ?? '/a2a',
    o.dedupe ?? true,
    o.defaultAnswer ?? {},
    o.workOn ?? false,
    o.verifyIdentity,
  );
  await agent.listen(o.host);
  return agent;
}
