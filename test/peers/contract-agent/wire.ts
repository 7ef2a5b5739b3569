/**
 * Wire encoding for the contract agent: a small version-neutral task model, and the exact JSON
 * that A2A 1.0 (ProtoJSON) and 0.3 (kind-tagged JSON) put on the wire for it.
 *
 * Written from the A2A specification (the 1.0 proto and the 0.3 JSON schema, as condensed in
 * docs/reference/a2a-wire.md), not from src/, so the agent stays an independent peer: a bug in
 * the client's codec cannot hide behind the same bug here.
 */

export type WireVersion = '1.0' | '0.3';

export type TaskState =
  | 'submitted'
  | 'working'
  | 'input-required'
  | 'auth-required'
  | 'completed'
  | 'canceled'
  | 'failed'
  | 'rejected'
  | 'unknown';

export type JsonObject = Record<string, unknown>;

/** A text or data part; the key present tells them apart, as in the 1.0 oneof. */
export type StoredPart = { text: string; metadata?: JsonObject } | { data: unknown; metadata?: JsonObject };

export interface StoredMessage {
  messageId: string;
  role: 'user' | 'agent';
  parts: StoredPart[];
  contextId?: string;
  taskId?: string;
  /** Extension URIs the message speaks (kagent's HITL payload needs its URI here). */
  extensions?: string[];
  metadata?: JsonObject;
}

export interface StoredStatus {
  state: TaskState;
  message?: StoredMessage;
  timestamp?: string;
}

export interface StoredArtifact {
  artifactId: string;
  name?: string;
  parts: StoredPart[];
}

export interface StoredTask {
  id: string;
  contextId: string;
  status: StoredStatus;
  history: StoredMessage[];
  artifacts: StoredArtifact[];
  metadata?: JsonObject;
}

/** One stream event before encoding. */
export type AgentEvent =
  | { kind: 'task'; task: StoredTask }
  | { kind: 'message'; message: StoredMessage }
  | { kind: 'status'; taskId: string; contextId: string; status: StoredStatus }
  | {
      kind: 'artifact';
      taskId: string;
      contextId: string;
      artifact: StoredArtifact;
      append: boolean;
      lastChunk: boolean;
    };

export interface EncodeOptions {
  /** Leave out every task id and contextId: the noIds() misbehaviour. */
  omitIds?: boolean;
  /** undefined = all history, 0 = none, n = the n most recent messages. */
  historyLength?: number;
  /** ListTasks leaves artifacts out unless asked (reference §2.2). */
  includeArtifacts?: boolean;
}

export type JsonRpcId = string | number | null;

export interface RpcErrorObject {
  code: number;
  message: string;
  data?: unknown;
}

export const TERMINAL_STATES: ReadonlySet<TaskState> = new Set([
  'completed',
  'canceled',
  'failed',
  'rejected',
]);

const STATE_10: Record<TaskState, string> = {
  submitted: 'TASK_STATE_SUBMITTED',
  working: 'TASK_STATE_WORKING',
  'input-required': 'TASK_STATE_INPUT_REQUIRED',
  'auth-required': 'TASK_STATE_AUTH_REQUIRED',
  completed: 'TASK_STATE_COMPLETED',
  canceled: 'TASK_STATE_CANCELED',
  failed: 'TASK_STATE_FAILED',
  rejected: 'TASK_STATE_REJECTED',
  unknown: 'TASK_STATE_UNSPECIFIED',
};

export function encodeState(v: WireVersion, state: TaskState): string {
  return v === '1.0' ? STATE_10[state] : state;
}

/** Accepts either spelling, so ListTasks' status filter works whatever the client sends. */
export function decodeState(raw: unknown): TaskState | undefined {
  if (typeof raw !== 'string') return undefined;
  for (const [state, name] of Object.entries(STATE_10)) {
    if (raw === name || raw === state) return state as TaskState;
  }
  return undefined;
}

