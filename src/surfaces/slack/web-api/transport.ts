import type { Logger } from 'pino';
import { Pool } from 'undici';
import {
  SlackMalformedResponseError,
  SlackPlatformError,
  SlackRateLimitedError,
  SlackUnavailableError,
} from './errors.js';

/**
 * The surface's own way of sending a Web API call: one POST on a keep-alive pool, its answer
 * read and judged, its failure one of our typed errors. It replaces the official WebClient on
 * the broker's hot path (a turn makes about six calls; the WebClient spent about half a
 * millisecond of CPU on each in its queue, retry wrapper, WHATWG fetch and debug lines), and
 * keeps what the WebClient did with the options the surface gave it:
 *
 * - the body is a form (`application/x-www-form-urlencoded`), objects JSON-encoded in their
 *   field, `undefined` and `null` left out — what every Slack method accepts;
 * - the token goes in `Authorization: Bearer`, never in the body or a log line: a call's own
 *   (a workspace's, in OAuth mode) or the transport's;
 * - no retries and no waiting out a 429 (`retries: 0`, `rejectRateLimitedCalls`): a 429 is
 *   SlackRateLimitedError with its Retry-After (at least one second) and the caller decides;
 * - a 15-second bound on the whole exchange; at most 100 requests at once (the WebClient's
 *   queue), the rest wait for a connection;
 * - only the configured API base is ever called (the method is a name, not a URL);
 * - Slack's `warnings` and `[WARN]`/`[ERROR]` messages in `response_metadata` are logged.
 *
 * Where the WebClient was vague, this is strict: a 429 without a readable Retry-After waits one
 * second (the WebClient failed it as a plain error), and an answer that is not JSON is
 * SlackMalformedResponseError (the WebClient made it a refusal whose error was the body).
 */

export interface WebApiTransportOptions {
  /** The API base, e.g. `https://slack.com/api/`. */
  apiUrl: string;
  /** The token of calls that bring none (single-workspace mode). */
  token: string | undefined;
  logger: Logger;
  /** The whole exchange, request to the end of the answer (ms). */
  timeoutMs?: number;
  /** Requests in flight at once; more wait for a connection. */
  connections?: number;
  /** Largest answer read (bytes). */
  maxAnswerBytes?: number;
}

export const DEFAULT_TIMEOUT_MS = 15_000;
const DEFAULT_CONNECTIONS = 100;
/** conversations.replies pages of 200 long messages stay far below this. */
const DEFAULT_MAX_ANSWER_BYTES = 32 * 1024 * 1024;
/** What a method name may be: Slack's are dotted words (`chat.postMessage`). */
const METHOD_NAME = /^[A-Za-z][A-Za-z0-9_]*(\.[A-Za-z][A-Za-z0-9_]*)*$/;
const MAX_LOGGED_NOTES = 10;
const MAX_NOTE_CHARS = 300;

/** One Web API call: the answer of `ok: true`, or a typed error. */
export interface WebApiCaller {
  /** The API base calls go to (for spans). */
  readonly apiUrl: string;
  call(method: string, args: Record<string, unknown>, token?: string): Promise<Record<string, unknown>>;
  close(): Promise<void>;
}

export class WebApiTransport implements WebApiCaller {
  readonly apiUrl: string;
  readonly #pool: Pool;
  readonly #basePath: string;
  readonly #token: string | undefined;
  readonly #logger: Logger;
  readonly #timeoutMs: number;
  readonly #maxAnswerBytes: number;

  constructor(options: WebApiTransportOptions) {
    const base = new URL(options.apiUrl.endsWith('/') ? options.apiUrl : `${options.apiUrl}/`);
    if (base.protocol !== 'https:' && base.protocol !== 'http:')
      throw new TypeError(`the Slack API URL must be http(s), not ${base.protocol}`);
    this.apiUrl = base.href;
    this.#basePath = base.pathname;
    this.#token = options.token;
    this.#logger = options.logger.child({ component: 'slack-web-api' });
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.#maxAnswerBytes = options.maxAnswerBytes ?? DEFAULT_MAX_ANSWER_BYTES;
    this.#pool = new Pool(base.origin, { connections: options.connections ?? DEFAULT_CONNECTIONS });
  }

