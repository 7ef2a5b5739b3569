/**
 * kagent-shaped behaviours for the contract agent: pauses that carry kagent's human-in-the-loop
 * extension v1 (`https://kagent.dev/extensions/hitl/v1`), and the resume that follows them,
 * validated the way kagent's runtime validates it.
 *
 * Written from kagent's own source (kagent-core 1.0.0a17 `kagent/core/a2a/_hitl.py`, kagent-adk
 * `_hitl.py`, `_agent_executor.py`, `_approval.py`), not from src/, so the dialect is checked
 * against an independent reading:
 * - the payload is attached to the input-required status message (extensions[] AND
 *   metadata[URI]) only when the request that produced the pause asked for the extension in
 *   its A2A-Extensions header; otherwise the message has only the hint text;
 * - a reply is a HITL reply only when message.extensions lists the URI and metadata[URI] is an
 *   object with a response `type`; anything else is ordinary text, which never reaches the
 *   paused tools (kagent: "the approval silently never reaches the agent");
 * - a tool approval needs exactly one decision per visible id (missing, repeated and unknown
 *   ids are refused), an ask_user answer needs the request's id (the child's when nested) and
 *   one answer per question;
 * - models are strict like kagent's pydantic ones (`extra="forbid"`); `approved` must be a
 *   real boolean (kagent's pydantic would also coerce "true"; our client never sends that).
 */

import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { Op } from './ops.js';
import type { JsonObject, StoredMessage, StoredPart, StoredTask } from './wire.js';

export const HITL_URI = 'https://kagent.dev/extensions/hitl/v1';

/** One tool call that pauses for approval. `callId` defaults to `call_<id>`. */
export interface KagentToolCall {
  id: string;
  callId?: string;
  name: string;
  args?: JsonObject | null;
}

export interface KagentQuestion {
  question: string;
  choices?: string[];
  multiple?: boolean;
}

/** A pause raised by a sub-agent (kagent's `nested`), with the parent's remote-agent call. */
export interface KagentSubagent {
  name: string;
  taskId?: string;
  contextId?: string;
  /** The parent's confirmation id (the one kagent keeps internally). Default 'parent-conf-1'. */
  parentId?: string;
}

export interface KagentOptions {
  subagent?: KagentSubagent;
  hint?: string;
  /** What a tool returns when it runs (by tool name). Default `{ result: '<name> done' }`. */
  results?: Record<string, unknown>;
  /**
   * How an invalid reply is refused: 'rpc-error' (-32603 before any event, default; the
   * contract's E-4) or 'failed' (a failed task, as kagent's Python executor reports it).
   */
  onInvalid?: 'rpc-error' | 'failed';
}

export type KagentBehaviour =
  | { kind: 'kagent-approval'; tools: KagentToolCall[]; options: KagentOptions }
  | { kind: 'kagent-ask-user'; questions: KagentQuestion[]; options: KagentOptions & { id?: string } }
  /** A status message whose HITL metadata is `payload` as given (malformed on purpose). */
  | { kind: 'kagent-malformed'; payload: unknown };

/** Pauses for approval of these tool calls (all on the sub-agent when `subagent` is set). */
export function kagentApproval(tools: KagentToolCall[], options: KagentOptions = {}): KagentBehaviour {
  return { kind: 'kagent-approval', tools, options };
}

/** Pauses with kagent's ask_user questions (on the sub-agent when `subagent` is set). */
export function kagentAskUser(
  questions: KagentQuestion[],
  options: KagentOptions & { id?: string } = {},
): KagentBehaviour {
  return { kind: 'kagent-ask-user', questions, options };
}

/** Pauses with this payload under the HITL URI, and the URI in extensions[]. */
export function kagentMalformed(
  payload: unknown = { type: 'tool_approval_request', tools: [] },
): KagentBehaviour {
  return { kind: 'kagent-malformed', payload };
}

/** What the agent did with replies, for assertions. */
export interface KagentLedger {
  /** Tool calls that ran after an approval, in order. */
  ran: Array<{
    taskId: string;
    id: string;
    callId: string;
    name: string;
    args: JsonObject;
    subagent?: string;
  }>;
  /** Tool calls denied, with the reason the model was given. */
  denied: Array<{ taskId: string; id: string; name: string; reason?: string }>;
  /** ask_user answers received (one list per question). */
  answers: Array<{ taskId: string; id: string; answers: string[][] }>;
  /** Replies refused, with kagent's reason. */
  refused: Array<{ taskId: string; reason: string }>;
  /** Replies to a HITL pause that were not HITL replies (ordinary text). */
  plain: Array<{ taskId: string; text: string }>;
}

