import { KourierError } from '../../../core/errors.js';

/**
 * Failures of Slack Web API calls, one class per way the surface reacts. Callers branch on the
 * class or `slackError` (Slack's own error string, e.g. `message_not_in_streaming_state`), never
 * on `message`. No token or message text ever goes into these.
 */

/** Slack answered `ok: false` with an error string. */
export class SlackPlatformError extends KourierError {
  constructor(
    readonly method: string,
    readonly slackError: string,
  ) {
    super('slack_platform_error', `Slack refused ${method}: ${slackError}`);
  }
}

/** HTTP 429: wait `retryAfterMs`, then try again with the latest state. */
export class SlackRateLimitedError extends KourierError {
  constructor(
    readonly method: string,
    readonly retryAfterMs: number,
  ) {
    super('slack_rate_limited', `Slack rate-limited ${method}; retry after ${retryAfterMs} ms`);
  }
}

/** The call did not get an answer from Slack (network, timeout, a 5xx): it may be retried. */
export class SlackUnavailableError extends KourierError {
  constructor(
    readonly method: string,
    options: { cause?: unknown; status?: number } = {},
  ) {
    super(
      'slack_unavailable',
      options.status === undefined
        ? `Slack did not answer ${method}`
        : `Slack answered ${method} with HTTP ${options.status}`,
      { cause: options.cause },
    );
  }
}

/** Slack's answer did not have the shape the method documents. */
export class SlackMalformedResponseError extends KourierError {
  constructor(readonly method: string) {
    super('slack_malformed_response', `Slack's answer to ${method} was not what the method documents`);
  }
}

/** A token was refused at start: the bot token by auth.test, the app token by Socket Mode. */
export class SlackAuthError extends KourierError {
  constructor(
    readonly slackError: string,
    readonly setting: 'SLACK_BOT_TOKEN' | 'SLACK_APP_TOKEN' = 'SLACK_BOT_TOKEN',
    options: { cause?: unknown } = {},
  ) {
    super('slack_auth_failed', `${setting} was refused by Slack (${slackError})`, options);
  }
}

/** stop() came while listen still waited for Slack (Socket Mode): listen ends with this. */
export class SlackStoppedError extends KourierError {
  constructor() {
    super('slack_stopped', 'the Slack connection was stopped before it connected');
  }
}

/** Slack's error string for a stream it ended itself: the message can only be edited now. */
export const STREAM_ENDED = 'message_not_in_streaming_state';

/** chat.update on a message that is still streaming: the stream must be stopped first. */
/** chat.appendStream on a stream a person stopped with the session's stop button. */
export const STOPPED_BY_USER = 'stopped_by_user';

export const STILL_STREAMING = 'streaming_state_conflict';

/** What a log line says of an error: its class and stable code, never its message. */
export function errorName(error: unknown): Record<string, unknown> {
  if (error instanceof KourierError) return { name: error.name, code: error.code };
  if (error instanceof Error) return { name: error.name };
  return { name: typeof error };
}
