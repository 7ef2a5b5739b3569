import type { EngineEvent } from '../events.js';
import type { TraceContext } from '../trace.js';

/** The engine's events and the spans of its turns: what observability subscribes to. */

/** Typed domain events for metrics, traces and logs to subscribe to. */
export interface EventSink {
  emit(event: EngineEvent): void;
  /**
   * Whether this sink wants `agent.event`, one per event of an agent's stream: thousands per
   * long answer, so the engine builds them only for a sink that says so (tests that watch a
   * stream's progress do; nothing in the broker itself does).
   */
  readonly agentEvents?: boolean;
}

/** What a turn's trace needs to know of it: ids, never text. */
export interface TracedTurn {
  turnId: string;
  sessionId: string;
  binding: string;
  kind: string;
}

/**
 * The spans of turns, from the chat message to its settlement. A port rather than an event
 * sink because the engine needs answers back (the context to store with a turn and to send to
 * the agent), and a port rather than an OpenTelemetry import so that core stays free of
 * tracing libraries: observability implements it with `@opentelemetry/api`, and without it
 * the engine passes no context at all.
 */
export interface TurnTracer {
  /** A turn was received: its span begins. The context returned is stored with the turn. */
  begin(turn: TracedTurn): TraceContext | null;
  /** The turn was a repeat of one already stored: the span begun for it is dropped. */
  discard(turnId: string): void;
  /**
   * The context the turn's calls to the agent go under. A turn this process did not begin
   * (it was taken over after a restart) gets a new span, linked to `stored` — not its child:
   * the first span never ended, and a trace should not pretend it did.
   */
  contextOf(turn: TracedTurn & { stored: TraceContext | null }): TraceContext | null;
  /** The turn settled (`outcome` as in the turn.settled event): its span ends. */
  end(turnId: string, outcome: string): void;
}
