import { KourierError } from '../errors.js';

/**
 * One class per row of the agent contract's Errors table (E-*), plus the transport and card
 * failures of "Discovery and transport" (DT-*). The engine decides what to do by class; each
 * class's doc comment says what the contract expects of it.
 */

export interface PeerErrorOptions {
  cause?: unknown;
  peerMessage?: string;
  /** From a Retry-After header, already capped (see retry-after.ts). */
  retryAfterMs?: number;
}

/** Every failure of a call to an agent. */
export class AgentCallError extends KourierError {
  readonly retryAfterMs: number | undefined;
  constructor(code: string, message: string, options: PeerErrorOptions = {}) {
    super(code, message, options);
    this.retryAfterMs = options.retryAfterMs;
  }
}

/** E-1: HTTP 401 or 403 at any call. The turn fails without a retry. */
export class CredentialsRejectedError extends AgentCallError {
  constructor(
    readonly status: number,
    options: PeerErrorOptions = {},
  ) {
    super('credentials_rejected', `the agent rejected the credentials (HTTP ${status})`, options);
  }
}

/** E-2: JSON-RPC -31403. The identity is refused for this session; the turn fails. */
export class IdentityRefusedError extends AgentCallError {
  constructor(options: PeerErrorOptions = {}) {
    super('identity_refused', 'the agent refused the identity for this session (JSON-RPC -31403)', options);
  }
}

/** E-3: JSON-RPC -32004 to a send. Busy: the same message is sent again after a backoff. */
export class AgentBusyError extends AgentCallError {
  constructor(options: PeerErrorOptions = {}) {
    super('agent_busy', 'the agent is busy (JSON-RPC -32004 to a send)', options);
  }
}

/** Not in the contract's table, but a send the agent throttled (HTTP 408 or 429) was not run. */
export class AgentThrottledError extends AgentCallError {
  constructor(
    readonly status: number,
    options: PeerErrorOptions = {},
  ) {
    super('agent_throttled', `the agent throttled the call (HTTP ${status})`, options);
  }
}

/** E-4: JSON-RPC -32603 to an answer. The paused task is cancelled and the thread told. */
export class AnswerRejectedError extends AgentCallError {
  constructor(options: PeerErrorOptions = {}) {
    super('answer_rejected', 'the agent rejected the answer (JSON-RPC -32603)', options);
  }
}

/** E-5: JSON-RPC -32001. The session is gone; the next turn starts a new context. */
export class TaskNotFoundError extends AgentCallError {
  constructor(options: PeerErrorOptions = {}) {
    super('task_not_found', 'the agent does not know the task (JSON-RPC -32001)', options);
  }
}

/**
 * E-6: the agent refused the call before doing anything (HTTP 4xx other than 401/403/408/429,
 * a 3xx, or a JSON-RPC error that says the request itself was wrong). Retried, then failed.
 */
export class NotSentError extends AgentCallError {
  constructor(message: string, options: PeerErrorOptions & { code?: string } = {}) {
    super(options.code ?? 'not_sent', message, options);
  }
}

/**
 * A per-person identity exchanged at the identity provider (docs/identity.md) was refused there
 * (RFC 6749's error, as `invalid_grant`): nothing was sent to the agent, and nothing is sent with
 * weaker credentials. The turn fails; the thread is told what the provider said.
 */
export class IdentityExchangeRefusedError extends AgentCallError {
  constructor(
    /** The provider's error code, checked to be a short token (never its free text). */
    readonly providerError: string,
    /** The agent the identity was for (its AgentBackend's name), for the thread's notice. */
    readonly agent: string,
    options: PeerErrorOptions = {},
  ) {
    super(
      'identity_exchange_refused',
      `the identity provider refused the token exchange (${providerError})`,
      options,
    );
  }
}

/**
 * The identity provider did not answer a token exchange (unreachable, a 5xx, throttled, out of
 * time): nothing was sent to the agent. The turn waits and is sent once the provider answers.
 */
export class IdentityProviderUnavailableError extends NotSentError {
  constructor(message: string, options: PeerErrorOptions = {}) {
    super(`the identity provider did not answer the token exchange: ${message}`, {
      ...options,
      code: 'identity_provider_unavailable',
    });
  }
}

/**
 * A per-person identity by sign-in (docs/identity.md): the person has not signed in at the
 * identity provider yet, or their link there ended. Nothing was sent; the turn is held, the
 * person is given `url` to sign in, and the turn is sent with their token once they have.
 */
export class SignInRequiredError extends NotSentError {
  constructor(
    readonly url: string,
    /** The agent the sign-in is for (its AgentBackend's name). */
    readonly agent: string,
  ) {
    super('the person has not signed in at the identity provider', { code: 'sign_in_required' });
  }
}

/** DT-5: a 3xx is a failed call. The redirect is never followed, so credentials stay home. */
export class RedirectRefusedError extends NotSentError {
  constructor(
    readonly status: number,
    readonly location: string | undefined,
  ) {
    super(`the agent answered with a redirect (HTTP ${status}); redirects are never followed`, {
      code: 'redirect_refused',
    });
  }
}

