import { randomUUID } from 'node:crypto';
import { channel } from 'node:diagnostics_channel';
import { type Span, trace } from '@opentelemetry/api';
import {
  AgentCallError,
  CardFetchError,
  LostConnectionError,
  MalformedResponseError,
  OutcomeUnknownError,
  StreamIdleError,
  UnsupportedByVersionError,
} from '../core/agent/errors.js';
import type { OutgoingMessage, StreamEvent, Task, TaskPage } from '../core/agent/model.js';
import { type AgentCardInfo, cardUrl, readCard } from './card.js';
import { classifyNetworkError, discard, type HttpResponse, header, readBounded, send } from './http.js';
import { identityHeaders } from './identity.js';
import {
  type CallKind,
  decodeResponse,
  encodeRequest,
  errorFromRpc,
  errorFromStatus,
  type RpcErrorBody,
} from './jsonrpc.js';
import { type A2AClientOptions, type ResolvedOptions, resolveOptions, type TraceHeaders } from './options.js';
import { SseParser } from './sse.js';
import {
  type ClientTelemetry,
  endCallSpan,
  type ServerAddress,
  serverAddress,
  setStatusCode,
  spanHeaders,
  startCallSpan,
} from './telemetry.js';
import type { WireCodec } from './wire/codec.js';
import { v0_3 } from './wire/v0_3/codec.js';
import { v1_0 } from './wire/v1_0/codec.js';

/**
 * A diagnostics channel, as undici has: one message per finished call, for metrics and traces
 * to subscribe to without the client knowing about them. Never carries headers or bodies.
 */
export const callChannel = channel('agentkourier:a2a:call');

export interface CallDiagnostic {
  endpoint: string;
  method: string;
  version: string;
  durationMs: number;
  /** 'ok', or the error's code. */
  outcome: string;
  eventsSeen: number;
}

export interface CallOptions {
  signal?: AbortSignal;
  /** The turn's W3C trace context: the call's span is its child, and the agent gets the span's. */
  trace?: TraceHeaders;
}

/** The A2A 1.0 names of the operations, the same label whatever the wire version. */
const OPERATIONS: Record<keyof WireCodec['methods'], string> = {
  sendStream: 'SendStreamingMessage',
  get: 'GetTask',
  subscribe: 'SubscribeToTask',
  cancel: 'CancelTask',
  list: 'ListTasks',
};

/** What the agent is sent: the call span's context; untraced, the caller's as it is. */
function headersOf(span: Span | undefined, caller?: TraceHeaders): TraceHeaders | undefined {
  return span === undefined ? caller : spanHeaders(span);
}

function operationOf(codec: WireCodec, method: string): string {
  for (const [key, name] of Object.entries(codec.methods)) {
    if (name === method) return OPERATIONS[key as keyof WireCodec['methods']];
  }
  return method;
}

/**
 * An A2A client for one endpoint and one identity, at 1.0 or 0.3 as the card says. Streams are
 * async generators of the internal model; failures are the typed errors of errors.ts.
 */
export class A2AClient {
  #options: ResolvedOptions;
  /** The card read in flight or done; `until` is when a pending read is given up on. */
  #card: { promise: Promise<AgentCardInfo>; pending: boolean; until: number } | undefined;
  readonly #telemetry: ClientTelemetry;
  #server: ServerAddress;

  /**
   * `telemetry` stays with the client across `reconfigure` (it is the process's, not the
   * Binding's settings): the tracer for call spans and a report of every finished call.
   */
  constructor(options: A2AClientOptions, telemetry: ClientTelemetry = {}) {
    this.#options = resolveOptions(options);
    this.#telemetry = telemetry;
    this.#server = serverAddress(this.#options.endpoint);
  }

  /** The span of one call, or undefined when this client traces nothing (`tracer: false`). */
  #span(name: string, method: string, version: string, parent: TraceHeaders | undefined): Span | undefined {
    const tracer = this.#telemetry.tracer;
    if (tracer === false) return undefined;
    return startCallSpan(
      tracer ?? trace.getTracer('agentkourier.a2a'),
      { name, server: this.#server, method, version },
      parent,
    );
  }

  get endpoint(): string {
    return this.#options.endpoint;
  }

