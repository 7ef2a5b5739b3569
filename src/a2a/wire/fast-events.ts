import type {
  Artifact,
  ArtifactUpdateEvent,
  Message,
  Part,
  Role,
  StatusUpdateEvent,
  TaskState,
  TaskStatus,
  TextPart,
} from '../../core/agent/model.js';

/**
 * The hot path of a stream, read by hand instead of through zod: an artifact update whose parts
 * are all text (how most agents stream an answer), and a status update whose message, if it has
 * one, is all text (how kagent's runtimes stream every token: a `working` update each, the
 * answer as one artifact after them). Nearly every event of a stream is one of the two, and
 * zod's generic walk costs about as much as the JSON.parse of the event itself (a status update
 * with a message, about one and a half times as much).
 *
 * The rule that keeps it safe: a fast reader either returns exactly the model the zod path
 * would build, or `undefined`, and then the caller runs the zod path, which makes every error.
 * So a fast reader may be stricter than the schema (decline anything unusual), never looser;
 * every field it returns is checked as the schema checks it. `fast-events.property.test.ts`
 * holds each version's fast reader to its zod path over generated, mutated events.
 *
 * Inputs are JSON.parse output (plain objects, arrays, strings, numbers, booleans, null).
 */

export type Json = Record<string, unknown>;

/** A JSON object (what z.object and z.record accept; arrays and null are not). */
export function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** z.string().optional() */
export function isOptionalString(value: unknown): value is string | undefined {
  return value === undefined || typeof value === 'string';
}

/** z.boolean().optional() */
function isOptionalBoolean(value: unknown): value is boolean | undefined {
  return value === undefined || typeof value === 'boolean';
}

/** Declines this event: the zod path will read it (and name what is wrong, if anything). */
const DECLINE = undefined;

/**
 * z.record(z.string(), z.unknown()).optional(): undefined, or the object as zod makes it (own
 * keys in order, values as they are, a `__proto__` key dropped); `false` if not a record. Only a
 * plain object is read here; anything more exotic is left to zod. Without a `__proto__` key that
 * is the object itself: JSON.parse made it for this event alone (what `decodeEvent` is given,
 * codec.ts), and nothing else holds it, so the copy zod makes would differ from it in nothing
 * but its cost (kagent sends six keys with every token).
 */
function readMetadata(value: unknown): Json | undefined | false {
  if (value === undefined) return undefined;
  if (!isObject(value) || Object.getPrototypeOf(value) !== Object.prototype) return false;
  if (!Object.hasOwn(value, '__proto__')) return value;
  const out: Json = {};
  for (const key of Object.keys(value)) {
    if (key !== '__proto__') out[key] = value[key];
  }
  return out;
}

/** z.array(z.string()).optional(): undefined, or a copy of the array; `false` if not one. */
function readStrings(value: unknown): string[] | undefined | false {
  if (value === undefined) return undefined;
  if (!Array.isArray(value)) return false;
  for (const item of value) if (typeof item !== 'string') return false;
  return value.slice();
}

/** The model of a text part, or undefined when `p` is not a valid text part of this version. */
export type TextPartReader = (p: unknown) => TextPart | undefined;

/** A text part with its metadata, as each version's `toPart` writes it. */
export function textPart(text: string, metadataValue: unknown): TextPart | undefined {
  const metadata = readMetadata(metadataValue);
  if (metadata === false) return DECLINE;
  return metadata === undefined ? { kind: 'text', text } : { kind: 'text', text, metadata };
}

/** z.array(part).optional().default([]) where every part is text: the models, or undefined to decline. */
function readTextParts(value: unknown, part: TextPartReader): Part[] | undefined {
  if (value === undefined) return [];
  if (!Array.isArray(value)) return DECLINE;
  const parts: Part[] = [];
  for (const p of value) {
    const read = part(p);
    if (read === undefined) return DECLINE;
    parts.push(read);
  }
  return parts;
}

function readArtifact(a: unknown, part: TextPartReader): Artifact | undefined {
  if (!isObject(a)) return DECLINE;
  const { artifactId, name, description, parts: wireParts } = a;
  if (!isOptionalString(artifactId) || !isOptionalString(name) || !isOptionalString(description)) {
    return DECLINE;
  }
  const parts = readTextParts(wireParts, part);
  if (parts === undefined) return DECLINE;
  const metadata = readMetadata(a.metadata);
  const extensions = readStrings(a.extensions);
  if (metadata === false || extensions === false) return DECLINE;
  // Fields in the order of to-model.ts, so the two paths build the same object.
  const out: Artifact = { artifactId: artifactId ?? '', parts };
  if (name !== undefined) out.name = name;
  if (description !== undefined) out.description = description;
  if (metadata !== undefined) out.metadata = metadata;
  if (extensions !== undefined) out.extensions = extensions;
  return out;
}

