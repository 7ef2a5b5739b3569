import { UnsupportedByVersionError } from '../../../core/agent/errors.js';
import {
  type OutgoingMessage,
  type Part,
  type Role,
  type StreamEvent,
  TASK_STATES,
  type Task,
  type TaskPage,
  type TaskState,
  type TextPart,
} from '../../../core/agent/model.js';
import type { WireCodec } from '../codec.js';
import {
  isObject,
  readArtifactUpdate,
  readStatusUpdate,
  type StatusReaders,
  textPart,
} from '../fast-events.js';
import { modelReaders } from '../to-model.js';
import { malformed } from '../zod-error.js';
import * as s from './schemas.js';

const KNOWN_STATES: ReadonlySet<string> = new Set(TASK_STATES);

/** The states a stream repeats are compared first, as at 1.0 (v1_0/codec.ts says why). */
function toState(value: string): TaskState {
  switch (value) {
    case 'working':
    case 'completed':
      return value;
    default:
      return KNOWN_STATES.has(value) ? (value as TaskState) : 'unknown';
  }
}

function toRole(value: string | undefined): Role {
  return value === 'user' ? 'user' : 'agent';
}

function toPart(p: s.WirePart): Part {
  const metadata = p.metadata === undefined ? {} : { metadata: p.metadata };
  switch (p.kind) {
    case 'text':
      return { kind: 'text', text: p.text, ...metadata };
    case 'data':
      return { kind: 'data', data: p.data, ...metadata };
    case 'file': {
      const file: Part = { kind: 'file', ...metadata };
      if (p.file.uri !== undefined) file.uri = p.file.uri;
      if (p.file.bytes !== undefined) file.bytes = p.file.bytes;
      if (p.file.mimeType !== undefined) file.mediaType = p.file.mimeType;
      if (p.file.name !== undefined) file.name = p.file.name;
      return file;
    }
  }
}

/** The fast path's text part (fast-events.ts): `kind: "text"` and a string `text`. */
function fastTextPart(p: unknown): TextPart | undefined {
  if (!isObject(p) || p.kind !== 'text' || typeof p.text !== 'string') return undefined;
  return textPart(p.text, p.metadata);
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

/** The fast path's status update (fast-events.ts): 0.3's string state and role, `kind`, `final`. */
const fastStatus: StatusReaders = {
  part: fastTextPart,
  state: (v) => (typeof v === 'string' ? toState(v) : undefined),
  role: (v) => (v === undefined || typeof v === 'string' ? toRole(v) : undefined),
  messageKind: (v) => v === undefined || v === 'message',
  final: true,
};

/**
 * The hot path (fast-events.ts): an artifact update of text parts, or a status update whose
 * message is all text, read by hand; undefined for anything else, which readEventBySchema reads.
 */
export function readFastEvent(result: unknown): StreamEvent | undefined {
  if (!isObject(result)) return undefined;
  if (result.kind === 'artifact-update') return readArtifactUpdate(result, fastTextPart);
  if (result.kind === 'status-update') return readStatusUpdate(result, fastStatus);
  return undefined;
}

/** A stream result through its zod schema: the model, or MalformedResponseError naming the flaw. */
export function readEventBySchema(result: unknown): StreamEvent {
  const parsed = s.streamResult.safeParse(result);
  if (!parsed.success) throw malformed('stream event', parsed.error);
  const r = parsed.data;
  switch (r.kind) {
    case 'task':
      return { kind: 'task', task: toTask(r) };
    case 'message':
      return { kind: 'message', message: toMessage(r) };
    case 'status-update': {
      const event: StreamEvent = {
        kind: 'status-update',
        taskId: r.taskId,
        contextId: r.contextId,
        status: toStatus(r.status),
      };
      if (r.final !== undefined) event.final = r.final;
      if (r.metadata !== undefined) event.metadata = r.metadata;
      return event;
    }
    case 'artifact-update': {
      const event: StreamEvent = {
        kind: 'artifact-update',
        taskId: r.taskId,
        contextId: r.contextId,
        artifact: toArtifact(r.artifact),
        append: r.append,
        lastChunk: r.lastChunk,
      };
      if (r.metadata !== undefined) event.metadata = r.metadata;
      return event;
    }
  }
}

export const v0_3: WireCodec = {
  version: '0.3',
  methods: {
    sendStream: 'message/stream',
    send: 'message/send',
    get: 'tasks/get',
    subscribe: 'tasks/resubscribe',
    cancel: 'tasks/cancel',
  },

  // No header: its absence is what means 0.3 to a server that speaks both.
  versionHeaders: () => ({}),

  // 0.3 named the header X-A2A-Extensions; servers that grew into 1.0 read A2A-Extensions.
  // Sending both costs nothing and reaches both.
  extensionHeaders(uris): Record<string, string> {
    if (uris.length === 0) return {};
    return { 'x-a2a-extensions': uris.join(', '), 'a2a-extensions': uris.join(', ') };
  },

  sendParams(msg: OutgoingMessage, _tenant, configuration) {
    const message: Record<string, unknown> = {
      kind: 'message',
      messageId: msg.messageId,
      role: 'user',
      parts: [{ kind: 'text', text: msg.text }],
    };
    if (msg.contextId !== undefined && msg.contextId !== '') message.contextId = msg.contextId;
    if (msg.taskId !== undefined && msg.taskId !== '') message.taskId = msg.taskId;
    if (msg.metadata !== undefined) message.metadata = msg.metadata;
    if (msg.extensions !== undefined && msg.extensions.length > 0) message.extensions = msg.extensions;
    // 0.3's polarity is the other way round, and its SDKs take an absent value as blocking:
    // it is always written out.
    if (configuration !== undefined)
      return { message, configuration: { blocking: !configuration.returnImmediately } };
    return { message };
  },

  taskIdParams(taskId, _tenant, historyLength) {
    return historyLength === undefined ? { id: taskId } : { id: taskId, historyLength };
  },

  listParams() {
    throw new UnsupportedByVersionError('ListTasks', '0.3');
  },

  decodeEvent(result: unknown): StreamEvent {
    return readFastEvent(result) ?? readEventBySchema(result);
  },

  decodeTask(result: unknown): Task {
    const parsed = s.task.safeParse(result);
    if (!parsed.success) throw malformed('task', parsed.error);
    return toTask(parsed.data);
  },

  decodeTaskPage(): TaskPage {
    throw new UnsupportedByVersionError('ListTasks', '0.3');
  },
};
