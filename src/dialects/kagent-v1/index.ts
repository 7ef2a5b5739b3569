/** The kagent-v1 dialect: kagent's human-in-the-loop extension v1. */
export { kagentV1Dialect } from './dialect.js';
export { cut, describeArgs, describeToolCall, prettyJson, visibleText } from './display.js';
export {
  type AskUserQuestion,
  type AskUserRequest,
  type AskUserResponse,
  askUserAnswerId,
  type HitlReading,
  type HitlRequest,
  type HitlResponse,
  type HitlTool,
  hitlRequestOf,
  KAGENT_HITL_EXTENSION,
  type NestedHitlRequest,
  readHitl,
  type ToolApproval,
  type ToolApprovalRequest,
  type ToolApprovalResponse,
  visibleTools,
} from './hitl.js';
export { ARGS_MAX_CHARS, formOf, questionOf } from './question.js';
export {
  askUserResponse,
  buildReply,
  type HitlReply,
  HitlReplyError,
  type HitlReplyErrorCode,
  messageExtensions,
  toolApprovalResponse,
} from './replies.js';