export function isRecord(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function withMetadata(out: JsonObject, metadata: JsonObject | undefined): JsonObject {
  if (metadata !== undefined) out.metadata = metadata;
  return out;
}

export function encodePart(v: WireVersion, p: StoredPart): JsonObject {
  if ('text' in p) {
    return withMetadata(v === '1.0' ? { text: p.text } : { kind: 'text', text: p.text }, p.metadata);
  }
  return withMetadata(v === '1.0' ? { data: p.data } : { kind: 'data', data: p.data }, p.metadata);
}

export function encodeMessage(v: WireVersion, m: StoredMessage, o: EncodeOptions = {}): JsonObject {
  const out: JsonObject = v === '0.3' ? { kind: 'message' } : {};
  out.messageId = m.messageId;
  out.role = v === '1.0' ? (m.role === 'user' ? 'ROLE_USER' : 'ROLE_AGENT') : m.role;
  out.parts = m.parts.map((p) => encodePart(v, p));
  if (!o.omitIds) {
    if (m.contextId !== undefined) out.contextId = m.contextId;
    if (m.taskId !== undefined) out.taskId = m.taskId;
  }
  if (m.extensions !== undefined && m.extensions.length > 0) out.extensions = m.extensions;
  return withMetadata(out, m.metadata);
}

export function encodeStatus(v: WireVersion, s: StoredStatus, o: EncodeOptions = {}): JsonObject {
  const out: JsonObject = { state: encodeState(v, s.state) };
  if (s.message !== undefined) out.message = encodeMessage(v, s.message, o);
  if (s.timestamp !== undefined) out.timestamp = s.timestamp;
  return out;
}

export function encodeArtifact(v: WireVersion, a: StoredArtifact): JsonObject {
  const out: JsonObject = { artifactId: a.artifactId };
  if (a.name !== undefined) out.name = a.name;
  out.parts = a.parts.map((p) => encodePart(v, p));
  return out;
}

/** A bare Task: GetTask/CancelTask results in both versions, and 0.3's task stream event. */
export function encodeTask(v: WireVersion, t: StoredTask, o: EncodeOptions = {}): JsonObject {
  const out: JsonObject = v === '0.3' ? { kind: 'task' } : {};
  if (!o.omitIds) {
    out.id = t.id;
    out.contextId = t.contextId;
  }
  out.status = encodeStatus(v, t.status, o);
  // ProtoJSON drops empty repeated fields; 0.3 servers do the same in practice.
  if (o.includeArtifacts !== false && t.artifacts.length > 0) {
    out.artifacts = t.artifacts.map((a) => encodeArtifact(v, a));
  }
  const history = limitHistory(t.history, o.historyLength);
  if (history.length > 0) out.history = history.map((m) => encodeMessage(v, m, o));
  return withMetadata(out, t.metadata);
}

function limitHistory(history: StoredMessage[], historyLength: number | undefined): StoredMessage[] {
  if (historyLength === undefined) return history;
  if (historyLength <= 0) return [];
  return history.slice(-historyLength);
}

/** The `result` of one SSE event: 1.0 wraps in a one-key StreamResponse, 0.3 tags with `kind`. */
export function encodeStreamResult(v: WireVersion, ev: AgentEvent, o: EncodeOptions = {}): JsonObject {
  switch (ev.kind) {
    case 'task': {
      const task = encodeTask(v, ev.task, o);
      return v === '1.0' ? { task } : task;
    }
    case 'message': {
      const message = encodeMessage(v, ev.message, o);
      return v === '1.0' ? { message } : message;
    }
    case 'status': {
      const body: JsonObject = v === '0.3' ? { kind: 'status-update' } : {};
      if (!o.omitIds) {
        body.taskId = ev.taskId;
        body.contextId = ev.contextId;
      }
      body.status = encodeStatus(v, ev.status, o);
      if (v === '1.0') return { statusUpdate: body };
      // 0.3 `final` follows the JS compat layer seen on the wire: true only on terminal states.
      body.final = TERMINAL_STATES.has(ev.status.state);
      return body;
    }
    case 'artifact': {
      const body: JsonObject = v === '0.3' ? { kind: 'artifact-update' } : {};
      if (!o.omitIds) {
        body.taskId = ev.taskId;
        body.contextId = ev.contextId;
      }
      body.artifact = encodeArtifact(v, ev.artifact);
      // Both versions leave false flags out (ProtoJSON defaults; the JS 0.3 compat layer too).
      if (ev.append) body.append = true;
      if (ev.lastChunk) body.lastChunk = true;
      return v === '1.0' ? { artifactUpdate: body } : body;
    }
  }
}

export function resultEnvelope(id: JsonRpcId, result: unknown): JsonObject {
  return { jsonrpc: '2.0', id, result };
}

export function errorEnvelope(id: JsonRpcId, error: RpcErrorObject): JsonObject {
  return { jsonrpc: '2.0', id, error };
}

const DEFAULT_MESSAGES: Record<number, string> = {
  [-32700]: 'Invalid JSON payload',
  [-32600]: 'Request payload validation error',
  [-32601]: 'Method not found',
  [-32602]: 'Invalid parameters',
  [-32603]: 'Internal error',
  [-32001]: 'Task not found',
  [-32002]: 'Task cannot be canceled',
  [-32003]: 'Push Notification is not supported',
  [-32004]: 'This operation is not supported',
  [-32005]: 'Incompatible content types',
  [-32006]: 'Invalid agent response',
  [-32007]: 'Extended agent card is not configured',
  [-32008]: 'Extension support is required',
  [-32009]: 'Version is not supported',
  [-31403]: 'Forbidden',
};

const REASONS: Record<number, string> = {
  [-32602]: 'INVALID_PARAMS',
  [-32001]: 'TASK_NOT_FOUND',
  [-32002]: 'TASK_NOT_CANCELABLE',
  [-32003]: 'PUSH_NOTIFICATION_NOT_SUPPORTED',
  [-32004]: 'UNSUPPORTED_OPERATION',
  [-32005]: 'CONTENT_TYPE_NOT_SUPPORTED',
  [-32006]: 'INVALID_AGENT_RESPONSE',
  [-32007]: 'EXTENDED_AGENT_CARD_NOT_CONFIGURED',
  [-32008]: 'EXTENSION_SUPPORT_REQUIRED',
  [-32009]: 'VERSION_NOT_SUPPORTED',
};

/**
 * A JSON-RPC error object as each version sends it: 1.0 adds a google.rpc.ErrorInfo for A2A codes
 * (reference §6), 0.3 (as served by the JS compat layer) sends no data. `data` overrides both.
 */
export function rpcErrorObject(
  v: WireVersion,
  code: number,
  message?: string,
  data?: unknown,
): RpcErrorObject {
  const out: RpcErrorObject = { code, message: message ?? DEFAULT_MESSAGES[code] ?? 'Error' };
  if (data !== undefined) {
    out.data = data;
    return out;
  }
  const reason = REASONS[code];
  if (v === '1.0' && reason !== undefined) {
    out.data = [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason, domain: 'a2a-protocol.org' }];
  }
  return out;
}

