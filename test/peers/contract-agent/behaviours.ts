/**
 * What the contract agent does on its next JSON-RPC call. Each misbehaviour the agent contract
 * names has a builder here; a test enqueues them and the agent consumes one per call.
 */

import type { KagentBehaviour } from './kagent.js';
import type { JsonObject, RpcErrorObject, StoredPart, TaskState } from './wire.js';

export type EndState = 'completed' | 'failed' | 'rejected' | 'canceled' | 'input-required' | 'auth-required';

export interface AnswerOptions {
  /** Artifact 'answer' texts: the first replaces, the rest append. Default: the echo answer. */
  chunks?: string[];
  /** 'status-only' ends after the terminal status update, without a full Task (like the SDKs). */
  final?: 'task' | 'status-only';
  /** Default 'completed'. */
  state?: EndState;
  /** The status message's text: the question on input-required, the reason on failed. */
  statusText?: string;
  /** The status message's metadata (e.g. `{ code: 'rate_limit' }` for a failed task). */
  statusMetadata?: JsonObject;
  /** Force this contextId onto the task instead of the one the request carried. */
  contextId?: string;
  /** A pause between chunks, so a stream can be interrupted in the middle. */
  chunkDelayMs?: number;
}

/**
 * One step of a script. The `event` steps are version-neutral and act on the call's task (the one
 * the send created or the one named in params.id): the agent encodes them for its version and
 * updates its store, so GetTask agrees with what was streamed. The other steps are raw.
 */
export type Step =
  /** A full Task snapshot of the call's task, as stored now. */
  | { event: 'task' }
  /** A status update to that state; text/parts/metadata make up the status message. */
  | { event: TaskState; text?: string; parts?: StoredPart[]; metadata?: JsonObject }
  /** An artifact update (artifactId defaults to 'answer'). */
  | {
      event: 'chunk';
      text?: string;
      parts?: StoredPart[];
      artifactId?: string;
      append?: boolean;
      lastChunk?: boolean;
    }
  /** A Message from the agent, not tied to the task. */
  | { event: 'message'; text?: string; parts?: StoredPart[]; metadata?: JsonObject }
  /**
   * A raw JSON-RPC result, wrapped in the envelope with the request id; a function builds it
   * from the call's task (its ids), as the task is when the step is sent. The task's record is
   * left as it is: what the result says is on the wire only.
   */
  | { result: unknown | ((task: { id: string; contextId: string }) => unknown) }
  /** Bytes written verbatim. */
  | { raw: string }
  | { waitMs: number }
  /** An `event: error` SSE frame (a JSON body on unary methods). */
  | { error: RpcErrorObject };

export type ScriptEnd = 'close' | 'hang' | 'destroy';

/** What a transport-level misbehaviour's 200 claims to be: a JSON body or an SSE stream. */
export type BodyShape = 'json' | 'sse';

export type Behaviour =
  | { kind: 'answer'; options: AnswerOptions }
  | { kind: 'script'; steps: Step[]; end: ScriptEnd }
  | { kind: 'redirect'; location: string; status: number }
  | { kind: 'slow-headers'; ms: number; then?: Behaviour }
  | { kind: 'held'; until: Promise<unknown>; then?: Behaviour }
  | { kind: 'silent-stream' }
  | { kind: 'keep-alive-only'; intervalMs: number }
  | { kind: 'drop-after'; events: number }
  | { kind: 'drop-before-headers'; createTask: boolean }
  | { kind: 'bare-message'; text: string }
  | { kind: 'no-ids' }
  | { kind: 'new-context' }
  | { kind: 'http-status'; status: number; headers: Record<string, string>; body?: string }
  | { kind: 'rpc-error'; code: number; message?: string; data?: unknown; httpStatus: number }
  | { kind: 'malformed-sse'; afterEvents: number }
  | { kind: 'invalid-event'; afterEvents: number }
  | { kind: 'wrong-id' }
  | { kind: 'oversized-event'; bytes: number }
  | { kind: 'split-frames'; chunkSize: number }
  | { kind: 'trickle'; intervalMs: number; as: BodyShape; status: number }
  | { kind: 'stall'; as: BodyShape }
  | { kind: 'oversized-body'; bytes: number }
  /** kagent's HITL pauses (./kagent.ts); the reply that follows is validated the kagent way. */
  | KagentBehaviour;

export function answer(options: AnswerOptions = {}): Behaviour {
  return { kind: 'answer', options };
}

export function script(steps: Step[], end: ScriptEnd = 'close'): Behaviour {
  return { kind: 'script', steps, end };
}

