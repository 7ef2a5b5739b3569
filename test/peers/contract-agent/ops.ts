/**
 * A reply is planned as a list of ops before anything is written. Event ops act on the live task
 * store when they are written (not when planned), so a GetTask racing a slow or dropped stream
 * sees exactly what the stream had sent so far.
 */

import { randomUUID } from 'node:crypto';
import type { AnswerOptions, Behaviour, ScriptEnd, Step } from './behaviours.js';
import {
  type JsonObject,
  type RpcErrorObject,
  type StoredMessage,
  type StoredPart,
  type StoredTask,
  type TaskState,
  textOf,
} from './wire.js';

export type Op =
  | { op: 'snapshot' }
  | { op: 'status'; state: TaskState; message?: StoredMessage }
  | { op: 'chunk'; artifactId: string; parts: StoredPart[]; append: boolean; lastChunk: boolean }
  | { op: 'message'; message: StoredMessage }
  | { op: 'result'; result: unknown }
  | { op: 'raw'; text: string }
  | { op: 'wait'; ms: number }
  /** Wait until the task is terminal or paused (its work goes on elsewhere), then go on. */
  | { op: 'await-settled' }
  | { op: 'error'; error: RpcErrorObject };

export interface Plan {
  ops: Op[];
  end: ScriptEnd;
  omitIds?: boolean;
  wrongId?: boolean;
  /** Write the stream awkwardly, this many bytes at a time (splitFrames). */
  pieces?: number;
}

/** Ops that put one event (one SSE frame) on the wire; dropAfter(n) counts these. */
export function isEventOp(op: Op): boolean {
  return op.op !== 'raw' && op.op !== 'wait' && op.op !== 'await-settled';
}

export function agentMessage(
  task: { id: string; contextId: string } | undefined,
  parts: StoredPart[],
  metadata?: JsonObject,
): StoredMessage {
  const m: StoredMessage = { messageId: randomUUID(), role: 'agent', parts };
  if (task !== undefined) {
    m.taskId = task.id;
    m.contextId = task.contextId;
  }
  if (metadata !== undefined) m.metadata = metadata;
  return m;
}

/** The echo answer for a first turn; "got: …" for an answer to a question. */
export function defaultChunks(task: StoredTask): string[] {
  const users = task.history.filter((m) => m.role === 'user');
  const last = textOf(users.at(-1));
  return users.length > 1 ? [`got: ${last}`] : ['echo: ', last];
}

/** The well-behaved stream: [task,] [working,] artifact chunks, the end status, [full task]. */
export function answerOps(
  task: StoredTask,
  o: AnswerOptions,
  lead: { snapshot: boolean; working: boolean },
): Op[] {
  const ops: Op[] = [];
  if (lead.snapshot) ops.push({ op: 'snapshot' });
  if (lead.working) ops.push({ op: 'status', state: 'working' });
  const chunks = o.chunks ?? defaultChunks(task);
  chunks.forEach((text, i) => {
    if (i > 0 && o.chunkDelayMs !== undefined) ops.push({ op: 'wait', ms: o.chunkDelayMs });
    ops.push({
      op: 'chunk',
      artifactId: 'answer',
      parts: [{ text }],
      append: i > 0,
      lastChunk: i === chunks.length - 1,
    });
  });
  const end: Op = { op: 'status', state: o.state ?? 'completed' };
  if (o.statusText !== undefined || o.statusMetadata !== undefined) {
    end.message = agentMessage(
      task,
      o.statusText === undefined ? [] : [{ text: o.statusText }],
      o.statusMetadata,
    );
  }
  ops.push(end);
  if ((o.final ?? 'task') === 'task') ops.push({ op: 'snapshot' });
  return ops;
}

function stepParts(step: { text?: string; parts?: StoredPart[] }): StoredPart[] {
  if (step.parts !== undefined) return step.parts;
  return step.text === undefined ? [] : [{ text: step.text }];
}

export function stepsToOps(steps: Step[], task: StoredTask | undefined): Op[] {
  return steps.map((step): Op => {
    if ('waitMs' in step) return { op: 'wait', ms: step.waitMs };
    if ('raw' in step) return { op: 'raw', text: step.raw };
    if ('result' in step) return { op: 'result', result: step.result };
    if ('error' in step) return { op: 'error', error: step.error };
    switch (step.event) {
      case 'task':
        return { op: 'snapshot' };
      case 'chunk':
        return {
          op: 'chunk',
          artifactId: step.artifactId ?? 'answer',
          parts: stepParts(step),
          append: step.append ?? false,
          lastChunk: step.lastChunk ?? false,
        };
      case 'message': {
        // A Message belongs to the conversation, not to the task.
        const m = agentMessage(undefined, stepParts(step), step.metadata);
        if (task !== undefined) m.contextId = task.contextId;
        return { op: 'message', message: m };
      }
      default: {
        const op: Op = { op: 'status', state: step.event };
        if (step.text !== undefined || step.parts !== undefined || step.metadata !== undefined) {
          op.message = agentMessage(task, stepParts(step), step.metadata);
        }
        return op;
      }
    }
  });
}

function firstEvents(ops: Op[], n: number): Op[] {
  const out: Op[] = [];
  let events = 0;
  for (const op of ops) {
    if (events >= n) break;
    out.push(op);
    if (isEventOp(op)) events++;
  }
  return out;
}

/** Applies a stream-shaping misbehaviour to the well-behaved ops. */
export function shapeOps(base: Op[], b: Behaviour | undefined, oversized: () => unknown): Plan {
  switch (b?.kind) {
    case 'drop-after':
      return { ops: firstEvents(base, b.events), end: 'destroy' };
    case 'malformed-sse':
      return {
        ops: [...firstEvents(base, b.afterEvents), { op: 'raw', text: 'data: {"jsonrpc":"2.0",oops\n\n' }],
        end: 'close',
      };
    case 'invalid-event':
      return {
        ops: [...firstEvents(base, b.afterEvents), { op: 'result', result: { foo: 1 } }],
        end: 'close',
      };
    case 'oversized-event':
      return {
        ops: [...base.slice(0, 1), { op: 'result', result: oversized() }, ...base.slice(1)],
        end: 'close',
      };
    case 'no-ids':
      return { ops: base, end: 'close', omitIds: true };
    case 'wrong-id':
      return { ops: base, end: 'close', wrongId: true };
    case 'split-frames':
      return { ops: base, end: 'close', pieces: b.chunkSize };
    default:
      return { ops: base, end: 'close' };
  }
}