function decodePart(raw: unknown): StoredPart | undefined {
  if (!isRecord(raw)) return undefined;
  const metadata = isRecord(raw.metadata) ? raw.metadata : undefined;
  if (typeof raw.text === 'string') return metadata ? { text: raw.text, metadata } : { text: raw.text };
  if ('data' in raw) return metadata ? { data: raw.data, metadata } : { data: raw.data };
  // File parts are dropped: the broker never sends them (contract, "What Agent Kourier sends").
  return undefined;
}

/**
 * Reads a Message of either version. Lenient on purpose: the agent records what it was sent and
 * tests assert on the recorded body, so only what the agent needs to work is required.
 */
export function decodeMessage(raw: unknown): StoredMessage | undefined {
  if (!isRecord(raw) || typeof raw.messageId !== 'string' || raw.messageId === '') return undefined;
  const parts = Array.isArray(raw.parts) ? raw.parts.map(decodePart) : [];
  const m: StoredMessage = {
    messageId: raw.messageId,
    role: raw.role === 'agent' || raw.role === 'ROLE_AGENT' ? 'agent' : 'user',
    parts: parts.filter((p): p is StoredPart => p !== undefined),
  };
  if (typeof raw.contextId === 'string' && raw.contextId !== '') m.contextId = raw.contextId;
  if (typeof raw.taskId === 'string' && raw.taskId !== '') m.taskId = raw.taskId;
  if (Array.isArray(raw.extensions)) {
    m.extensions = raw.extensions.filter((e): e is string => typeof e === 'string');
  }
  if (isRecord(raw.metadata)) m.metadata = raw.metadata;
  return m;
}

export function textOf(m: StoredMessage | undefined): string {
  if (m === undefined) return '';
  return m.parts.map((p) => ('text' in p ? p.text : '')).join('');
}