export function newLedger(): KagentLedger {
  return { ran: [], denied: [], answers: [], refused: [], plain: [] };
}

// ---- kagent's models (kagent-core _hitl.py), for the replies it receives ----------------------

const approval = z.strictObject({
  id: z.string().min(1),
  approved: z.boolean(),
  rejection_reason: z.string().nullish(),
});
const toolApprovalResponse = z.strictObject({
  type: z.literal('tool_approval_response'),
  approvals: z.array(approval).min(1),
});
const askUserResponse = z.strictObject({
  type: z.literal('ask_user_response'),
  id: z.string().min(1),
  answers: z.array(z.record(z.string(), z.array(z.string()))).nullish(),
});

interface PublicTool {
  id: string;
  call_id: string;
  name: string;
  args: JsonObject;
}

/** A pause the agent is waiting on, by task id. */
export interface PendingPause {
  request: JsonObject;
  /** The tools a person decides on (nested.tools when nested). */
  visible: PublicTool[];
  options: KagentOptions;
}

function publicTool(t: KagentToolCall): PublicTool {
  return { id: t.id, call_id: t.callId ?? `call_${t.id}`, name: t.name, args: t.args ?? {} };
}

function dataPart(type: 'function_call' | 'function_response', data: JsonObject): StoredPart {
  return { data, metadata: { kagent_type: type } };
}

function statusMessage(task: StoredTask, parts: StoredPart[]): StoredMessage {
  return { messageId: randomUUID(), role: 'agent', taskId: task.id, contextId: task.contextId, parts };
}

function nestedOf(sub: KagentSubagent, tools: PublicTool[]): JsonObject {
  const nested: JsonObject = { subagent_name: sub.name, tools };
  nested.task_id = sub.taskId ?? 'child-task-1';
  nested.context_id = sub.contextId ?? 'child-ctx-1';
  return nested;
}

function parentTool(sub: KagentSubagent): PublicTool {
  return {
    id: sub.parentId ?? 'parent-conf-1',
    call_id: 'parent-call-1',
    name: sub.name,
    args: { request: 'delegated by the parent agent' },
  };
}

/**
 * kagent's `hitl_status_text` for a tool pause: the tools' hints, then their names. It is both
 * the hint text part of the message and the request's `hint`.
 */
function statusText(hints: string[], tools: PublicTool[]): string {
  const names = tools.map((t) => t.name).join(', ');
  return hints.length > 0 ? `${hints.join('; ')} (${names})` : `Approval is required for tool(s): ${names}`;
}

type PauseBehaviour = Exclude<KagentBehaviour, { kind: 'kagent-malformed' }>;

interface BuiltPause {
  request: JsonObject;
  /** The tools a person decides on. */
  visible: PublicTool[];
  /** The hint text part. */
  text: string;
}

/** The request kagent's `build_hitl_status_message` would build for this pause. */
function requestOf(b: PauseBehaviour): BuiltPause {
  const sub = b.options.subagent;
  if (b.kind === 'kagent-approval') {
    const tools = b.tools.map(publicTool);
    if (sub === undefined) {
      // _approval.py: every paused tool's confirmation carries this hint.
      const hints = b.options.hint
        ? [b.options.hint]
        : tools.map((t) => `Tool '${t.name}' requires approval before execution.`);
      const text = statusText(hints, tools);
      return { request: { type: 'tool_approval_request', hint: text, tools }, visible: tools, text };
    }
    const parent = parentTool(sub);
    const names = tools.map((t) => t.name).join(', ');
    const text = statusText([`Remote agent '${sub.name}' requires approval for tool(s): ${names}`], [parent]);
    return {
      request: { type: 'tool_approval_request', hint: text, tools: [parent], nested: nestedOf(sub, tools) },
      visible: tools,
      text,
    };
  }
  const questions = b.questions.map((q) => ({
    question: q.question,
    choices: q.choices ?? [],
    multiple: q.multiple ?? false,
  }));
  if (sub === undefined) {
    return {
      request: { type: 'ask_user_request', id: b.options.id ?? 'ask-conf-1', questions },
      visible: [],
      text: questions.map((q) => q.question).join('; '),
    };
  }
  const child: PublicTool = {
    id: b.options.id ?? 'child-ask-1',
    call_id: 'child-ask-call-1',
    name: 'ask_user',
    args: { questions },
  };
  const parent = parentTool(sub);
  const asks = questions.map((q) => q.question).join(' ');
  return {
    request: {
      type: 'ask_user_request',
      // kagent: the top-level id is the parent's confirmation; the answer carries the child's.
      id: parent.id,
      questions,
      nested: nestedOf(sub, [child]),
    },
    visible: [child],
    text: statusText([`Remote agent '${sub.name}' asks: ${asks}`], [parent]),
  };
}

