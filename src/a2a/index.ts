export * from '../core/agent/errors.js';
export * from '../core/agent/model.js';
export { type AgentCardInfo, cardUrl, readCard, WELL_KNOWN_CARD_PATH } from './card.js';
export { A2AClient, type CallDiagnostic, type CallOptions, callChannel } from './client.js';
export type {
  A2AClientOptions,
  Identity,
  Limits,
  ListTasksSettings,
  Timeouts,
  TraceHeaders,
} from './options.js';
export { MAX_RETRY_AFTER_MS, parseRetryAfter } from './retry-after.js';
export { formatSseEvent, type SseEvent, SseParser } from './sse.js';
export type { CallReport, ClientTelemetry } from './telemetry.js';
