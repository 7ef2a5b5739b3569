/**
 * The contract agent's task store and the unary methods on it: GetTask, CancelTask, ListTasks,
 * plus how a send opens or continues a task. Errors are thrown as RpcFailure and answered by the
 * agent as pre-stream JSON-RPC errors.
 */

import { randomUUID } from 'node:crypto';
import { agentMessage } from './ops.js';
import {
  decodeMessage,
  decodeState,
  type EncodeOptions,
  encodeTask,
  type JsonObject,
  type StoredTask,
  type TaskState,
  TERMINAL_STATES,
  type WireVersion,
} from './wire.js';

/** A JSON-RPC error raised while handling a call; answered as a pre-stream JSON body. */
export class RpcFailure extends Error {
  readonly code: number;
  constructor(code: number, message: string) {
    super(message);
    this.code = code;
  }
}

export function now(): string {
  return new Date().toISOString();
}

function stringParam(params: JsonObject, name: string): string {
  const v = params[name];
  if (typeof v !== 'string' || v === '') throw new RpcFailure(-32602, `${name} is required`);
  return v;
}

/** ProtoJSON allows int32 as a number or a numeric string. */
function intParam(params: JsonObject, name: string): number | undefined {
  const v = params[name];
  if (v === undefined || v === null) return undefined;
  const n = typeof v === 'string' && /^-?\d+$/.test(v) ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 0) {
    throw new RpcFailure(-32602, `${name} must be a non-negative integer`);
  }
  return n;
}

export interface SeedTask {
  id?: string;
  contextId?: string;
  state?: TaskState;
  history?: StoredTask['history'];
  artifacts?: StoredTask['artifacts'];
  /** Status message text, e.g. the question of an input-required task. */
  statusText?: string;
}

export class TaskStore {
  constructor(
    readonly version: WireVersion,
    readonly tasks: Map<string, StoredTask>,
  ) {}

  seed(t: SeedTask = {}): StoredTask {
    const task: StoredTask = {
      id: t.id ?? randomUUID(),
      contextId: t.contextId ?? randomUUID(),
      status: { state: t.state ?? 'working', timestamp: now() },
      history: t.history ?? [],
      artifacts: t.artifacts ?? [],
    };
    if (t.statusText !== undefined) task.status.message = agentMessage(task, [{ text: t.statusText }]);
    this.tasks.set(task.id, task);
    return task;
  }

  find(params: JsonObject): StoredTask {
    const id = stringParam(params, 'id');
    const task = this.tasks.get(id);
    if (task === undefined) throw new RpcFailure(-32001, `Task not found: ${id}`);
    return task;
  }

  /** Creates the task for a new message, or takes a follow-up into the task it names (reference §7). */
  open(params: JsonObject, forcedContext: string | undefined): StoredTask {
    const msg = decodeMessage(params.message);
    if (msg === undefined) throw new RpcFailure(-32602, 'message with a messageId is required');
    if (msg.taskId !== undefined) {
      const task = this.tasks.get(msg.taskId);
      if (task === undefined) throw new RpcFailure(-32001, `Task not found: ${msg.taskId}`);
      if (msg.contextId !== undefined && msg.contextId !== task.contextId) {
        throw new RpcFailure(-32602, 'contextId does not match the task');
      }
      if (TERMINAL_STATES.has(task.status.state)) {
        throw new RpcFailure(-32004, `Task ${task.id} is in a terminal state`);
      }
      if (forcedContext !== undefined) task.contextId = forcedContext;
      task.history.push({ ...msg, taskId: task.id, contextId: task.contextId });
      return task;
    }
    const id = randomUUID();
    const contextId = forcedContext ?? msg.contextId ?? randomUUID();
    const task: StoredTask = {
      id,
      contextId,
      status: { state: 'submitted', timestamp: now() },
      history: [{ ...msg, taskId: id, contextId }],
      artifacts: [],
    };
    this.tasks.set(id, task);
    return task;
  }

  get(params: JsonObject, o: EncodeOptions): unknown {
    const task = this.find(params);
    return encodeTask(this.version, task, { ...o, historyLength: intParam(params, 'historyLength') });
  }

  cancel(params: JsonObject, o: EncodeOptions): unknown {
    const task = this.find(params);
    // Cancel is idempotent (JS ≥1.0); other terminal states cannot be canceled (reference §7).
    if (task.status.state !== 'canceled') {
      if (TERMINAL_STATES.has(task.status.state)) {
        throw new RpcFailure(-32002, `Task ${task.id} cannot be canceled: it is ${task.status.state}`);
      }
      task.status = { state: 'canceled', timestamp: now() };
    }
    return encodeTask(this.version, task, o);
  }

  list(params: JsonObject, o: EncodeOptions): unknown {
    const pageSize = intParam(params, 'pageSize') ?? 50;
    if (pageSize < 1 || pageSize > 100) throw new RpcFailure(-32602, 'pageSize must be between 1 and 100');
    const token = params.pageToken;
    let offset = 0;
    if (typeof token === 'string' && token !== '') {
      const m = /^offset:(\d+)$/.exec(Buffer.from(token, 'base64url').toString('utf8'));
      if (m?.[1] === undefined) throw new RpcFailure(-32602, 'invalid pageToken');
      offset = Number(m[1]);
    }
    const contextId =
      typeof params.contextId === 'string' && params.contextId !== '' ? params.contextId : undefined;
    const status = decodeState(params.status);
    const after =
      typeof params.statusTimestampAfter === 'string' ? Date.parse(params.statusTimestampAfter) : Number.NaN;
    const matching = [...this.tasks.values()]
      .map((task, order) => ({ task, order, at: Date.parse(task.status.timestamp ?? '') || 0 }))
      .filter(({ task, at }) => {
        if (contextId !== undefined && task.contextId !== contextId) return false;
        if (status !== undefined && task.status.state !== status) return false;
        return Number.isNaN(after) || at >= after;
      })
      // Newest status first (reference §2.2); the later-stored task first when timestamps tie.
      .sort((a, b) => b.at - a.at || b.order - a.order);
    const page = matching.slice(offset, offset + pageSize);
    const next = offset + pageSize;
    const enc: EncodeOptions = {
      ...o,
      historyLength: intParam(params, 'historyLength'),
      includeArtifacts: params.includeArtifacts === true,
    };
    return {
      tasks: page.map(({ task }) => encodeTask(this.version, task, enc)),
      nextPageToken: next < matching.length ? Buffer.from(`offset:${next}`).toString('base64url') : '',
      pageSize,
      totalSize: matching.length,
    };
  }
}