  /**
   * DT-8: the card is fetched on first use and cached. Changing the endpoint, the identity or
   * the static headers forgets it, so the next call fetches it again with the new credentials.
   */
  reconfigure(options: A2AClientOptions): void {
    const next = resolveOptions(options);
    const prev = this.#options;
    this.#options = next;
    this.#server = serverAddress(next.endpoint);
    if (
      prev.endpoint !== next.endpoint ||
      JSON.stringify(prev.identity) !== JSON.stringify(next.identity) ||
      JSON.stringify(prev.headers) !== JSON.stringify(next.headers) ||
      prev.extensions.join(' ') !== next.extensions.join(' ')
    ) {
      this.invalidateCard();
    }
  }

  invalidateCard(): void {
    this.#card = undefined;
  }

  /**
   * The agent's card, checked against DT-1..DT-4. A failed fetch is not cached, and a pending one
   * is shared only until its deadline: the fetch is bounded by `timeouts.cardTotalMs`, and a
   * caller that finds it still pending later than that (timers held up) starts a fresh one, so
   * every call on a Binding never waits behind one stuck read.
   */
  card(): Promise<AgentCardInfo> {
    const now = performance.now();
    const held = this.#card;
    if (held !== undefined && !(held.pending && now > held.until)) return held.promise;
    const entry = {
      promise: this.#fetchCard(),
      pending: true,
      until: now + this.#options.timeouts.cardTotalMs + 1000,
    };
    this.#card = entry;
    entry.promise.then(
      () => {
        entry.pending = false;
      },
      () => {
        entry.pending = false;
        if (this.#card === entry) this.#card = undefined;
      },
    );
    return entry.promise;
  }

  /** M-1: SendStreamingMessage (message/stream). An answer (taskId set) has its own errors (E-4). */
  sendStreamingMessage(message: OutgoingMessage, options: CallOptions = {}): AsyncGenerator<StreamEvent> {
    const kind: CallKind = message.taskId === undefined || message.taskId === '' ? 'send' : 'answer';
    return this.#stream(
      (codec, card) => [codec.methods.sendStream, codec.sendParams(message, card.tenant)],
      kind,
      options,
    );
  }

