/** The Slack chat surface: what the composition root (main.ts) needs of it. */
export { type ConnectOptions, type ListenOptions, SlackConnection } from './app.js';
export type { ApprovalAudit, DecisionListener } from './approval-audit.js';
export type { ApprovalBindings, ApprovalCounters } from './approval-gate.js';
export { PromptDesk } from './approvals.js';
export { DEFAULT_METHOD_BUDGETS, type MethodBudget } from './budget.js';
export {
  SlackAuthError,
  SlackPlatformError,
  SlackRateLimitedError,
  SlackUnavailableError,
} from './errors.js';
export { SlackSurface } from './surface.js';
export { renderTriggerMessage, SlackTriggerThreads, TRIGGER_EVENT_TYPE } from './trigger-threads.js';
export type { SlackApiObserver, SlackTelemetry } from './web-api.js';
