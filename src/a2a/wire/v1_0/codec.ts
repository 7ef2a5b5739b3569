import { MalformedResponseError } from '../../../core/agent/errors.js';
import type {
  OutgoingMessage,
  Part,
  Role,
  StreamEvent,
  Task,
  TaskPage,
  TaskState,
  TextPart,
} from '../../../core/agent/model.js';
import type { ListQuery, WireCodec } from '../codec.js';
import {
  isObject,
  isOptionalString,
  readArtifactUpdate,
  readStatusUpdate,
  type StatusReaders,
  textPart,
} from '../fast-events.js';
import { modelReaders } from '../to-model.js';
import { malformed } from '../zod-error.js';
import * as s from './schemas.js';

/** Proto enum names, and the numbers ProtoJSON also allows, mapped to the internal state. */
const STATES: Record<string, TaskState> = {
  TASK_STATE_SUBMITTED: 'submitted',
  TASK_STATE_WORKING: 'working',
  TASK_STATE_COMPLETED: 'completed',
  TASK_STATE_FAILED: 'failed',
  TASK_STATE_CANCELED: 'canceled',
  TASK_STATE_INPUT_REQUIRED: 'input-required',
  TASK_STATE_REJECTED: 'rejected',
  TASK_STATE_AUTH_REQUIRED: 'auth-required',
  1: 'submitted',
  2: 'working',
  3: 'completed',
  4: 'failed',
  5: 'canceled',
  6: 'input-required',
  7: 'rejected',
  8: 'auth-required',
};

/**
 * Own keys only: a state named `constructor` or `__proto__` is unknown, not what objects inherit.
 * The names a stream repeats are compared first: a state parsed from each event is a new string,
 * which a property lookup must first find in V8's string table (60–90 ns), where comparing it
 * with a constant takes about 10.
 */
function toState(value: string | number): TaskState {
  switch (value) {
    case 'TASK_STATE_WORKING':
      return 'working';
    case 'TASK_STATE_COMPLETED':
      return 'completed';
    default:
      return Object.hasOwn(STATES, value) ? (STATES[value] as TaskState) : 'unknown';
  }
}

function toRole(value: string | number | undefined): Role {
  return value === 'ROLE_USER' || value === 1 ? 'user' : 'agent';
}

function toPart(p: s.WirePart): Part {
  const metadata = p.metadata === undefined ? {} : { metadata: p.metadata };
  if (p.text !== undefined) return { kind: 'text', text: p.text, ...metadata };
  if (p.data !== undefined) return { kind: 'data', data: p.data, ...metadata };
  const file: Part = { kind: 'file', ...metadata };
  if (p.url !== undefined) file.uri = p.url;
  else if (p.raw !== undefined) file.bytes = p.raw;
  else throw new MalformedResponseError('the agent sent a part with none of text, raw, url or data');
  if (p.mediaType !== undefined) file.mediaType = p.mediaType;
  if (p.filename !== undefined) file.name = p.filename;
  return file;
}

/** The fast path's text part (fast-events.ts): `text` set, the other members as the schema checks them. */
function fastTextPart(p: unknown): TextPart | undefined {
  if (!isObject(p)) return undefined;
  const { text, raw, url, mediaType, filename } = p;
  if (
    typeof text !== 'string' ||
    !isOptionalString(raw) ||
    !isOptionalString(url) ||
    !isOptionalString(mediaType) ||
    !isOptionalString(filename)
  ) {
    return undefined;
  }
  return textPart(text, p.metadata);
}

const read = modelReaders<
  s.WirePart,
  s.WireTaskStatus['state'],
  s.WireMessage,
  s.WireTaskStatus,
  s.WireArtifact,
  s.WireTask
>({ part: toPart, state: toState, role: toRole });
const toMessage = read.message;
const toStatus = read.status;
const toArtifact = read.artifact;
const toTask = read.task;

/** z.number() as zod v4 checks it: finite (JSON.parse makes Infinity of 1e400). */
const isNumber = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

/** The fast path's status update (fast-events.ts): state and role as the schema's unions take them. */
const fastStatus: StatusReaders = {
  part: fastTextPart,
  state: (v) => (typeof v === 'string' || isNumber(v) ? toState(v) : undefined),
  role: (v) => (v === undefined || typeof v === 'string' || isNumber(v) ? toRole(v) : undefined),
  messageKind: () => true,
  final: false,
};

/**
 * The hot path (fast-events.ts): an artifact update of text parts, or a status update whose
 * message is all text, alone in its StreamResponse, read by hand; undefined for anything else,
 * which readEventBySchema reads.
 */
