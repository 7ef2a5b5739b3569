import type { OutgoingMessage, StreamEvent, Task, TaskPage, WireVersion } from '../../core/agent/model.js';

/** The JSON-RPC method names of one wire version. `list` is absent where the version has none. */
export interface MethodNames {
  sendStream: string;
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
  sendParams(message: OutgoingMessage, tenant: string | undefined): unknown;
  taskIdParams(taskId: string, tenant: string | undefined, historyLength?: number): unknown;
  listParams(query: ListQuery, tenant: string | undefined): unknown;
  decodeEvent(result: unknown): StreamEvent;
  decodeTask(result: unknown): Task;
  decodeTaskPage(result: unknown): TaskPage;
}
