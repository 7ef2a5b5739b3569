import { type Dispatcher, request, errors as undiciErrors } from 'undici';
import {
  LostConnectionError,
  NotSentError,
  SizeLimitError,
  type SizeLimitKind,
} from '../core/agent/errors.js';

/**
 * The one place that does HTTP. It never follows a redirect (undici's `request` does not, and
 * we add no redirect interceptor), bounds the wait for response headers with our own timer so
 * tests can shrink it, and reads bodies with a size bound.
 */

export interface HttpRequest {
  url: string;
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  body?: string;
  headersTimeoutMs: number;
  dispatcher?: Dispatcher;
  signal?: AbortSignal;
}

export interface HttpResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Dispatcher.ResponseData['body'];
  /** Ends the exchange early: frees the connection and stops the body. */
  abort(reason: Error): void;
}

const UNREACHABLE = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

/**
 * Sends the request and waits for the response headers. A connection that could not be made at
 * all is NotSentError (nothing reached the agent); one that broke, or headers that did not
 * come in time, is LostConnectionError (DT-6).
 */
export async function send(req: HttpRequest): Promise<HttpResponse> {
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, req.headersTimeoutMs);
  // The caller's signal stays wired to the body for the life of a stream, not only the headers.
  const signal =
    req.signal === undefined ? controller.signal : AbortSignal.any([controller.signal, req.signal]);
  try {
    const res = await request(req.url, {
      method: req.method,
      headers: req.headers,
      body: req.body,
      signal,
      dispatcher: req.dispatcher,
      // Our own timers are authoritative; undici's are backstops a little later.
      headersTimeout: req.headersTimeoutMs + 1000,
      bodyTimeout: 0,
    });
    return {
      status: res.statusCode,
      headers: res.headers,
      body: res.body,
      abort: (reason) => {
        // Nobody may be reading the body any more: an unheard 'error' would crash the process.
        res.body.on('error', ignore);
        controller.abort(reason);
        res.body.destroy(reason);
      },
    };
  } catch (error) {
    if (timedOut) throw new LostConnectionError('headers-timeout', 0, { cause: error });
    if (req.signal?.aborted) throw req.signal.reason;
    throw classifyNetworkError(error, 0);
  } finally {
    clearTimeout(timer);
  }
}

/** Maps a network-level failure to our errors. `eventsSeen` says how far a stream got. */
export function classifyNetworkError(error: unknown, eventsSeen: number): Error {
  const code = errorCode(error);
  if (code !== undefined && UNREACHABLE.has(code)) {
    return new NotSentError(`the agent could not be reached (${code})`, {
      code: 'unreachable',
      cause: error,
    });
  }
  if (error instanceof undiciErrors.ConnectTimeoutError) {
    return new NotSentError('the agent could not be reached (connect timeout)', {
      code: 'unreachable',
      cause: error,
    });
  }
  if (error instanceof undiciErrors.HeadersTimeoutError) {
    return new LostConnectionError('headers-timeout', eventsSeen, { cause: error });
  }
  return new LostConnectionError('connection-dropped', eventsSeen, { cause: error });
}

function errorCode(error: unknown): string | undefined {
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 4; e = e.cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && UNREACHABLE.has(code)) return code;
  }
  return undefined;
}

/** Reads a whole body as text, refusing more than `maxBytes`. */
export async function readBounded(res: HttpResponse, maxBytes: number, kind: SizeLimitKind): Promise<string> {
  const declared = Number(header(res.headers, 'content-length'));
  if (Number.isFinite(declared) && declared > maxBytes) {
    const error = new SizeLimitError(kind, maxBytes);
    res.abort(error);
    throw error;
  }
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of res.body) {
      const buf = chunk as Buffer;
      size += buf.length;
      if (size > maxBytes) {
        const error = new SizeLimitError(kind, maxBytes);
        res.abort(error);
        throw error;
      }
      chunks.push(buf);
    }
  } catch (error) {
    if (error instanceof SizeLimitError) throw error;
    throw classifyNetworkError(error, 0);
  }
  return Buffer.concat(chunks, size).toString('utf8');
}

/** Discards a body we do not want, without waiting for it. */
export function discard(res: HttpResponse): void {
  res.body.on('error', ignore);
  res.body.destroy();
}

function ignore(): void {}

export function header(headers: HttpResponse['headers'], name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}
