import { TaskState } from '@a2a-js/sdk';
import type express from 'express';

/**
 * a repeated messageId is the same turn. A broker that lost track of a send (a crash, a
 * dropped connection on a first turn) sends it again with the same messageId; the demo answers
 * with the task that messageId started, once settled, instead of running it twice. (The SDK's
 * handler would run it again, so answerRepeat sits in front of it.) TaskMemory is what the
 * executor records for that: each task's state and answer text, by the messageId that began it.
 */

/** What the demo remembers of a task, to answer a repeated messageId with it. */
interface Remembered {
  contextId: string;
  state: TaskState;
  artifacts: Map<string, string>;
}

const STATE_NAMES: Partial<Record<TaskState, string>> = {
  [TaskState.TASK_STATE_SUBMITTED]: 'TASK_STATE_SUBMITTED',
  [TaskState.TASK_STATE_WORKING]: 'TASK_STATE_WORKING',
  [TaskState.TASK_STATE_COMPLETED]: 'TASK_STATE_COMPLETED',
  [TaskState.TASK_STATE_FAILED]: 'TASK_STATE_FAILED',
  [TaskState.TASK_STATE_CANCELED]: 'TASK_STATE_CANCELED',
  [TaskState.TASK_STATE_INPUT_REQUIRED]: 'TASK_STATE_INPUT_REQUIRED',
};

const SETTLED = new Set([
  TaskState.TASK_STATE_COMPLETED,
  TaskState.TASK_STATE_FAILED,
  TaskState.TASK_STATE_CANCELED,
  TaskState.TASK_STATE_INPUT_REQUIRED,
]);

export class TaskMemory {
  readonly #tasks = new Map<string, Remembered>();
  readonly #byMessage = new Map<string, string>();

  /** A new task, begun by the user message `messageId`. */
  begin(messageId: string, taskId: string, contextId: string): void {
    this.#byMessage.set(messageId, taskId);
    this.#tasks.set(taskId, { contextId, state: TaskState.TASK_STATE_SUBMITTED, artifacts: new Map() });
  }

  state(taskId: string, state: TaskState): void {
    const remembered = this.#tasks.get(taskId);
    if (remembered !== undefined) remembered.state = state;
  }

  /** The context the task runs in, if the demo ran it: every event of the task names it. */
  contextOf(taskId: string): string | undefined {
    return this.#tasks.get(taskId)?.contextId;
  }

  /** The task's last state, if the demo ran it. */
  stateOf(taskId: string): TaskState | undefined {
    return this.#tasks.get(taskId)?.state;
  }

  chunk(taskId: string, artifactId: string, text: string): void {
    const artifacts = this.#tasks.get(taskId)?.artifacts;
    artifacts?.set(artifactId, (artifacts.get(artifactId) ?? '') + text);
  }

  /** The task a user messageId started, if it started one. */
  taskFor(messageId: string): { id: string; remembered: Remembered } | undefined {
    const id = this.#byMessage.get(messageId);
    const remembered = id === undefined ? undefined : this.#tasks.get(id);
    return id === undefined || remembered === undefined ? undefined : { id, remembered };
  }

  /** The task as A2A 1.0 JSON (ProtoJSON), for a repeated messageId. */
  static taskJson(id: string, r: Remembered): Record<string, unknown> {
    return {
      id,
      contextId: r.contextId,
      status: { state: STATE_NAMES[r.state] ?? 'TASK_STATE_WORKING', timestamp: new Date().toISOString() },
      artifacts: [...r.artifacts].map(([artifactId, value]) => ({
        artifactId,
        name: 'answer',
        parts: [{ text: value }],
      })),
    };
  }

  static settled(r: Remembered): boolean {
    return SETTLED.has(r.state);
  }
}

/** Answers a repeated first-turn SendStreamingMessage with its task (true), or leaves it (false). */
export async function answerRepeat(
  memory: TaskMemory,
  body: unknown,
  res: express.Response,
): Promise<boolean> {
  const request = body as {
    id?: unknown;
    method?: unknown;
    params?: { message?: { messageId?: unknown; taskId?: unknown } };
  };
  const message = request?.params?.message;
  if (request?.method !== 'SendStreamingMessage' || typeof message?.messageId !== 'string') return false;
  if (typeof message.taskId === 'string' && message.taskId !== '') return false;
  const found = memory.taskFor(message.messageId);
  if (found === undefined) return false;
  const until = Date.now() + 60_000;
  while (!TaskMemory.settled(found.remembered) && Date.now() < until && !res.destroyed) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const result = { task: TaskMemory.taskJson(found.id, found.remembered) };
  res.end(`data: ${JSON.stringify({ jsonrpc: '2.0', id: request.id ?? null, result })}\n\n`);
  return true;
}