/**
 * The pause stream: the task, the model's tool calls as `working` data parts, then the
 * input-required status whose message carries the payload (when activated) and the hint text.
 */
export function kagentPauseOps(
  task: StoredTask,
  b: KagentBehaviour,
  activated: boolean,
  pending: Map<string, PendingPause>,
): Op[] {
  const ops: Op[] = [{ op: 'snapshot' }, { op: 'status', state: 'working' }];
  const message = statusMessage(task, []);
  if (b.kind === 'kagent-malformed') {
    message.parts = [{ text: 'Human input is required before the agent can continue.' }];
    message.extensions = [HITL_URI];
    message.metadata = { [HITL_URI]: b.payload };
    ops.push({ op: 'status', state: 'input-required', message });
    return ops;
  }
  const { request, visible, text } = requestOf(b);
  // The model's own calls come first, as ordinary tool-step parts: the tools themselves, the
  // ask_user tool, or the parent's call to the sub-agent.
  const sub = b.options.subagent;
  let calls: StoredPart[];
  if (sub !== undefined) {
    calls = [dataPart('function_call', { id: 'parent-call-1', name: sub.name, args: {} })];
  } else if (b.kind === 'kagent-approval') {
    calls = visible.map((t) => dataPart('function_call', { id: t.call_id, name: t.name, args: t.args }));
  } else {
    calls = [
      dataPart('function_call', { id: 'ask-call', name: 'ask_user', args: { questions: request.questions } }),
    ];
  }
  ops.push({ op: 'status', state: 'working', message: statusMessage(task, calls) });
  message.parts = [{ text }];
  if (activated) {
    message.extensions = [HITL_URI];
    message.metadata = { [HITL_URI]: request };
  }
  pending.set(task.id, { request, visible, options: b.options });
  ops.push({ op: 'status', state: 'input-required', message });
  return ops;
}

/** kagent's `get_hitl_payload`: only with the URI in extensions[] and a string `type`. */
function hitlPayload(message: StoredMessage): JsonObject | undefined {
  if (!(message.extensions ?? []).includes(HITL_URI)) return undefined;
  const payload = message.metadata?.[HITL_URI];
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) return undefined;
  const record = payload as JsonObject;
  return typeof record.type === 'string' ? record : undefined;
}

export type ResumeOutcome = { ops: Op[] } | { refuse: string; onInvalid: 'rpc-error' | 'failed' };

