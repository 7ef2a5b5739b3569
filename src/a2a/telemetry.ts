import {
  type Context,
  context,
  defaultTextMapGetter,
  defaultTextMapSetter,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  trace,
} from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import {
  ATTR_ERROR_TYPE,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_SERVER_ADDRESS,
  ATTR_SERVER_PORT,
} from '@opentelemetry/semantic-conventions';
import {
  ATTR_RPC_JSONRPC_VERSION,
  ATTR_RPC_METHOD,
  ATTR_RPC_SYSTEM_NAME,
} from '@opentelemetry/semantic-conventions/incubating';
import type { TraceHeaders } from './options.js';

/**
 * The client's spans and call reports. A span per call (CLIENT kind), child of the turn's
 * context when the caller passes one, whose own context goes to the agent as `traceparent` /
 * `tracestate`. Without an OpenTelemetry SDK the API's tracer is a no-op whose spans carry the
 * parent's context, so a turn's context still reaches the agent and nothing is recorded.
 */

/** One finished call, for metrics. Never carries headers, bodies or the endpoint's query. */
export interface CallReport {
  /** The A2A 1.0 operation name whatever the wire version (GetAgentCard, SendStreamingMessage, …). */
  operation: string;
  /** The JSON-RPC method as sent ('' for the card). */
  method: string;
  version: string;
  durationMs: number;
  /** 'ok', or the error's code. */
  outcome: string;
  eventsSeen: number;
}

export interface ClientTelemetry {
  /** Default: the global tracer, a no-op until an SDK is registered. */
  tracer?: Tracer;
  /** Called once per finished call. Must not throw; must return at once. */
  onCall?: (call: CallReport) => void;
}

const propagator = new W3CTraceContextPropagator();

/** The context a call's span is the child of: the caller's trace context, or the active one. */
export function parentContext(headers: TraceHeaders | undefined): Context {
  if (headers === undefined) return context.active();
  return propagator.extract(ROOT_CONTEXT, headers, defaultTextMapGetter);
}

/** The W3C headers of a span, or undefined when it has no valid context (nothing to pass on). */
export function spanHeaders(span: Span): TraceHeaders | undefined {
  // The API's no-op span (no SDK) has no valid context, and the propagator would write nothing
  // for it: said before a context and a carrier are built for it, at every turn and call.
  if (!trace.isSpanContextValid(span.spanContext())) return undefined;
  const carrier: Record<string, string> = {};
  propagator.inject(trace.setSpan(ROOT_CONTEXT, span), carrier, defaultTextMapSetter);
  const traceparent = carrier.traceparent;
  if (traceparent === undefined) return undefined;
  const tracestate = carrier.tracestate;
  return tracestate === undefined || tracestate === '' ? { traceparent } : { traceparent, tracestate };
}

export interface CallSpanInfo {
  /** The span name: the JSON-RPC method, or 'GET' for the card (OTel's RPC and HTTP conventions). */
  name: string;
  server: ServerAddress;
  method: string;
  version: string;
}

/** The endpoint's host and port only: a URL may carry a credential in its query. */
export interface ServerAddress {
  address: string;
  port: number;
}

/** Read once per endpoint, not per call. */
export function serverAddress(endpoint: string): ServerAddress {
  const url = new URL(endpoint);
  return {
    address: url.hostname,
    port: url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port),
  };
}

/** Starts the CLIENT span of one call, with attributes by the RPC and HTTP semantic conventions. */
export function startCallSpan(tracer: Tracer, info: CallSpanInfo, parent: TraceHeaders | undefined): Span {
  const attributes: Record<string, string | number> = {
    [ATTR_SERVER_ADDRESS]: info.server.address,
    [ATTR_SERVER_PORT]: info.server.port,
  };
  if (info.method === '') {
    attributes[ATTR_HTTP_REQUEST_METHOD] = 'GET';
  } else {
    attributes[ATTR_RPC_SYSTEM_NAME] = 'jsonrpc';
    attributes[ATTR_RPC_METHOD] = info.method;
    attributes[ATTR_RPC_JSONRPC_VERSION] = '2.0';
    attributes['a2a.protocol.version'] = info.version;
  }
  return tracer.startSpan(info.name, { kind: SpanKind.CLIENT, attributes }, parentContext(parent));
}

/** The HTTP status of the card's response, on its span. */
export function setStatusCode(span: Span, status: number): void {
  span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, status);
}

/** Ends a call's span with its outcome ('ok' or an error code; never a message). */
export function endCallSpan(span: Span, outcome: string, eventsSeen: number): void {
  if (eventsSeen > 0) span.setAttribute('a2a.events', eventsSeen);
  if (outcome !== 'ok') {
    span.setAttribute(ATTR_ERROR_TYPE, outcome);
    span.setStatus({ code: SpanStatusCode.ERROR });
  }
  span.end();
}