export function redirect(location: string, status = 302): Behaviour {
  return { kind: 'redirect', location, status };
}

/** Waits before writing status and headers, then does `then` (default: the well-behaved answer). */
export function slowHeaders(ms: number, then?: Behaviour): Behaviour {
  return then === undefined ? { kind: 'slow-headers', ms } : { kind: 'slow-headers', ms, then };
}

/**
 * Holds the call, headers unwritten, until `until` settles, then does `then` (default: the
 * well-behaved answer, worked out only then): a test opens the window between a call's arrival
 * and its answer exactly when it wants (a CancelTask held while something else happens).
 */
export function held(until: Promise<unknown>, then?: Behaviour): Behaviour {
  return then === undefined ? { kind: 'held', until } : { kind: 'held', until, then };
}

/** 200 text/event-stream headers, then nothing until the agent is closed. */
export function silentStream(): Behaviour {
  return { kind: 'silent-stream' };
}

/** Headers, then only `: ping` comments, never an event. */
export function keepAliveOnly(intervalMs: number): Behaviour {
  return { kind: 'keep-alive-only', intervalMs };
}

/** The default answer stream, with the socket destroyed after n events. */
export function dropAfter(nEvents: number): Behaviour {
  return { kind: 'drop-after', events: nEvents };
}

/** Destroys the socket before any response. With createTask, a send first records its task, as an agent that crashed mid-turn would have. */
export function dropBeforeHeaders(opts: { createTask?: boolean } = {}): Behaviour {
  return { kind: 'drop-before-headers', createTask: opts.createTask ?? false };
}

/** The stream's only event is a Message: no task. */
export function bareMessage(text: string): Behaviour {
  return { kind: 'bare-message', text };
}

/** The default stream with every taskId/contextId (and Task id) left out. */
export function noIds(): Behaviour {
  return { kind: 'no-ids' };
}

/** The default answer, in a contextId different from the one the request carried. */
export function newContext(): Behaviour {
  return { kind: 'new-context' };
}

/** A plain HTTP answer; the body defaults to the status text. */
export function httpStatus(status: number, headers: Record<string, string> = {}, body?: string): Behaviour {
  return body === undefined
    ? { kind: 'http-status', status, headers }
    : { kind: 'http-status', status, headers, body };
}

/** A JSON-RPC error response, HTTP 200 application/json by default (as the SDKs do before a stream). */
export function rpcError(
  code: number,
  message?: string,
  opts: { data?: unknown; httpStatus?: number } = {},
): Behaviour {
  const b: Extract<Behaviour, { kind: 'rpc-error' }> = {
    kind: 'rpc-error',
    code,
    httpStatus: opts.httpStatus ?? 200,
  };
  if (message !== undefined) b.message = message;
  if (opts.data !== undefined) b.data = opts.data;
  return b;
}

/** After `afterEvents` good events, a `data:` line that is not JSON, then the stream ends. */
export function malformedSse(afterEvents = 0): Behaviour {
  return { kind: 'malformed-sse', afterEvents };
}

/** After `afterEvents` good events, a valid JSON-RPC response whose result is no A2A event (`{"foo":1}`). */
export function invalidEvent(afterEvents = 0): Behaviour {
  return { kind: 'invalid-event', afterEvents };
}

/** The default answer with every envelope id different from the request id. */
export function wrongId(): Behaviour {
  return { kind: 'wrong-id' };
}

/** The default stream with one extra artifact event whose data is larger than `bytes`. */
export function oversizedEvent(bytes: number): Behaviour {
  return { kind: 'oversized-event', bytes };
}

/** The default stream, CRLF-framed, JSON spread over several data: lines, keep-alive comments between events, written chunkSize bytes at a time. */
export function splitFrames(chunkSize: number): Behaviour {
  return { kind: 'split-frames', chunkSize };
}

/**
 * Headers (HTTP `status`, JSON or SSE), then the start of a body, then one more byte every
 * `intervalMs` for as long as the client listens: a body that never completes.
 */
export function trickle(intervalMs: number, as: BodyShape = 'json', status = 200): Behaviour {
  return { kind: 'trickle', intervalMs, as, status };
}

/** 200 headers (JSON or SSE) and the first byte of a body, then nothing until the client goes. */
export function stall(as: BodyShape = 'json'): Behaviour {
  return { kind: 'stall', as };
}

/** A well-formed JSON-RPC result body larger than `bytes` (for GetTask, CancelTask, ListTasks). */
export function oversizedBody(bytes: number): Behaviour {
  return { kind: 'oversized-body', bytes };
}
