import { KourierError } from '../../core/errors.js';

/**
 * Failures of the Teams surface, one class per way it reacts. No token, secret or message text
 * ever goes into these.
 */

/** Entra refused the app's credentials or scope, or could not be reached. */
export class TeamsTokenError extends KourierError {
  constructor(
    readonly status: number | undefined,
    readonly entraError: string,
  ) {
    super('teams_token_error', `Microsoft Entra did not issue the app a token: ${entraError}`);
  }
}

/** The app's certificate or its key cannot be used (unreadable, not RSA, or not a pair). */
export class TeamsCredentialError extends KourierError {
  constructor(problem: string) {
    super('teams_credential', `the Teams app's certificate credential: ${problem}`);
  }
}

/** The SDK asked for a kind of token the broker does not use (on-behalf-of, agentic). */
export class TeamsTokenKindError extends KourierError {
  constructor(readonly kind: string) {
    super('teams_token_kind', `the broker does not acquire ${kind} tokens for Teams`);
  }
}

/** Teams answered 429 (or 412, 502, 504): wait `retryAfterMs`, then try again. */
export class TeamsThrottledError extends KourierError {
  constructor(readonly retryAfterMs: number) {
    super('teams_throttled', `Teams asked to wait ${retryAfterMs} ms`);
  }
}

/** The conversation is not one the broker has an address for (it was removed, or never seen). */
export class TeamsConversationUnknownError extends KourierError {
  constructor() {
    super('teams_conversation_unknown', 'no address is stored for this Teams conversation');
  }
}

/** Microsoft Graph did not answer a membership question (an error status, or a body of another shape). */
export class GraphRefusedError extends KourierError {
  constructor(readonly status: number) {
    super('teams_graph_refused', `Microsoft Graph answered ${status}`);
  }
}