/** A reply to a paused task: validated against the stored request, then the approved tools run. */
export function kagentResume(
  task: StoredTask,
  message: StoredMessage,
  pause: PendingPause,
  ledger: KagentLedger,
): ResumeOutcome {
  const onInvalid = pause.options.onInvalid ?? 'rpc-error';
  const payload = hitlPayload(message);
  if (
    payload === undefined ||
    !['tool_approval_response', 'ask_user_response'].includes(String(payload.type))
  ) {
    // Ordinary text: the task resumes, and the decision never reaches the paused tools.
    const text = message.parts.map((p) => ('text' in p ? p.text : '')).join('');
    ledger.plain.push({ taskId: task.id, text });
    return { ops: finish(task, [], 'No decision was received; nothing ran.') };
  }
  const refuse = (reason: string): ResumeOutcome => {
    ledger.refused.push({ taskId: task.id, reason });
    return { refuse: reason, onInvalid };
  };
  if (pause.request.type === 'tool_approval_request') {
    const parsed = toolApprovalResponse.safeParse(payload);
    if (!parsed.success) return refuse('Tool approval request requires a tool approval response');
    const ids = pause.visible.map((t) => t.id);
    const byId = new Map(parsed.data.approvals.map((a) => [a.id, a]));
    if (byId.size !== parsed.data.approvals.length) {
      return refuse('Tool approval response contains duplicate ids');
    }
    const missing = ids.filter((id) => !byId.has(id));
    if (missing.length > 0)
      return refuse(`Tool approval response is missing ids: ${missing.sort().join(', ')}`);
    const unknown = [...byId.keys()].filter((id) => !ids.includes(id));
    if (unknown.length > 0) {
      return refuse(`Tool approval response contains unknown ids: ${unknown.sort().join(', ')}`);
    }
    return { ops: runTools(task, pause, byId, ledger) };
  }
  const parsed = askUserResponse.safeParse(payload);
  const request = pause.request;
  const nested = request.nested !== undefined;
  const expectedId = nested ? pause.visible[0]?.id : String(request.id);
  if (!parsed.success || parsed.data.id !== expectedId) {
    return refuse(
      nested
        ? 'Nested ask_user response has invalid correlation'
        : 'ask_user response has invalid correlation',
    );
  }
  const answers = parsed.data.answers ?? [];
  if (answers.length === 0) return refuse('ask_user response contains no answers');
  const questions = Array.isArray(request.questions) ? request.questions : [];
  if (!nested && answers.length !== questions.length)
    return refuse('ask_user response must answer every question');
  const lists = answers.map((a) => a.answer ?? []);
  ledger.answers.push({ taskId: task.id, id: parsed.data.id, answers: lists });
  const result = questions.map((q, i) => ({ question: (q as JsonObject).question, answer: lists[i] ?? [] }));
  const steps = [
    confirmationResponse(String(request.id), { confirmed: true }),
    dataPart('function_response', {
      id: 'ask-call',
      name: 'ask_user',
      response: { result: JSON.stringify(result) },
    }),
  ];
  return { ops: finish(task, steps, `Thanks: ${lists.map((l) => l.join(', ')).join('; ')}`) };
}

function confirmationResponse(id: string, confirmation: JsonObject): StoredPart {
  return dataPart('function_response', {
    id,
    name: 'adk_request_confirmation',
    response: { response: JSON.stringify(confirmation) },
  });
}

function runTools(
  task: StoredTask,
  pause: PendingPause,
  byId: Map<string, z.infer<typeof approval>>,
  ledger: KagentLedger,
): Op[] {
  const steps: StoredPart[] = [];
  const said: string[] = [];
  const subagent = pause.options.subagent?.name;
  for (const tool of pause.visible) {
    const decision = byId.get(tool.id);
    if (decision === undefined) continue;
    steps.push(confirmationResponse(tool.id, { confirmed: decision.approved }));
    if (decision.approved) {
      ledger.ran.push({
        taskId: task.id,
        id: tool.id,
        callId: tool.call_id,
        name: tool.name,
        args: tool.args,
        ...(subagent === undefined ? {} : { subagent }),
      });
      const response = pause.options.results?.[tool.name] ?? { result: `${tool.name} done` };
      steps.push(dataPart('function_response', { id: tool.call_id, name: tool.name, response }));
      said.push(`${tool.name} ran`);
    } else {
      const reason = decision.rejection_reason ?? undefined;
      ledger.denied.push({ taskId: task.id, id: tool.id, name: tool.name, ...(reason ? { reason } : {}) });
      // kagent's before_tool_callback: what the model is told instead of the tool's result.
      const result = reason
        ? `Tool call was rejected by user. Reason: ${reason}`
        : 'Tool call was rejected by user.';
      steps.push(dataPart('function_response', { id: tool.call_id, name: tool.name, response: { result } }));
      said.push(`${tool.name} was not run`);
    }
  }
  return finish(task, steps, `${said.join('; ')}.`);
}

/** The resumed run: tool-step parts in a working status, the answer artifact, completed. */
function finish(task: StoredTask, steps: StoredPart[], answer: string): Op[] {
  const ops: Op[] = [{ op: 'snapshot' }, { op: 'status', state: 'working' }];
  if (steps.length > 0) ops.push({ op: 'status', state: 'working', message: statusMessage(task, steps) });
  ops.push({ op: 'chunk', artifactId: 'answer', parts: [{ text: answer }], append: false, lastChunk: true });
  ops.push({ op: 'status', state: 'completed' });
  return ops;
}

/** kagent's `hitl_activated`: the exact URI in the comma-separated A2A-Extensions header. */
export function hitlActivated(header: string | string[] | undefined): boolean {
  const values = Array.isArray(header) ? header : header === undefined ? [] : [header];
  return values.some((v) => v.split(',').some((item) => item.trim() === HITL_URI));
}
