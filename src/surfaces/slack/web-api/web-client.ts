import { webApi } from '@slack/bolt';
import type { Logger } from 'pino';
import {
  SlackMalformedResponseError,
  SlackPlatformError,
  SlackRateLimitedError,
  SlackUnavailableError,
} from './errors.js';
import { slackLogger } from './logger.js';

/**
 * How the surface's calls reach Slack: `@slack/web-api`'s WebClient, with options that leave
 * every decision to the caller. It neither retries (`retries: 0`) nor waits out a 429
 * (`rejectRateLimitedCalls`): the workspace's budget (budget.ts) decides when to try again, and
 * a retried edit then carries the latest text, not the refused one. Its failures come back as
 * our typed errors (mapError).
 *
 * One WebClient per token: a WebClient sends its own token in `Authorization: Bearer`, where a
 * token given with a call would also go into the form body. A workspace's token changes when it
 * is refreshed, so the clients kept are bounded; a client holds no connection of its own (its
 * fetch is the process's), so dropping one costs nothing but building it again.
 */

/** One Web API call: the answer of `ok: true` (its shape for the caller to check), or one of our typed errors. */
export interface WebApiCaller {
  /** The API base calls go to (for spans). */
  readonly apiUrl: string;
  call(method: string, args: Record<string, unknown>, token?: string): Promise<unknown>;
}

export interface WebClientCallerOptions {
  /** The API base, e.g. `https://slack.com/api/`. */
  apiUrl: string;
  /** The token of calls that bring none (single-workspace mode). */
  token: string | undefined;
  logger: Logger;
  /** The whole exchange, request to the end of the answer (ms). */
  timeoutMs?: number;
}

export const DEFAULT_TIMEOUT_MS = 15_000;
/** More workspaces than this calling at once only means building a client again now and then. */
const MAX_CLIENTS = 256;
/** What a method name may be: Slack's are dotted words (`chat.postMessage`). */
const METHOD_NAME = /^[A-Za-z][A-Za-z0-9_]*(\.[A-Za-z][A-Za-z0-9_]*)*$/;

export class WebClientCaller implements WebApiCaller {
  readonly apiUrl: string;
  readonly #token: string | undefined;
  readonly #options: webApi.WebClientOptions;
  readonly #clients = new Map<string, webApi.WebClient>();

  constructor(options: WebClientCallerOptions) {
    const base = new URL(options.apiUrl.endsWith('/') ? options.apiUrl : `${options.apiUrl}/`);
    if (base.protocol !== 'https:' && base.protocol !== 'http:')
      throw new TypeError(`the Slack API URL must be http(s), not ${base.protocol}`);
    this.apiUrl = base.href;
    this.#token = options.token === '' ? undefined : options.token;
    this.#options = {
      slackApiUrl: base.href,
      logger: slackLogger(options.logger, 'slack-web-api'),
      retryConfig: { retries: 0 },
      rejectRateLimitedCalls: true,
      timeout: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
      // Never send the token anywhere but the configured API base.
      allowAbsoluteUrls: false,
      fetch: withRetryAfter,
    };
  }

  async call(
    method: string,
    args: Record<string, unknown>,
    token: string | undefined = this.#token,
  ): Promise<unknown> {
    // What Slack answers a method it does not have; nothing leaves for a name that is not one
    // (`../oauth.v2.access` would leave the API base).
    if (!METHOD_NAME.test(method)) throw new SlackPlatformError(method, 'unknown_method');
    // A token in the arguments would go into the form body and replace the client's.
    const sent = 'token' in args ? { ...args, token: undefined } : args;
    try {
      return await this.#clientFor(token).apiCall(method, sent);
    } catch (error) {
      throw mapError(method, error);
    }
  }

  #clientFor(token: string | undefined): webApi.WebClient {
    const key = token ?? '';
    let client = this.#clients.get(key);
    if (client === undefined) {
      if (this.#clients.size >= MAX_CLIENTS) {
        // The oldest first: a refreshed workspace's old token is never called with again.
        const oldest = this.#clients.keys().next().value;
        if (oldest !== undefined) this.#clients.delete(oldest);
      }
      client = new webApi.WebClient(key === '' ? undefined : key, this.#options);
      this.#clients.set(key, client);
    }
    return client;
  }
}

/**
 * The WebClient fails a 429 without a readable Retry-After as a plain error, as if Slack had
 * not answered; a proxy's 429 may lack one. It waits a second instead, like a zero one.
 */
const withRetryAfter: webApi.FetchFunction = async (input, init) => {
  const res = await fetch(input, init);
  if (res.status !== 429 || !Number.isNaN(Number.parseInt(res.headers.get('retry-after') ?? '', 10)))
    return res;
  await res.body?.cancel().catch(() => undefined);
  return new Response(null, { status: 429, headers: { 'retry-after': '1' } });
};

/**
 * What Slack names its errors with (`invalid_auth`, `message_not_in_streaming_state`). The
 * WebClient turns an answer that is not JSON into a refusal whose error is the whole body; a
 * body like that (a proxy's page, an empty or cut answer) is no word of this kind.
 */
const SLACK_ERROR = /^[A-Za-z0-9_.-]{1,100}$/;

/** The WebClient's errors (ours, and Bolt's own calls: Socket Mode's apps.connections.open), as ours. */
export function mapError(method: string, error: unknown): Error {
  if (error instanceof webApi.WebAPIRateLimitedError) {
    // Retry-After is in seconds; a missing or zero one still waits a second.
    return new SlackRateLimitedError(method, Math.max(1, error.retryAfter) * 1000);
  }
  if (error instanceof webApi.WebAPIPlatformError) {
    const data: unknown = error.data;
    if (Array.isArray(data)) return new SlackMalformedResponseError(method);
    const slackError = (data as { error?: unknown }).error;
    if (typeof slackError !== 'string') return new SlackPlatformError(method, 'unknown');
    if (!SLACK_ERROR.test(slackError)) return new SlackMalformedResponseError(method);
    return new SlackPlatformError(method, slackError);
  }
  if (error instanceof webApi.WebAPIHTTPError) {
    // Slack's only meaningful statuses are 200 and 429; the rest is "no answer".
    return new SlackUnavailableError(method, { status: error.statusCode });
  }
  if (error instanceof webApi.WebAPIRequestError) {
    // No answer: the network, or the bound on the exchange (its cause a TimeoutError).
    return new SlackUnavailableError(method, { cause: error.original });
  }
  if (
    error instanceof SlackPlatformError ||
    error instanceof SlackRateLimitedError ||
    error instanceof SlackUnavailableError ||
    error instanceof SlackMalformedResponseError
  ) {
    return error;
  }
  return new SlackUnavailableError(method, { cause: error });
}
