import {
  AgentCallError,
  LostConnectionError,
  RedirectRefusedError,
  RpcError,
  TaskNotFoundError,
} from '../a2a/index.js';

/**
 * Turning what went wrong into the few words a rule's detail shows. These are for the agent's
 * authors, so what the agent said in an error is included (shortened); a token never is, as
 * errors never carry request headers.
 */

export type TransportRuleId = 'transport.no-redirect' | 'transport.headers-30s';

export function describeError(error: unknown): string {
  const redirect = findCause(error, RedirectRefusedError);
  if (redirect !== undefined) {
    return `HTTP ${redirect.status} redirect to ${redirect.location ?? '(no Location)'}`;
  }
  const lost = findCause(error, LostConnectionError);
  if (lost?.reason === 'headers-timeout') return 'no response headers in time';
  if (error instanceof RpcError) return `JSON-RPC error ${error.rpcCode}${said(error)}`;
  if (error instanceof AgentCallError) return `${error.message}${said(error)}`;
  if (error instanceof Error) return error.message;
  return String(error);
}

/** A failed outcome, with our own time bound named when it was what ended the call. */
export function describeFailure(failure: { error: unknown; timedOut: boolean }, timeoutMs: number): string {
  if (failure.timedOut) return `no answer within ${seconds(timeoutMs)} (--timeout)`;
  return describeError(failure.error);
}

/** The transport rule that explains a failed call, if one does (DT-5, DT-6). */
export function transportRuleOf(error: unknown): TransportRuleId | undefined {
  if (findCause(error, RedirectRefusedError) !== undefined) return 'transport.no-redirect';
  if (findCause(error, LostConnectionError)?.reason === 'headers-timeout') return 'transport.headers-30s';
  return undefined;
}

export function rpcCodeOf(error: unknown): number | undefined {
  if (error instanceof RpcError) return error.rpcCode;
  if (error instanceof TaskNotFoundError) return -32001;
  return undefined;
}

export function seconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`;
}

function said(error: AgentCallError): string {
  const peer = error.peerMessage?.replace(/\s+/g, ' ').trim();
  if (peer === undefined || peer === '') return '';
  return ` (the agent said: "${peer.length > 160 ? `${peer.slice(0, 160)}…` : peer}")`;
}

function findCause<T extends Error>(
  error: unknown,
  type: abstract new (...args: never[]) => T,
): T | undefined {
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (e instanceof type) return e;
  }
  return undefined;
}
