import type { Artifact, Message, Part, Role, Task, TaskState, TaskStatus } from '../../core/agent/model.js';

/**
 * The fields a message, status, artifact and task share at 0.3 and at 1.0; only how a part, a
 * state and a role are written differs between the versions. Each codec hands its own readers
 * for those and gets the rest from here, so the two versions cannot drift apart on the rest.
 */
interface WireMessageLike<P> {
  messageId: string;
  role?: string | number | undefined;
  parts: P[];
  contextId?: string | undefined;
  taskId?: string | undefined;
  referenceTaskIds?: string[] | undefined;
  extensions?: string[] | undefined;
  metadata?: Record<string, unknown> | undefined;
}

interface WireStatusLike<M, S> {
  state: S;
  message?: M | undefined;
  timestamp?: string | undefined;
}

interface WireArtifactLike<P> {
  artifactId: string;
  parts: P[];
  name?: string | undefined;
  description?: string | undefined;
  metadata?: Record<string, unknown> | undefined;
  extensions?: string[] | undefined;
}

interface WireTaskLike<M, St, A> {
  id: string;
  contextId: string;
  status: St;
  artifacts: A[];
  history: M[];
  metadata?: Record<string, unknown> | undefined;
}

export interface VersionReaders<P, S> {
  part(p: P): Part;
  state(s: S): TaskState;
  role(r: string | number | undefined): Role;
}

export interface ModelReaders<M, St, A, T> {
  message(m: M): Message;
  status(st: St): TaskStatus;
  artifact(a: A): Artifact;
  task(t: T): Task;
}

export function modelReaders<
  P,
  S,
  M extends WireMessageLike<P>,
  St extends WireStatusLike<M, S>,
  A extends WireArtifactLike<P>,
  T extends WireTaskLike<M, St, A>,
>(v: VersionReaders<P, S>): ModelReaders<M, St, A, T> {
  const message = (m: M): Message => {
    const out: Message = { messageId: m.messageId, role: v.role(m.role), parts: m.parts.map(v.part) };
    if (m.contextId !== undefined) out.contextId = m.contextId;
    if (m.taskId !== undefined) out.taskId = m.taskId;
    if (m.referenceTaskIds !== undefined) out.referenceTaskIds = m.referenceTaskIds;
    if (m.extensions !== undefined) out.extensions = m.extensions;
    if (m.metadata !== undefined) out.metadata = m.metadata;
    return out;
  };
  const status = (st: St): TaskStatus => {
    const out: TaskStatus = { state: v.state(st.state) };
    if (st.message !== undefined) out.message = message(st.message);
    if (st.timestamp !== undefined) out.timestamp = st.timestamp;
    return out;
  };
  const artifact = (a: A): Artifact => {
    const out: Artifact = { artifactId: a.artifactId, parts: a.parts.map(v.part) };
    if (a.name !== undefined) out.name = a.name;
    if (a.description !== undefined) out.description = a.description;
    if (a.metadata !== undefined) out.metadata = a.metadata;
    if (a.extensions !== undefined) out.extensions = a.extensions;
    return out;
  };
  const task = (t: T): Task => {
    const out: Task = {
      id: t.id,
      contextId: t.contextId,
      status: status(t.status),
      artifacts: t.artifacts.map(artifact),
      history: t.history.map(message),
    };
    if (t.metadata !== undefined) out.metadata = t.metadata;
    return out;
  };
  return { message, status, artifact, task };
}
