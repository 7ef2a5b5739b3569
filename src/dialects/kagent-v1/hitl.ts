import { z } from 'zod';
import type { Message } from '../../core/agent/model.js';

/**
 * kagent's human-in-the-loop extension, v1: the payload types exactly as kagent's own models
 * define them (kagent-core `kagent/core/a2a/_hitl.py`, pydantic with `extra="forbid"`), so a
 * request kagent itself would refuse is refused here too, and a reply built from it is one
 * kagent accepts.
 *
 * The one leniency is in ask_user questions: kagent types them only as "a list of objects"
 * (they are the model's own tool arguments), so keys other than question/choices/multiple are
 * dropped rather than making the whole pause unreadable.
 */

/** The extension's URI: in the card, the `A2A-Extensions` header, and `message.extensions`. */
export const KAGENT_HITL_EXTENSION = 'https://kagent.dev/extensions/hitl/v1';

const nonEmpty = z.string().min(1);

/** One tool call to decide on. `id` is opaque and goes back unchanged; `call_id` is for audit only. */
const hitlTool = z.strictObject({
  id: nonEmpty,
  call_id: nonEmpty,
  name: nonEmpty,
  // kagent turns a JSON null into {} (a tool without arguments).
  args: z
    .record(z.string(), z.unknown())
    .nullish()
    .transform((args) => args ?? {}),
});

/**
 * A pause raised by a sub-agent. Not recursive on the wire: kagent flattens deeper pauses
 * itself (the parent surfaces the child's visible tools), so one level covers any depth.
 */
const nestedRequest = z.strictObject({
  subagent_name: z.string().nullish(),
  task_id: z.string().nullish(),
  context_id: z.string().nullish(),
  tools: z.array(hitlTool).min(1),
});

const askUserQuestion = z.object({
  question: nonEmpty,
  choices: z
    .array(z.string())
    .nullish()
    .transform((choices) => choices ?? []),
  multiple: z
    .boolean()
    .nullish()
    .transform((multiple) => multiple ?? false),
});

const toolApprovalRequest = z.strictObject({
  type: z.literal('tool_approval_request'),
  hint: z.string().nullish(),
  tools: z.array(hitlTool).min(1),
  nested: nestedRequest.nullish(),
});

const askUserRequest = z.strictObject({
  type: z.literal('ask_user_request'),
  id: nonEmpty,
  // kagent answers need at least one answer, so a request with no question cannot be answered.
  questions: z.array(askUserQuestion).min(1),
  nested: nestedRequest.nullish(),
});

export const hitlRequestSchema = z.discriminatedUnion('type', [toolApprovalRequest, askUserRequest]);

export type HitlTool = z.infer<typeof hitlTool>;
export type NestedHitlRequest = z.infer<typeof nestedRequest>;
export type AskUserQuestion = z.infer<typeof askUserQuestion>;
export type ToolApprovalRequest = z.infer<typeof toolApprovalRequest>;
export type AskUserRequest = z.infer<typeof askUserRequest>;
export type HitlRequest = z.infer<typeof hitlRequestSchema>;

export interface ToolApproval {
  id: string;
  approved: boolean;
  rejection_reason?: string;
}

export interface ToolApprovalResponse {
  type: 'tool_approval_response';
  approvals: ToolApproval[];
}

export interface AskUserResponse {
  type: 'ask_user_response';
  id: string;
  answers: Array<{ answer: string[] }>;
}

export type HitlResponse = ToolApprovalResponse | AskUserResponse;

export const RESPONSE_TYPES: ReadonlySet<string> = new Set(['tool_approval_response', 'ask_user_response']);

export type HitlReading =
  /** Not a HITL message: the generic reading applies. */
  | { kind: 'none' }
  | { kind: 'request'; request: HitlRequest }
  /** A HITL message that cannot be shown or answered. */
  | { kind: 'invalid'; reason: string };

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Reads the payload of a status message. A message carries HITL only when it lists the
 * extension AND its metadata holds an object with a string `type` under the URI; kagent
 * ignores the metadata otherwise, and so do we.
 */
export function readHitl(message: Message | undefined): HitlReading {
  if (message === undefined || !(message.extensions ?? []).includes(KAGENT_HITL_EXTENSION)) {
    return { kind: 'none' };
  }
  const payload = message.metadata?.[KAGENT_HITL_EXTENSION];
  if (!isRecord(payload) || typeof payload.type !== 'string') return { kind: 'none' };
  if (payload.type !== 'tool_approval_request' && payload.type !== 'ask_user_request') {
    return { kind: 'invalid', reason: 'the agent sent a human-in-the-loop payload of an unknown type' };
  }
  const parsed = hitlRequestSchema.safeParse(payload);
  if (!parsed.success) {
    return { kind: 'invalid', reason: `the agent sent a malformed ${payload.type}` };
  }
  const unanswerable = unanswerableReason(parsed.data);
  if (unanswerable !== undefined) return { kind: 'invalid', reason: unanswerable };
  return { kind: 'request', request: parsed.data };
}

/**
 * Requests that parse but that kagent's resume would refuse whatever the answer: showing them
 * would ask a person for a decision that can only fail (kagent-adk `_hitl.py`,
 * `require_tool_approval_response` and `_build_nested_resume`).
 */
function unanswerableReason(request: HitlRequest): string | undefined {
  const ids = visibleTools(request).map((tool) => tool.id);
  if (new Set(ids).size !== ids.length) return 'the approval request repeats a tool call id';
  const nested = request.nested;
  if (nested === null || nested === undefined) return undefined;
  if (!nested.task_id || !nested.subagent_name) return 'the sub-agent pause names no sub-agent task';
  if (request.type === 'tool_approval_request' && request.tools.length !== 1) {
    return 'the sub-agent pause has more than one parent tool call';
  }
  if (request.type === 'ask_user_request') {
    const [only, ...more] = nested.tools;
    if (only === undefined || more.length > 0 || only.name !== 'ask_user') {
      return 'the sub-agent question does not hold exactly one ask_user call';
    }
  }
  return undefined;
}

/** The tool calls the person decides on: a sub-agent's own when it paused, else the top level. */
export function visibleTools(request: HitlRequest): HitlTool[] {
  if (request.nested !== null && request.nested !== undefined) return request.nested.tools;
  if (request.type === 'tool_approval_request') return request.tools;
  return [];
}

/** The id an ask_user answer must carry: the child's ask_user call when nested (kagent checks it). */
export function askUserAnswerId(request: AskUserRequest): string {
  const child = request.nested?.tools[0];
  return child === undefined ? request.id : child.id;
}

/** Re-reads a stored question payload (JSON from the session store) as a request. */
export function hitlRequestOf(payload: unknown): HitlRequest | undefined {
  const parsed = hitlRequestSchema.safeParse(payload);
  return parsed.success ? parsed.data : undefined;
}
