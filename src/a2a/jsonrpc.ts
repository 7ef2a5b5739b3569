import {
  AgentBusyError,
  type AgentCallError,
  AgentThrottledError,
  AgentUnavailableError,
  AnswerRejectedError,
  CredentialsRejectedError,
  IdentityRefusedError,
  MalformedResponseError,
  NotSentError,
  OutcomeUnknownError,
  RedirectRefusedError,
  RpcError,
  TaskNotFoundError,
} from '../core/agent/errors.js';
import { parseRetryAfter } from './retry-after.js';

/** Which kind of call failed decides what an error code means (the contract's Errors table). */
export type CallKind = 'send' | 'answer' | 'other';

export interface RpcErrorBody {
  code: number;
  message: string;
  data?: unknown;
}

export type RpcOutcome = { ok: true; result: unknown } | { ok: false; error: RpcErrorBody };

export function encodeRequest(id: string, method: string, params: unknown): string {
  return JSON.stringify({ jsonrpc: '2.0', id, method, params });
}

/**
 * Reads one JSON-RPC response envelope (a whole body, or one SSE event's data). Hand-checked
 * rather than through zod: it runs once per streamed chunk, and the payload inside is checked
 * by the wire codec anyway.
 */
export function decodeResponse(json: string, expectedId: string): RpcOutcome {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch (error) {
    throw new MalformedResponseError('the agent sent a response that is not JSON', { cause: error });
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new MalformedResponseError('the agent sent a JSON-RPC response that is not an object');
  }
  const envelope = value as { id?: unknown; result?: unknown; error?: unknown };
  const error = envelope.error;
  if (error !== undefined && error !== null) {
    const body = readErrorBody(error);
    // A JSON-RPC error may carry a null id when the server could not read ours; accept that.
    if (envelope.id !== null && envelope.id !== undefined && String(envelope.id) !== expectedId) {
      throw new MalformedResponseError('the agent answered with the id of another request');
    }
    return { ok: false, error: body };
  }
  if (String(envelope.id) !== expectedId) {
    throw new MalformedResponseError('the agent answered with the id of another request');
  }
  if (!('result' in envelope)) {
    throw new MalformedResponseError('the agent sent a JSON-RPC response with neither result nor error');
  }
  return { ok: true, result: envelope.result };
}

function readErrorBody(error: unknown): RpcErrorBody {
  if (typeof error !== 'object' || error === null) {
    throw new MalformedResponseError('the agent sent a JSON-RPC error that is not an object');
  }
  const { code, message, data } = error as { code?: unknown; message?: unknown; data?: unknown };
  if (typeof code !== 'number' || !Number.isInteger(code)) {
    throw new MalformedResponseError('the agent sent a JSON-RPC error without an integer code');
  }
  return { code, message: typeof message === 'string' ? message : '', data };
}

/** Maps a JSON-RPC error code to the contract's error for this kind of call. */
export function errorFromRpc(error: RpcErrorBody, kind: CallKind, retryAfterMs?: number): AgentCallError {
  const options = { peerMessage: error.message, ...(retryAfterMs === undefined ? {} : { retryAfterMs }) };
  switch (error.code) {
    case -31403:
      return new IdentityRefusedError(options);
    case -32001:
      return new TaskNotFoundError(options);
    case -32004:
      if (kind !== 'other') return new AgentBusyError(options);
      return new RpcError(error.code, options);
    case -32603:
      if (kind === 'answer') return new AnswerRejectedError(options);
      if (kind === 'send')
        return new OutcomeUnknownError('the agent failed internally (JSON-RPC -32603)', options);
      return new RpcError(error.code, options);
    default:
      if (kind === 'other') return new RpcError(error.code, options);
      // The agent refused the request itself (bad params, unknown method, version): not run.
      return new NotSentError(`the agent refused the message (JSON-RPC ${error.code})`, options);
  }
}

/**
 * Maps an HTTP status that is not 2xx. A JSON-RPC error in the body, when there is one, says
 * more than the status (the JS SDK sends -32603 with HTTP 500), except that 401/403 always
 * mean the credentials were rejected (E-1) and a 3xx is never followed (DT-5).
 */
export function errorFromStatus(
  status: number,
  headers: { location?: string; retryAfter?: string },
  kind: CallKind,
  rpcError: RpcErrorBody | undefined,
  nowMs: number,
): AgentCallError {
  const retryAfterMs = parseRetryAfter(headers.retryAfter, nowMs);
  const options = retryAfterMs === undefined ? {} : { retryAfterMs };
  if (status >= 300 && status < 400) return new RedirectRefusedError(status, headers.location);
  if (status === 401 || status === 403) return new CredentialsRejectedError(status, options);
  if (rpcError !== undefined) return errorFromRpc(rpcError, kind, retryAfterMs);
  if (status === 408 || status === 429) return new AgentThrottledError(status, options);
  if (status >= 400 && status < 500) {
    return new NotSentError(`the agent refused the call (HTTP ${status})`, options);
  }
  if (kind === 'other') return new AgentUnavailableError(status, options);
  return new OutcomeUnknownError(`the agent answered HTTP ${status}`, options);
}