  /** M-3: SubscribeToTask (tasks/resubscribe). Starts with a snapshot of the task. */
  subscribeToTask(taskId: string, options: CallOptions = {}): AsyncGenerator<StreamEvent> {
    return this.#stream(
      (codec, card) => [codec.methods.subscribe, codec.taskIdParams(taskId, card.tenant)],
      'other',
      options,
    );
  }

  /** M-2: GetTask (tasks/get). */
  async getTask(taskId: string, options: CallOptions & { historyLength?: number } = {}): Promise<Task> {
    const { codec, card } = await this.#wire(options.signal);
    const result = await this.#call(
      codec,
      codec.methods.get,
      codec.taskIdParams(taskId, card.tenant, options.historyLength),
      options,
    );
    return codec.decodeTask(result);
  }

  /** M-4: CancelTask (tasks/cancel). Returns the task as the agent reports it after the cancel. */
  async cancelTask(taskId: string, options: CallOptions = {}): Promise<Task> {
    const { codec, card } = await this.#wire(options.signal);
    const result = await this.#call(
      codec,
      codec.methods.cancel,
      codec.taskIdParams(taskId, card.tenant),
      options,
    );
    return codec.decodeTask(result);
  }

  /** Whether ListTasks exists for this agent (1.0 only, M-6). */
  async canListTasks(): Promise<boolean> {
    const { codec } = await this.#wire();
    return codec.methods.list !== undefined;
  }

  /**
   * M-5/M-6: the tasks of a context, page by page, following nextPageToken for at most
   * `listTasks.maxPages` pages, each task with history so a turn's messageId can be looked for.
   */
  async *listTasks(contextId: string, options: CallOptions = {}): AsyncGenerator<Task> {
    const { codec, card } = await this.#wire(options.signal);
    const method = codec.methods.list;
    if (method === undefined) throw new UnsupportedByVersionError('ListTasks', codec.version);
    const { pageSize, maxPages, historyLength } = this.#options.listTasks;
    let pageToken = '';
    const seenTokens = new Set<string>();
    for (let page = 0; page < maxPages; page++) {
      const params = codec.listParams({ contextId, pageSize, pageToken, historyLength }, card.tenant);
      const result: TaskPage = codec.decodeTaskPage(await this.#call(codec, method, params, options));
      yield* result.tasks;
      pageToken = result.nextPageToken;
      // A token we have followed already would loop for ever; stop as if the list ended.
      if (pageToken === '' || seenTokens.has(pageToken)) return;
      seenTokens.add(pageToken);
    }
  }

  /**
   * M-6: the task of `contextId` whose history holds `messageId`, if any. A task counts only by
   * its history: an agent that lists tasks without history makes every turn look absent.
   */
  async findTaskByMessageId(
    contextId: string,
    messageId: string,
    options: CallOptions = {},
  ): Promise<Task | undefined> {
    for await (const task of this.listTasks(contextId, options)) {
      if (task.history.some((m) => m.messageId === messageId)) return task;
    }
    return undefined;
  }

  /** The card and codec for a call; a call whose signal aborts stops waiting for the card. */
  async #wire(signal?: AbortSignal): Promise<{ codec: WireCodec; card: AgentCardInfo }> {
    const card = await untilAborted(this.card(), signal);
    return { codec: card.protocolVersion === '1.0' ? v1_0 : v0_3, card };
  }

  async #fetchCard(): Promise<AgentCardInfo> {
    const o = this.#options;
    const url = cardUrl(o.endpoint);
    const started = o.now();
    let outcome = 'ok';
    const span = this.#span('GET', '', '', undefined);
    try {
      // Servers that speak both versions pick the card's layout by A2A-Version; ask for 1.0's.
      const res = await send({
        url,
        method: 'GET',
        headers: {
          ...this.#baseHeaders(headersOf(span)),
          ...v1_0.versionHeaders(),
          accept: 'application/json',
        },
        headersTimeoutMs: o.timeouts.headersMs,
        bodyIdleMs: o.timeouts.bodyIdleMs,
        totalMs: o.timeouts.cardTotalMs,
        dispatcher: o.dispatcher,
      });
      if (span !== undefined) setStatusCode(span, res.status);
      if (res.status < 200 || res.status >= 300) {
        discard(res);
        const error = errorFromStatus(res.status, this.#statusHeaders(res), 'other', undefined, o.now());
        if (error.code === 'credentials_rejected') throw error;
        throw new CardFetchError(`the agent card could not be fetched (HTTP ${res.status})`, {
          cause: error,
        });
      }
      const body = await readBounded(res, o.limits.maxCardBytes, 'card', o.timeouts.bodyIdleMs);
      let json: unknown;
      try {
        json = JSON.parse(body);
      } catch (error) {
        throw new CardFetchError('the agent card is not JSON', { cause: error });
      }
      return readCard(json, { speaks: o.extensions });
    } catch (error) {
      // The card's own verdicts (DT-1, DT-3, DT-4), rejected credentials (E-1), a card too
      // large and an unreachable agent keep their class; a read that broke, stalled or took too
      // long is a card that could not be fetched (DT-2), with what happened as the cause.
      const failure =
        error instanceof AgentCallError && !(error instanceof LostConnectionError)
          ? error
          : new CardFetchError('the agent card could not be fetched', { cause: error });
      outcome = failure.code;
      throw failure;
    } finally {
      if (span !== undefined) endCallSpan(span, outcome, 0);
      this.#publish('card', 'GetAgentCard', '', started, outcome, 0);
    }
  }

  /**
   * Headers every request carries: the static ones, then exactly one identity header (S-8),
   * and the call span's trace context when it has one.
   */
  #baseHeaders(trace: TraceHeaders | undefined): Record<string, string> {
    const headers = identityHeaders(this.#options.identity, this.#options.headers);
    if (trace !== undefined) {
      headers.traceparent = trace.traceparent;
      if (trace.tracestate !== undefined && trace.tracestate !== '') headers.tracestate = trace.tracestate;
    }
    return headers;
  }

  async #rpcHeaders(
    codec: WireCodec,
    accept: string,
    trace: TraceHeaders | undefined,
  ): Promise<Record<string, string>> {
    const card = await this.card();
    const listed = new Set(card.extensions.map((e) => e.uri));
    const wanted = this.#options.extensions.filter((uri) => listed.has(uri));
    return {
      ...this.#baseHeaders(trace),
      ...codec.versionHeaders(),
      ...codec.extensionHeaders(wanted),
      'content-type': 'application/json',
      accept,
    };
  }

  #statusHeaders(res: HttpResponse): { location?: string; retryAfter?: string } {
    const out: { location?: string; retryAfter?: string } = {};
    const location = header(res.headers, 'location');
    const retryAfter = header(res.headers, 'retry-after');
    if (location !== undefined) out.location = location;
    if (retryAfter !== undefined) out.retryAfter = retryAfter;
    return out;
  }

  /** Turns a non-2xx response into the contract's error, reading a JSON-RPC error body if any. */
  async #statusError(res: HttpResponse, kind: CallKind): Promise<AgentCallError> {
    let rpcError: RpcErrorBody | undefined;
    const type = header(res.headers, 'content-type') ?? '';
    if (res.status >= 400 && type.includes('json')) {
      try {
        const body = await readBounded(res, 64 * 1024, 'response', this.#options.timeouts.bodyIdleMs);
        const outcome = decodeResponse(body, '');
        if (!outcome.ok) rpcError = outcome.error;
      } catch {
        // A body we cannot read says nothing more than the status.
      }
    } else {
      discard(res);
    }
    return errorFromStatus(res.status, this.#statusHeaders(res), kind, rpcError, this.#options.now());
  }

  async #call(codec: WireCodec, method: string, params: unknown, options: CallOptions): Promise<unknown> {
    const o = this.#options;
    const id = randomUUID();
    const started = o.now();
    let outcome = 'ok';
    const span = this.#span(method, method, codec.version, options.trace);
    try {
      const res = await send({
        url: o.endpoint,
        method: 'POST',
        headers: await this.#rpcHeaders(codec, 'application/json', headersOf(span, options.trace)),
        body: encodeRequest(id, method, params),
        headersTimeoutMs: o.timeouts.headersMs,
        bodyIdleMs: o.timeouts.bodyIdleMs,
        totalMs: o.timeouts.callTotalMs,
        dispatcher: o.dispatcher,
        ...(options.signal === undefined ? {} : { signal: options.signal }),
      });
      if (res.status < 200 || res.status >= 300) throw await this.#statusError(res, 'other');
      const body = await readBounded(res, o.limits.maxResponseBytes, 'response', o.timeouts.bodyIdleMs);
      const reply = decodeResponse(body, id);
      if (!reply.ok) throw errorFromRpc(reply.error, 'other');
      return reply.result;
    } catch (error) {
      outcome = error instanceof AgentCallError ? error.code : 'error';
      throw error;
    } finally {
      if (span !== undefined) endCallSpan(span, outcome, 0);
      this.#publish(method, operationOf(codec, method), codec.version, started, outcome, 0);
    }
  }

  /**
   * One streaming call. `request` picks the method and params once the card has said which wire
   * version to speak. A single generator (no `yield*` layers) keeps the per-event cost low.
   */
  async *#stream(
    request: (codec: WireCodec, card: AgentCardInfo) => [string, unknown],
    kind: CallKind,
    options: CallOptions,
  ): AsyncGenerator<StreamEvent> {
    const o = this.#options;
    const { codec, card } = await this.#wire(options.signal);
    const [method, params] = request(codec, card);
    const id = randomUUID();
    const started = o.now();
    let outcome = 'ok';
    let seen = 0;
    let res: HttpResponse | undefined;
    let finished = false;
    const span = this.#span(method, method, codec.version, options.trace);
    // one timer for the whole stream. Events only stamp the time; when the timer fires it
    // re-arms for the rest of the window, so the per-event cost is a clock read, not a timer.
    const idleMs = o.timeouts.streamIdleMs;
    let lastEventAt = performance.now();
    let idleFired = false;
    let idle: NodeJS.Timeout | undefined;
    const onIdleTimer = (): void => {
      const quiet = performance.now() - lastEventAt;
      if (quiet < idleMs) {
        idle = setTimeout(onIdleTimer, idleMs - quiet);
        return;
      }
      idleFired = true;
      res?.abort(new StreamIdleError(idleMs, seen));
    };
    try {
      res = await send({
        url: o.endpoint,
        method: 'POST',
        headers: await this.#rpcHeaders(
          codec,
          'text/event-stream, application/json',
          headersOf(span, options.trace),
        ),
        body: encodeRequest(id, method, params),
        headersTimeoutMs: o.timeouts.headersMs,
        bodyIdleMs: idleMs,
        totalMs: o.timeouts.streamTotalMs,
        dispatcher: o.dispatcher,
        ...(options.signal === undefined ? {} : { signal: options.signal }),
      });
      if (res.status < 200 || res.status >= 300) throw await this.#statusError(res, kind);
      const type = (header(res.headers, 'content-type') ?? '').toLowerCase();
      if (type.startsWith('application/json')) {
        // Errors before the stream starts come as a plain JSON-RPC body (the SDKs do this).
        const body = await readBounded(
          res,
          o.limits.maxEventBytes,
          'event',
          o.timeouts.bodyIdleMs,
          o.timeouts.callTotalMs,
        );
        const reply = decodeResponse(body, id);
        if (!reply.ok) throw errorFromRpc(reply.error, kind);
        const event = codec.decodeEvent(reply.result);
        seen++;
        finished = true;
        yield event;
        return;
      }
      if (!type.startsWith('text/event-stream')) {
        throw new MalformedResponseError(`the agent answered a stream with content type "${type}"`);
      }
      const parser = new SseParser(o.limits.maxEventBytes);
      lastEventAt = performance.now();
      idle = setTimeout(onIdleTimer, idleMs);
      for await (const chunk of res.body) {
        for (const frame of parser.push(chunk as Buffer)) {
          const reply = decodeResponse(frame.data, id);
          if (!reply.ok) throw errorFromRpc(reply.error, kind);
          const event = codec.decodeEvent(reply.result);
          seen++;
          yield event;
          // Time the consumer spends does not count against the agent.
          lastEventAt = performance.now();
        }
      }
      parser.end();
      finished = true;
    } catch (error) {
      const bound = res?.boundFailure();
      const failure = this.#streamFailure(
        bound === undefined ? error : new LostConnectionError(bound.reason, seen, { cause: error }),
        kind,
        seen,
        idleFired,
      );
      outcome = failure instanceof AgentCallError ? failure.code : 'error';
      throw failure;
    } finally {
      clearTimeout(idle);
      res?.finish();
      if (!finished && res !== undefined) {
        if (outcome === 'ok') {
          // The consumer stopped reading (it had what it needed, a settled task, say). Agents
          // usually close the stream right after: drain a little, briefly, so the connection
          // can be reused; one that keeps talking is cut.
          res.body.on('error', () => undefined);
          res.body.dump({ limit: 64 * 1024, signal: AbortSignal.timeout(250) }).catch(() => undefined);
        } else {
          res.abort(new Error('stream closed by the client'));
        }
      }
      if (span !== undefined) endCallSpan(span, outcome, seen);
      this.#publish(method, operationOf(codec, method), codec.version, started, outcome, seen);
    }
  }

  #streamFailure(error: unknown, kind: CallKind, seen: number, idleFired: boolean): unknown {
    const o = this.#options;
    if (idleFired) return new StreamIdleError(o.timeouts.streamIdleMs, seen);
    if (error instanceof AgentCallError) {
      // DT-6/E-7: a send that got no event at all may or may not have reached the agent.
      if (error instanceof LostConnectionError && kind !== 'other' && seen === 0) {
        return new OutcomeUnknownError('the connection was lost before any event', { cause: error });
      }
      return error;
    }
    if (error instanceof Error && error.name === 'AbortError') return error;
    const network = classifyNetworkError(error, seen);
    if (network instanceof LostConnectionError && kind !== 'other' && seen === 0) {
      return new OutcomeUnknownError('the connection was lost before any event', { cause: network });
    }
    return network;
  }

  #publish(
    method: string,
    operation: string,
    version: string,
    started: number,
    outcome: string,
    eventsSeen: number,
  ): void {
    const durationMs = this.#options.now() - started;
    this.#telemetry.onCall?.({ operation, method, version, durationMs, outcome, eventsSeen });
    if (!callChannel.hasSubscribers) return;
    const message: CallDiagnostic = {
      endpoint: this.#options.endpoint,
      method,
      version,
      durationMs,
      outcome,
      eventsSeen,
    };
    callChannel.publish(message);
  }
}

/** Resolves as `work` does, or rejects with the signal's reason once it aborts. */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return work;
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}
