import {
  defaultTextMapGetter,
  type Link,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  trace,
} from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { spanHeaders } from '../a2a/telemetry.js';
import type { TracedTurn, TurnTracer } from '../core/ports.js';
import type { TraceContext } from '../core/trace.js';

/**
 * The engine's TurnTracer with `@opentelemetry/api`: one span per turn, from the chat message to
 * its settlement, a root (a chat message starts the work). The agent calls of the turn are its
 * children (the engine passes the context returned here with every call). A turn taken over after
 * a restart gets a new span with a link to the first one's context, stored with the turn.
 *
 * Attributes are ids and outcomes, never text: Binding, session, turn id and kind, outcome.
 * Without an SDK the tracer is the API's no-op: no span has a valid context, nothing is kept and
 * no context is stored or sent.
 */

const propagator = new W3CTraceContextPropagator();

/** Open turn spans kept at most; past it the oldest ends as interrupted. */
const MAX_OPEN = 50_000;

export class OtelTurnTracer implements TurnTracer {
  readonly #tracer: Tracer;
  readonly #open = new Map<string, Span>();

  constructor(tracer: Tracer) {
    this.#tracer = tracer;
  }

  begin(turn: TracedTurn): TraceContext | null {
    return this.#start(turn, undefined);
  }

  discard(turnId: string): void {
    // Never ended, so never exported: the first delivery's span stands alone.
    this.#open.delete(turnId);
  }

  contextOf(turn: TracedTurn & { stored: TraceContext | null }): TraceContext | null {
    const open = this.#open.get(turn.turnId);
    if (open !== undefined) return spanHeaders(open) ?? null;
    let link: Link | undefined;
    if (turn.stored !== null) {
      const context = trace.getSpanContext(
        propagator.extract(ROOT_CONTEXT, turn.stored, defaultTextMapGetter),
      );
      if (context !== undefined && trace.isSpanContextValid(context)) link = { context };
    }
    return this.#start(turn, link);
  }

  end(turnId: string, outcome: string): void {
    const span = this.#open.get(turnId);
    if (span === undefined) return;
    this.#open.delete(turnId);
    span.setAttribute('agentkourier.turn.outcome', outcome);
    if (outcome.startsWith('error:') || outcome === 'failed' || outcome === 'rejected') {
      span.setAttribute('error.type', outcome.startsWith('error:') ? outcome.slice(6) : outcome);
      span.setStatus({ code: SpanStatusCode.ERROR });
    }
    span.end();
  }

  /** Ends the spans of turns still open (the process stops): they are exported as interrupted. */
  close(): void {
    for (const [turnId, span] of this.#open) {
      span.setAttribute('agentkourier.turn.interrupted', true);
      span.end();
      this.#open.delete(turnId);
    }
  }

  #start(turn: TracedTurn, link: Link | undefined): TraceContext | null {
    const span = this.#tracer.startSpan('chat turn', {
      kind: SpanKind.SERVER,
      root: true,
      attributes: {
        'agentkourier.binding': turn.binding,
        'agentkourier.session.id': turn.sessionId,
        'agentkourier.turn.id': turn.turnId,
        'agentkourier.turn.kind': turn.kind,
        ...(link === undefined ? {} : { 'agentkourier.turn.resumed': true }),
      },
      ...(link === undefined ? {} : { links: [link] }),
    });
    const headers = spanHeaders(span);
    // A span with no valid context (no SDK) is nothing to keep or pass on. One the sampler
    // left out is kept all the same: its turn's calls carry its (unsampled) context.
    if (headers === undefined) return null;
    if (this.#open.size >= MAX_OPEN) {
      const [oldestId, oldest] = this.#open.entries().next().value as [string, Span];
      oldest.setAttribute('agentkourier.turn.interrupted', true);
      oldest.end();
      this.#open.delete(oldestId);
    }
    this.#open.set(turn.turnId, span);
    return headers;
  }
}