/**
 * The fields of an artifact update both versions share (taskId, contextId, artifact, append,
 * lastChunk, metadata); `part` reads the version's text part.
 */
export function readArtifactUpdate(u: Json, part: TextPartReader): ArtifactUpdateEvent | undefined {
  const { taskId, contextId, append, lastChunk } = u;
  if (
    !isOptionalString(taskId) ||
    !isOptionalString(contextId) ||
    !isOptionalBoolean(append) ||
    !isOptionalBoolean(lastChunk)
  ) {
    return DECLINE;
  }
  const artifact = readArtifact(u.artifact, part);
  if (artifact === undefined) return DECLINE;
  const metadata = readMetadata(u.metadata);
  if (metadata === false) return DECLINE;
  const event: ArtifactUpdateEvent = {
    kind: 'artifact-update',
    taskId: taskId ?? '',
    contextId: contextId ?? '',
    artifact,
    append: append ?? false,
    lastChunk: lastChunk ?? false,
  };
  if (metadata !== undefined) event.metadata = metadata;
  return event;
}

/**
 * How a version writes what a status update holds beyond the shared fields: its text part, its
 * state and role (the model's, or undefined where the schema would refuse the value), a
 * message's `kind` (0.3 only: absent or "message"), and whether the update carries `final`
 * (0.3 only).
 */
export interface StatusReaders {
  part: TextPartReader;
  state(value: unknown): TaskState | undefined;
  role(value: unknown): Role | undefined;
  messageKind(value: unknown): boolean;
  final: boolean;
}

function readMessage(m: unknown, r: StatusReaders): Message | undefined {
  if (!isObject(m) || !r.messageKind(m.kind)) return DECLINE;
  const { messageId, contextId, taskId } = m;
  if (!isOptionalString(messageId) || !isOptionalString(contextId) || !isOptionalString(taskId)) {
    return DECLINE;
  }
  const role = r.role(m.role);
  const parts = readTextParts(m.parts, r.part);
  if (role === undefined || parts === undefined) return DECLINE;
  const referenceTaskIds = readStrings(m.referenceTaskIds);
  const extensions = readStrings(m.extensions);
  const metadata = readMetadata(m.metadata);
  if (referenceTaskIds === false || extensions === false || metadata === false) return DECLINE;
  // Fields in the order of to-model.ts, so the two paths build the same object.
  const out: Message = { messageId: messageId ?? '', role, parts };
  if (contextId !== undefined) out.contextId = contextId;
  if (taskId !== undefined) out.taskId = taskId;
  if (referenceTaskIds !== undefined) out.referenceTaskIds = referenceTaskIds;
  if (extensions !== undefined) out.extensions = extensions;
  if (metadata !== undefined) out.metadata = metadata;
  return out;
}

function readStatus(st: unknown, r: StatusReaders): TaskStatus | undefined {
  if (!isObject(st)) return DECLINE;
  const state = r.state(st.state);
  const { timestamp } = st;
  if (state === undefined || !isOptionalString(timestamp)) return DECLINE;
  const out: TaskStatus = { state };
  if (st.message !== undefined) {
    const message = readMessage(st.message, r);
    if (message === undefined) return DECLINE;
    out.message = message;
  }
  if (timestamp !== undefined) out.timestamp = timestamp;
  return out;
}

/**
 * The fields of a status update both versions share (taskId, contextId, status, metadata), and
 * 0.3's `final` when `r.final` says the version has it.
 */
export function readStatusUpdate(u: Json, r: StatusReaders): StatusUpdateEvent | undefined {
  const { taskId, contextId } = u;
  const final = r.final ? u.final : undefined;
  if (!isOptionalString(taskId) || !isOptionalString(contextId) || !isOptionalBoolean(final)) {
    return DECLINE;
  }
  const status = readStatus(u.status, r);
  const metadata = readMetadata(u.metadata);
  if (status === undefined || metadata === false) return DECLINE;
  const event: StatusUpdateEvent = {
    kind: 'status-update',
    taskId: taskId ?? '',
    contextId: contextId ?? '',
    status,
  };
  if (final !== undefined) event.final = final;
  if (metadata !== undefined) event.metadata = metadata;
  return event;
}
