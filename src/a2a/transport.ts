import { randomUUID } from 'node:crypto';
import { channel } from 'node:diagnostics_channel';
import { type Span, trace } from '@opentelemetry/api';
import { AgentCallError } from '../core/agent/errors.js';
import type { Caller } from '../core/ports.js';
import type { AgentCardInfo } from './card.js';
import { discard, type HttpResponse, header, readBounded, send } from './http.js';
import { identityHeaders, personHeaders } from './identity.js';
import {
  type CallKind,
  decodeResponse,
  encodeRequest,
  errorFromRpc,
  errorFromStatus,
  type RpcErrorBody,
} from './jsonrpc.js';
import type { ResolvedOptions, TraceHeaders } from './options.js';
import {
  type ClientTelemetry,
  endCallSpan,
  type ServerAddress,
  serverAddress,
  spanHeaders,
  startCallSpan,
} from './telemetry.js';
import type { WireCodec } from './wire/codec.js';

/**
 * What every call of the client to its agent is made with: the headers each request carries
 * (static ones, exactly one identity header, the trace context; for JSON-RPC the version and
 * extension headers too), the call's span and its report, a non-2xx response turned into the
 * contract's error, and a plain JSON-RPC request/response call. One per resolved settings: the
 * client makes a new one when it is reconfigured.
 */

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
  /** Whom the call is for: a per-person identity signs its assertion for them. */
  caller?: Caller;
}

/** The A2A 1.0 names of the operations, the same label whatever the wire version. */
const OPERATIONS: Record<keyof WireCodec['methods'], string> = {
  sendStream: 'SendStreamingMessage',
  send: 'SendMessage',
  get: 'GetTask',
  subscribe: 'SubscribeToTask',
  cancel: 'CancelTask',
  list: 'ListTasks',
};

export function operationOf(codec: WireCodec, method: string): string {
  for (const [key, name] of Object.entries(codec.methods)) {
    if (name === method) return OPERATIONS[key as keyof WireCodec['methods']];
  }
  return method;
}

export class Transport {
  readonly options: ResolvedOptions;
  readonly #telemetry: ClientTelemetry;
  readonly #server: ServerAddress;
  /** The agent's card (cached by the client): the extensions it lists pick the headers. */
  readonly #card: () => Promise<AgentCardInfo>;

  constructor(options: ResolvedOptions, telemetry: ClientTelemetry, card: () => Promise<AgentCardInfo>) {
    this.options = options;
    this.#telemetry = telemetry;
    this.#server = serverAddress(options.endpoint);
    this.#card = card;
  }

  /** The span of one call. */
  span(name: string, method: string, version: string, parent: TraceHeaders | undefined): Span {
    return startCallSpan(
      this.#telemetry.tracer ?? trace.getTracer('agentkourier.a2a'),
      { name, server: this.#server, method, version },
      parent,
    );
  }

  /**
   * Headers every request carries: the static ones, then exactly one identity header (S-8),
   * and the call span's trace context when it has one.
   */
  baseHeaders(trace: TraceHeaders | undefined): Record<string, string> {
    const headers = identityHeaders(this.options.identity, this.options.headers);
    if (trace !== undefined) {
      headers.traceparent = trace.traceparent;
      if (trace.tracestate !== undefined && trace.tracestate !== '') headers.tracestate = trace.tracestate;
    }
    return headers;
  }

  async rpcHeaders(
    codec: WireCodec,
    accept: string,
    trace: TraceHeaders | undefined,
    caller?: Caller,
  ): Promise<Record<string, string>> {
    const card = await this.#card();
    const listed = new Set(card.extensions.map((e) => e.uri));
    const wanted = this.options.extensions.filter((uri) => listed.has(uri));
    const { identity, assertions } = this.options;
    return {
      ...this.baseHeaders(trace),
      ...(identity.kind === 'person' ? await personHeaders(identity, assertions, caller) : {}),
      ...codec.versionHeaders(),
      ...codec.extensionHeaders(wanted),
      'content-type': 'application/json',
      accept,
    };
  }

  statusHeaders(res: HttpResponse): { location?: string; retryAfter?: string } {
    const out: { location?: string; retryAfter?: string } = {};
    const location = header(res.headers, 'location');
    const retryAfter = header(res.headers, 'retry-after');
    if (location !== undefined) out.location = location;
    if (retryAfter !== undefined) out.retryAfter = retryAfter;
    return out;
  }

  /** Turns a non-2xx response into the contract's error, reading a JSON-RPC error body if any. */
  async statusError(res: HttpResponse, kind: CallKind): Promise<AgentCallError> {
    let rpcError: RpcErrorBody | undefined;
    const type = header(res.headers, 'content-type') ?? '';
    if (res.status >= 400 && type.includes('json')) {
      try {
        const body = await readBounded(res, 64 * 1024, 'response', this.options.timeouts.bodyIdleMs);
        const outcome = decodeResponse(body, '');
        if (!outcome.ok) rpcError = outcome.error;
      } catch {
        // A body we cannot read says nothing more than the status.
      }
    } else {
      discard(res);
    }
    return errorFromStatus(res.status, this.statusHeaders(res), kind, rpcError, this.options.now());
  }

  /**
   * One JSON-RPC request and its response (GetTask, CancelTask, ListTasks, and the non-streaming
   * send, whose `kind` decides what its errors mean).
   */
  async call(
    codec: WireCodec,
    method: string,
    params: unknown,
    options: CallOptions,
    kind: CallKind = 'other',
  ): Promise<unknown> {
    const o = this.options;
    const id = randomUUID();
    const started = o.now();
    let outcome = 'ok';
    const span = this.span(method, method, codec.version, options.trace);
    try {
      const res = await send({
        url: o.endpoint,
        method: 'POST',
        headers: await this.rpcHeaders(codec, 'application/json', spanHeaders(span), options.caller),
        body: encodeRequest(id, method, params),
        headersTimeoutMs: o.timeouts.headersMs,
        bodyIdleMs: o.timeouts.bodyIdleMs,
        totalMs: o.timeouts.callTotalMs,
        dispatcher: o.dispatcher,
        ...(options.signal === undefined ? {} : { signal: options.signal }),
      });
      if (res.status < 200 || res.status >= 300) throw await this.statusError(res, kind);
      const body = await readBounded(res, o.limits.maxResponseBytes, 'response', o.timeouts.bodyIdleMs);
      const reply = decodeResponse(body, id);
      if (!reply.ok) throw errorFromRpc(reply.error, kind);
      return reply.result;
    } catch (error) {
      outcome = error instanceof AgentCallError ? error.code : 'error';
      throw error;
    } finally {
      endCallSpan(span, outcome, 0);
      this.publish(method, operationOf(codec, method), codec.version, started, outcome, 0);
    }
  }

  /** Reports a finished call: to the telemetry's listener and on the diagnostics channel. */
  publish(
    method: string,
    operation: string,
    version: string,
    started: number,
    outcome: string,
    eventsSeen: number,
  ): void {
    const durationMs = this.options.now() - started;
    this.#telemetry.onCall?.({ operation, method, version, durationMs, outcome, eventsSeen });
    if (!callChannel.hasSubscribers) return;
    const message: CallDiagnostic = {
      endpoint: this.options.endpoint,
      method,
      version,
      durationMs,
      outcome,
      eventsSeen,
    };
    callChannel.publish(message);
  }
}
