/** The Slack chat surface: what the composition root (main.ts) needs of it. */

export { SlackSurface } from './answer/surface.js';
export { renderTriggerMessage, SlackTriggerThreads, TRIGGER_EVENT_TYPE } from './answer/trigger-threads.js';
export {
  type ConnectOptions,
  type ListenOptions,
  type SlackBindings,
  SlackConnection,
} from './connection.js';
export type { ApprovalBindings, ApprovalCounters } from './prompts/access.js';
export { DEFAULT_METHOD_BUDGETS, type MethodBudget } from './web-api/budget.js';
export type { SlackApiObserver, SlackTelemetry } from './web-api/client.js';
export {
  SlackAuthError,
  SlackPlatformError,
  SlackRateLimitedError,
  SlackUnavailableError,
} from './web-api/errors.js';