  async call(
    method: string,
    args: Record<string, unknown>,
    token: string | undefined = this.#token,
  ): Promise<Record<string, unknown>> {
    // What Slack answers a method it does not have; nothing leaves for a name that is not one.
    if (!METHOD_NAME.test(method)) throw new SlackPlatformError(method, 'unknown_method');
    const headers: Record<string, string> = {
      'content-type': 'application/x-www-form-urlencoded',
      accept: 'application/json',
      'user-agent': 'agentkourier',
    };
    if (token !== undefined && token !== '') headers.authorization = `Bearer ${token}`;
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(new TimeoutError(this.#timeoutMs)), this.#timeoutMs);
    let status: number;
    let text: string;
    let retryAfter: string | string[] | undefined;
    try {
      const res = await this.#pool.request({
        path: `${this.#basePath}${method}`,
        method: 'POST',
        headers,
        body: formBody(args),
        signal: controller.signal,
        // Ours is the bound that reports; undici's sit behind it.
        headersTimeout: this.#timeoutMs + 1_000,
        bodyTimeout: this.#timeoutMs + 1_000,
      });
      status = res.statusCode;
      retryAfter = res.headers['retry-after'];
      if (status !== 200) {
        // Slack's only meaningful statuses are 200 and 429; the rest is "no answer".
        await res.body.dump().catch(() => undefined);
        if (status === 429) throw new SlackRateLimitedError(method, retryAfterMs(retryAfter));
        throw new SlackUnavailableError(method, { status });
      }
      text = await readCapped(res.body, this.#maxAnswerBytes, method);
    } catch (error) {
      if (
        error instanceof SlackRateLimitedError ||
        error instanceof SlackUnavailableError ||
        error instanceof SlackMalformedResponseError
      )
        throw error;
      throw new SlackUnavailableError(method, { cause: error });
    } finally {
      clearTimeout(timer);
    }
    let answer: unknown;
    try {
      answer = JSON.parse(text);
    } catch {
      throw new SlackMalformedResponseError(method);
    }
    if (typeof answer !== 'object' || answer === null || Array.isArray(answer))
      throw new SlackMalformedResponseError(method);
    const result = answer as Record<string, unknown>;
    this.#logNotes(method, result);
    if (result.ok !== true)
      throw new SlackPlatformError(method, typeof result.error === 'string' ? result.error : 'unknown');
    return result;
  }

  close(): Promise<void> {
    return this.#pool.close();
  }

  /** Slack's warnings (deprecations, a missing charset, …) and its argument notes. */
  #logNotes(method: string, result: Record<string, unknown>): void {
    const meta = result.response_metadata;
    if (typeof meta !== 'object' || meta === null) return;
    const { warnings, messages } = meta as { warnings?: unknown; messages?: unknown };
    const notes = (list: unknown): string[] =>
      Array.isArray(list)
        ? list
            .filter((n): n is string => typeof n === 'string')
            .slice(0, MAX_LOGGED_NOTES)
            .map((n) => n.slice(0, MAX_NOTE_CHARS))
        : [];
    const warned = notes(warnings);
    if (warned.length > 0) this.#logger.warn({ method, warnings: warned }, 'Slack warned about a call');
    const said = notes(messages);
    const errors = said.filter((m) => m.startsWith('[ERROR]'));
    if (errors.length > 0) this.#logger.error({ method, messages: errors }, 'Slack refused an argument');
    const warns = said.filter((m) => m.startsWith('[WARN]'));
    if (warns.length > 0) this.#logger.warn({ method, messages: warns }, 'Slack warned about an argument');
  }
}

/** The bound on a whole exchange ran out. */
class TimeoutError extends Error {
  override readonly name = 'TimeoutError';
  constructor(ms: number) {
    super(`no answer within ${ms} ms`);
  }
}

/**
 * Slack's form body: primitives as they are, anything else as JSON; undefined and null left
 * out. The same bytes as `querystring.stringify`, by the engine's own `encodeURIComponent`,
 * which escapes a long answer text about twice as fast as querystring's loop.
 */
export function formBody(args: Record<string, unknown>): string {
  let body = '';
  for (const key in args) {
    const value = args[key];
    if (value === undefined || value === null || key === 'token') continue;
    const text =
      typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean'
        ? String(value)
        : JSON.stringify(value);
    body += `${body === '' ? '' : '&'}${encodeURIComponent(key)}=${encodeURIComponent(text)}`;
  }
  return body;
}

/** Retry-After in seconds, as ms; a missing, unreadable or zero one still waits a second. */
export function retryAfterMs(header: string | string[] | undefined): number {
  const raw = Array.isArray(header) ? header[0] : header;
  const seconds = raw === undefined ? Number.NaN : Number.parseInt(raw, 10);
  return Number.isNaN(seconds) ? 1_000 : Math.max(1, seconds) * 1_000;
}

async function readCapped(body: AsyncIterable<unknown>, max: number, method: string): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    const buf = chunk as Buffer;
    size += buf.length;
    if (size > max) throw new SlackMalformedResponseError(method);
    chunks.push(buf);
  }
  return chunks.length === 1
    ? (chunks[0] as Buffer).toString('utf8')
    : Buffer.concat(chunks).toString('utf8');
}