export function readFastEvent(result: unknown): StreamEvent | undefined {
  if (!isObject(result) || result.task !== undefined || result.message !== undefined) return undefined;
  const { statusUpdate, artifactUpdate } = result;
  if (statusUpdate === undefined && isObject(artifactUpdate)) {
    return readArtifactUpdate(artifactUpdate, fastTextPart);
  }
  if (artifactUpdate === undefined && isObject(statusUpdate))
    return readStatusUpdate(statusUpdate, fastStatus);
  return undefined;
}

/** A StreamResponse through its zod schema: the model, or MalformedResponseError naming the flaw. */
export function readEventBySchema(result: unknown): StreamEvent {
  const parsed = s.streamResponse.safeParse(result);
  if (!parsed.success) throw malformed('stream event', parsed.error);
  const r = parsed.data;
  const present =
    Number(r.task !== undefined) +
    Number(r.message !== undefined) +
    Number(r.statusUpdate !== undefined) +
    Number(r.artifactUpdate !== undefined);
  if (present !== 1) {
    throw new MalformedResponseError(
      `the agent sent a stream event with ${present} of task, message, statusUpdate, artifactUpdate (exactly one expected)`,
    );
  }
  if (r.task !== undefined) return { kind: 'task', task: toTask(r.task) };
  if (r.message !== undefined) return { kind: 'message', message: toMessage(r.message) };
  if (r.statusUpdate !== undefined) {
    const u = r.statusUpdate;
    const event: StreamEvent = {
      kind: 'status-update',
      taskId: u.taskId,
      contextId: u.contextId,
      status: toStatus(u.status),
    };
    if (u.metadata !== undefined) event.metadata = u.metadata;
    return event;
  }
  const u = r.artifactUpdate;
  if (u === undefined) throw new MalformedResponseError('unreachable: no stream event member');
  const event: StreamEvent = {
    kind: 'artifact-update',
    taskId: u.taskId,
    contextId: u.contextId,
    artifact: toArtifact(u.artifact),
    append: u.append,
    lastChunk: u.lastChunk,
  };
  if (u.metadata !== undefined) event.metadata = u.metadata;
  return event;
}

function withTenant(params: Record<string, unknown>, tenant: string | undefined): Record<string, unknown> {
  if (tenant !== undefined && tenant !== '') params.tenant = tenant;
  return params;
}

export const v1_0: WireCodec = {
  version: '1.0',
  methods: {
    sendStream: 'SendStreamingMessage',
    send: 'SendMessage',
    get: 'GetTask',
    subscribe: 'SubscribeToTask',
    cancel: 'CancelTask',
    list: 'ListTasks',
  },

  versionHeaders: () => ({ 'a2a-version': '1.0' }),

  extensionHeaders(uris): Record<string, string> {
    return uris.length === 0 ? {} : { 'a2a-extensions': uris.join(', ') };
  },

  sendParams(msg: OutgoingMessage, tenant, configuration) {
    const message: Record<string, unknown> = {
      messageId: msg.messageId,
      role: 'ROLE_USER',
      parts: [{ text: msg.text }],
    };
    if (msg.contextId !== undefined && msg.contextId !== '') message.contextId = msg.contextId;
    if (msg.taskId !== undefined && msg.taskId !== '') message.taskId = msg.taskId;
    if (msg.metadata !== undefined) message.metadata = msg.metadata;
    if (msg.extensions !== undefined && msg.extensions.length > 0) message.extensions = msg.extensions;
    const params: Record<string, unknown> = { message };
    if (configuration !== undefined)
      params.configuration = { returnImmediately: configuration.returnImmediately };
    return withTenant(params, tenant);
  },

  taskIdParams(taskId, tenant, historyLength) {
    const params: Record<string, unknown> = { id: taskId };
    if (historyLength !== undefined) params.historyLength = historyLength;
    return withTenant(params, tenant);
  },

  listParams(query: ListQuery, tenant) {
    const params: Record<string, unknown> = { contextId: query.contextId, pageSize: query.pageSize };
    if (query.pageToken !== undefined && query.pageToken !== '') params.pageToken = query.pageToken;
    if (query.historyLength !== undefined) params.historyLength = query.historyLength;
    return withTenant(params, tenant);
  },

  decodeEvent(result: unknown): StreamEvent {
    return readFastEvent(result) ?? readEventBySchema(result);
  },

  decodeTask(result: unknown): Task {
    const parsed = s.task.safeParse(result);
    if (!parsed.success) throw malformed('task', parsed.error);
    return toTask(parsed.data);
  },

  decodeTaskPage(result: unknown): TaskPage {
    const parsed = s.listTasksResponse.safeParse(result);
    if (!parsed.success) throw malformed('task list', parsed.error);
    return { tasks: parsed.data.tasks.map(toTask), nextPageToken: parsed.data.nextPageToken };
  },
};
