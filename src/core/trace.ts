/**
 * A W3C trace context (`traceparent`, `tracestate`) as plain strings. Core carries it from the
 * turn to the agent call and into the store, and never reads it: tracing is observability's.
 */
export interface TraceContext {
  traceparent: string;
  tracestate?: string;
}
