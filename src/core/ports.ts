/**
 * The engine's ports: what it needs from the world, as small interfaces, one file each under
 * ports/ (the agent and its dialect, what surfaces hand in, what the engine shows, its events
 * and spans). Adapters live outside core (a2a/ implements AgentClient, dialects/ Dialect,
 * surfaces/ ChatSurface, store/ SessionStore, observability/ EventSink and TurnTracer).
 */

export type * from './ports/agent.js';
export type * from './ports/chat.js';
export type * from './ports/inbound.js';
export type * from './ports/tracing.js';
export type {
  AskItem,
  BuiltReply,
  Question,
  StructuredForm,
  StructuredReply,
  ToolCallToDecide,
  ToolDecision,
} from './question.js';
