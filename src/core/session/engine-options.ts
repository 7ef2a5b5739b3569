import type { Clock } from '../clock.js';
import type { AgentRegistry, ChatSurface, EventSink, TurnTracer } from '../ports.js';
import type { ForgottenMarks } from '../retention-store.js';
import type { SessionStore } from '../store.js';
import type { EngineTimings } from './timings.js';

/** What a SessionEngine is built with (engine.ts). */
export interface EngineOptions {
  store: SessionStore;
  /** Threads the retention sweep forgot: a message that opens one again is told so first. */
  forgotten?: ForgottenMarks;
  registry: AgentRegistry;
  surface: ChatSurface;
  clock?: Clock;
  events?: EventSink;
  /** The spans of turns (observability's OpenTelemetry adapter); unset: turns are not traced. */
  tracer?: TurnTracer;
  timings?: Partial<EngineTimings>;
  /** This replica's name in session leases: unique per replica, stable across its restarts. */
  owner?: string;
  /** Largest text accepted from a chat message, in characters (UTF-16 units, see core/text.ts). */
  maxTextLength?: number;
}
