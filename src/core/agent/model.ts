/**
 * One internal model for A2A 1.0 and 0.3. The wire modules (`wire/v1_0`, `wire/v0_3`) translate
 * each version into these types at the edge, so nothing above `a2a/` knows which version an
 * agent speaks.
 *
 * Ids an agent failed to send are the empty string, not undefined: the contract treats an event
 * that names no task or context as an unknown outcome, and the engine must be able to see
 * that without the parser dropping the event. `namesTaskAndContext` is the one check.
 */

export type WireVersion = '1.0' | '0.3';

export const TASK_STATES = [
  'submitted',
  'working',
  'input-required',
  'auth-required',
  'completed',
  'canceled',
  'failed',
  'rejected',
  'unknown',
] as const;
export type TaskState = (typeof TASK_STATES)[number];

const TERMINAL: ReadonlySet<TaskState> = new Set(['completed', 'canceled', 'failed', 'rejected']);
const INTERRUPTED: ReadonlySet<TaskState> = new Set(['input-required', 'auth-required']);

/** completed, canceled, failed, rejected: the task will never change again. */
export function isTerminal(state: TaskState): boolean {
  return TERMINAL.has(state);
}

/** input-required, auth-required: the task is paused and waits for the client. */
export function isInterrupted(state: TaskState): boolean {
  return INTERRUPTED.has(state);
}

/** Terminal or interrupted: a stream has nothing more to say about this turn. */
export function isSettled(state: TaskState): boolean {
  return TERMINAL.has(state) || INTERRUPTED.has(state);
}

export type Role = 'user' | 'agent';
export type Metadata = Record<string, unknown>;

export interface TextPart {
  kind: 'text';
  text: string;
  metadata?: Metadata;
}

export interface DataPart {
  kind: 'data';
  /** Any JSON value in 1.0; an object in 0.3. */
  data: unknown;
  metadata?: Metadata;
}

export interface FilePart {
  kind: 'file';
  /** Exactly one of uri and bytes (base64) is set. */
  uri?: string;
  bytes?: string;
  mediaType?: string;
  name?: string;
  metadata?: Metadata;
}

export type Part = TextPart | DataPart | FilePart;

export interface Message {
  messageId: string;
  role: Role;
  parts: Part[];
  contextId?: string;
  taskId?: string;
  referenceTaskIds?: string[];
  extensions?: string[];
  metadata?: Metadata;
}

export interface TaskStatus {
  state: TaskState;
  message?: Message;
  /** ISO-8601 as the agent wrote it (0.3 agents often omit the zone). */
  timestamp?: string;
}

export interface Artifact {
  artifactId: string;
  name?: string;
  description?: string;
  parts: Part[];
  metadata?: Metadata;
  extensions?: string[];
}

export interface Task {
  id: string;
  contextId: string;
  status: TaskStatus;
  artifacts: Artifact[];
  history: Message[];
  metadata?: Metadata;
}

export interface TaskEvent {
  kind: 'task';
  task: Task;
}

export interface StatusUpdateEvent {
  kind: 'status-update';
  taskId: string;
  contextId: string;
  status: TaskStatus;
  /** 0.3 only, and unreliable there: never decide on it alone. */
  final?: boolean;
  metadata?: Metadata;
}

export interface ArtifactUpdateEvent {
  kind: 'artifact-update';
  taskId: string;
  contextId: string;
  artifact: Artifact;
  /** true: add these parts to the artifact with the same id; false: a new artifact or a replacement. */
  append: boolean;
  /** Carried for completeness; the contract says it is not read. */
  lastChunk: boolean;
  metadata?: Metadata;
}

export interface MessageEvent {
  kind: 'message';
  message: Message;
}

export type StreamEvent = TaskEvent | StatusUpdateEvent | ArtifactUpdateEvent | MessageEvent;

/** The task id and context id an event names ('' where it names none). */
export function eventIds(event: StreamEvent): { taskId: string; contextId: string } {
  switch (event.kind) {
    case 'task':
      return { taskId: event.task.id, contextId: event.task.contextId };
    case 'message':
      return { taskId: event.message.taskId ?? '', contextId: event.message.contextId ?? '' };
    default:
      return { taskId: event.taskId, contextId: event.contextId };
  }
}

/** The task an event names ('' when none); eventIds without the object, for every streamed event. */
export function taskIdOf(event: StreamEvent): string {
  switch (event.kind) {
    case 'task':
      return event.task.id;
    case 'message':
      return event.message.taskId ?? '';
    default:
      return event.taskId;
  }
}

/** The context an event names ('' when none). */
export function contextIdOf(event: StreamEvent): string {
  switch (event.kind) {
    case 'task':
      return event.task.contextId;
    case 'message':
      return event.message.contextId ?? '';
    default:
      return event.contextId;
  }
}

/** only task events that name both their task and its context tell the turn's outcome. */
export function namesTaskAndContext(event: StreamEvent): boolean {
  return event.kind !== 'message' && taskIdOf(event) !== '' && contextIdOf(event) !== '';
}

/** The state an event reports, if it reports one. */
export function eventState(event: StreamEvent): TaskState | undefined {
  if (event.kind === 'task') return event.task.status.state;
  if (event.kind === 'status-update') return event.status.state;
  return undefined;
}

/** What the broker sends: always one user message with exactly one text part (S-1). */
export interface OutgoingMessage {
  messageId: string;
  text: string;
  /** Empty on a thread's first turn (S-3). */
  contextId?: string;
  /** Only on an answer to a paused task (S-4). */
  taskId?: string;
  metadata?: Metadata;
  /** Extensions the message speaks (kagent's HITL reply must name its extension, Q-3). */
  extensions?: string[];
}

export interface TaskPage {
  tasks: Task[];
  nextPageToken: string;
}

export function textOf(parts: readonly Part[]): string {
  let out = '';
  for (const part of parts) if (part.kind === 'text') out += part.text;
  return out;
}
