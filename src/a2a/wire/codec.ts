import type { OutgoingMessage, StreamEvent, Task, TaskPage, WireVersion } from '../../core/agent/model.js';

/** The JSON-RPC method names of one wire version. `list` is absent where the version has none. */
export interface MethodNames {
  sendStream: string;
  /** The non-streaming send (P-2: only for a backend that opted into polling). */
  send: string;
  get: string;
  subscribe: string;
  cancel: string;
  list?: string;
}

export interface ListQuery {
  contextId: string;
  pageSize: number;
  pageToken?: string;
  historyLength?: number;
}

/**
 * Everything that differs between A2A wire versions, behind one interface. Encoders build the
 * `params` of a request; decoders take an untrusted `result` and either return the internal
 * model or throw MalformedResponseError (never return something half-checked).
 */
export interface WireCodec {
  readonly version: WireVersion;
  readonly methods: MethodNames;
  /** The request headers that select this version (A2A-Version on 1.0, none on 0.3). */
  versionHeaders(): Record<string, string>;
  /** The header(s) that ask for extensions. */
  extensionHeaders(uris: readonly string[]): Record<string, string>;
  /**
   * A send's params. `returnImmediately` (the non-streaming send of P-2) asks the agent to answer
   * as soon as the task exists: 1.0's `returnImmediately: true`, 0.3's `blocking: false`.
   */
  sendParams(
    message: OutgoingMessage,
    tenant: string | undefined,
    configuration?: { returnImmediately: boolean },
  ): unknown;
  taskIdParams(taskId: string, tenant: string | undefined, historyLength?: number): unknown;
  listParams(query: ListQuery, tenant: string | undefined): unknown;
  /**
   * `result`: what JSON.parse made of one response, held by nothing else; the model may keep
   * pieces of it (the fast path keeps metadata records as they were parsed, fast-events.ts).
   */
  decodeEvent(result: unknown): StreamEvent;
  decodeTask(result: unknown): Task;
  decodeTaskPage(result: unknown): TaskPage;
}