/**
 * A JSON-RPC error the contract gives no row of its own (-32601 method not found, -32004 to
 * anything but a send, …). `rpcCode` says which.
 */
export class RpcError extends AgentCallError {
  constructor(
    readonly rpcCode: number,
    options: PeerErrorOptions = {},
  ) {
    super('rpc_error', `the agent answered with JSON-RPC error ${rpcCode}`, options);
  }

  /** -32601, or -32004 (unsupported operation) to anything but a send. */
  get isUnsupported(): boolean {
    return this.rpcCode === -32601 || this.rpcCode === -32004;
  }
}

/**
 * E-7: a send whose outcome is unknown: HTTP 5xx, or the connection was lost before any event
 * (`cause` is then a LostConnectionError). The agent may or may not have the message.
 */
export class OutcomeUnknownError extends AgentCallError {
  constructor(message: string, options: PeerErrorOptions = {}) {
    super('outcome_unknown', message, options);
  }
}

/**
 * headers-timeout: no response headers in time (DT-6). connection-dropped: the connection broke.
 * body-timeout: the agent stopped sending a body it had started (a trickle, a stall).
 * call-timeout: the whole call took longer than its bound, however steadily bytes came.
 */
export type LostConnectionReason = 'headers-timeout' | 'connection-dropped' | 'body-timeout' | 'call-timeout';

const LOST_CONNECTION_MESSAGES: Record<Exclude<LostConnectionReason, 'connection-dropped'>, string> = {
  'headers-timeout': 'the agent sent no response headers in time',
  'body-timeout': 'the agent stopped sending its answer before it was complete',
  'call-timeout': 'the agent took longer than the bound of this call to answer',
};

/**
 * DT-6 and dropped streams: the connection ended without an answer, or a stream ended in the
 * middle. `eventsSeen` says how far it got.
 */
export class LostConnectionError extends AgentCallError {
  constructor(
    readonly reason: LostConnectionReason,
    readonly eventsSeen: number,
    options: PeerErrorOptions = {},
  ) {
    super(
      'lost_connection',
      reason === 'connection-dropped'
        ? `the connection to the agent was lost after ${eventsSeen} event(s)`
        : LOST_CONNECTION_MESSAGES[reason],
      options,
    );
  }
}

/** no event for the idle limit; the stream was cut. Follow the task with GetTask. */
export class StreamIdleError extends AgentCallError {
  constructor(
    readonly idleMs: number,
    readonly eventsSeen: number,
  ) {
    super('stream_idle', `the agent sent no event for ${idleMs} ms; the stream was cut`);
  }
}

/** HTTP 5xx to anything but a send (where it is OutcomeUnknownError): retry later. */
export class AgentUnavailableError extends AgentCallError {
  constructor(
    readonly status: number,
    options: PeerErrorOptions = {},
  ) {
    super('agent_unavailable', `the agent answered HTTP ${status}`, options);
  }
}

/** The agent sent something that is not A2A: bad JSON, a wrong shape, a wrong id, bad SSE. */
export class MalformedResponseError extends AgentCallError {
  readonly eventsSeen: number;
  constructor(message: string, options: PeerErrorOptions & { eventsSeen?: number } = {}) {
    super('malformed_response', message, options);
    this.eventsSeen = options.eventsSeen ?? 0;
  }
}

export type SizeLimitKind = 'card' | 'event' | 'response';

/** A card, a stream event or a response body was larger than the configured bound. */
export class SizeLimitError extends AgentCallError {
  constructor(
    readonly limit: SizeLimitKind,
    readonly maxBytes: number,
  ) {
    super('size_limit', `the agent's ${limit} exceeds the limit of ${maxBytes} bytes`);
  }
}

/** DT-2: the card could not be fetched or read. Retried by the caller, then the turn fails. */
export class CardFetchError extends AgentCallError {
  constructor(message: string, options: PeerErrorOptions = {}) {
    super('card_fetch_failed', message, options);
  }
}

/** DT-1 */
export class NoJsonRpcInterfaceError extends AgentCallError {
  constructor() {
    super('no_jsonrpc_interface', 'agent card lists no JSON-RPC interface');
  }
}

/** DT-3 */
export class StreamingNotAdvertisedError extends AgentCallError {
  constructor() {
    super(
      'streaming_not_advertised',
      'agent card does not advertise capabilities.streaming: true (enable spec.polling on its AgentBackend to reach it by polling)',
    );
  }
}

/** DT-4 */
export class UnsupportedExtensionRequiredError extends AgentCallError {
  constructor(readonly uris: string[]) {
    super('unsupported_extension_required', 'agent requires an unsupported extension', {
      peerMessage: uris.join(', '),
    });
  }
}

/** The card is fine but a method it needs is missing in this wire version (ListTasks on 0.3). */
export class UnsupportedByVersionError extends AgentCallError {
  constructor(method: string, version: string) {
    super('unsupported_by_version', `${method} does not exist in A2A ${version}`);
  }
}
