import { type Dispatcher, request, errors as undiciErrors } from 'undici';
import {
  LostConnectionError,
  NotSentError,
  SizeLimitError,
  type SizeLimitKind,
} from '../core/agent/errors.js';

/**
 * The one place that does HTTP. It never follows a redirect (undici's `request` does not, and
 * we add no redirect interceptor), and every wait has a bound of its own, with our own timers
 * so tests can shrink them:
 *
 * - the response headers (DT-6), on every call;
 * - the whole exchange (`totalMs`), headers and body, however steadily an agent trickles bytes;
 * - a whole body read (`readBounded`) stops when no byte came for `idleMs`, and at `maxBytes`.
 *
 * Streams bound their events themselves (R-6, in the client); undici's own timers sit a
 * little behind ours as backstops.
 */

export interface HttpRequest {
  url: string;
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  body?: string;
  headersTimeoutMs: number;
  /**
   * The longest quiet spell between two pieces of the body this call may see: undici's own
   * body timeout is set a little above it, as a backstop to the caller's finer timers.
   */
  bodyIdleMs: number;
  /** The whole exchange, from the request to the end of the body. */
  totalMs: number;
  dispatcher?: Dispatcher;
  signal?: AbortSignal;
}

export interface HttpResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Dispatcher.ResponseData['body'];
  /** Ends the exchange early: frees the connection and stops the body. */
  abort(reason: Error): void;
  /** The exchange is over (body read or given up): its total timer stops. */
  finish(): void;
  /** The bound that cut this exchange, if one did: what a failed read should report. */
  boundFailure(): LostConnectionError | undefined;
}

const UNREACHABLE = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

/** undici's timers fire this long after ours, so ours are the ones that report. */
const BACKSTOP_MS = 1000;

/**
 * Sends the request and waits for the response headers. A connection that could not be made at
 * all is NotSentError (nothing reached the agent); one that broke, or headers that did not
 * come in time, is LostConnectionError (DT-6).
 */
export async function send(req: HttpRequest): Promise<HttpResponse> {
  const controller = new AbortController();
  let cut: LostConnectionError | undefined;
  const headersTimer = setTimeout(() => {
    cut ??= new LostConnectionError('headers-timeout', 0);
    controller.abort(cut);
  }, req.headersTimeoutMs);
  let bodyRef: Dispatcher.ResponseData['body'] | undefined;
  const totalTimer = setTimeout(() => {
    cut ??= new LostConnectionError('call-timeout', 0);
    // Nobody may be reading the body right now: an unheard 'error' would crash the process.
    bodyRef?.on('error', ignore);
    controller.abort(cut);
    bodyRef?.destroy(cut);
  }, req.totalMs);
  // The caller's signal stays wired to the body for the life of a stream, not only the headers:
  // it aborts our own controller, through one listener removed when the exchange is over. A
  // composite signal (AbortSignal.any) would do the same at several times the cost per call
  // (weak references, a listener on each source, and undici's listener on the composite).
  const caller = req.signal;
  const onCallerAbort = caller === undefined ? undefined : (): void => controller.abort(caller.reason);
  const finish = (): void => {
    clearTimeout(headersTimer);
    clearTimeout(totalTimer);
    if (onCallerAbort !== undefined) caller?.removeEventListener('abort', onCallerAbort);
  };
  if (caller !== undefined && onCallerAbort !== undefined) {
    if (caller.aborted) onCallerAbort();
    else caller.addEventListener('abort', onCallerAbort, { once: true });
  }
  try {
    const res = await request(req.url, {
      method: req.method,
      headers: req.headers,
      body: req.body,
      signal: controller.signal,
      dispatcher: req.dispatcher,
      headersTimeout: req.headersTimeoutMs + BACKSTOP_MS,
      bodyTimeout: req.bodyIdleMs + BACKSTOP_MS,
    });
    clearTimeout(headersTimer);
    bodyRef = res.body;
    return {
      status: res.statusCode,
      headers: res.headers,
      body: res.body,
      abort: (reason) => {
        finish();
        res.body.on('error', ignore);
        controller.abort(reason);
        res.body.destroy(reason);
      },
      finish,
      boundFailure: () => cut,
    };
  } catch (error) {
    finish();
    if (cut !== undefined) throw new LostConnectionError(cut.reason, 0, { cause: error });
    if (req.signal?.aborted) throw req.signal.reason;
    throw classifyNetworkError(error, 0);
  }
}

/** Maps a network-level failure to our errors. `eventsSeen` says how far a stream got. */
export function classifyNetworkError(error: unknown, eventsSeen: number): Error {
  const code = unreachableCode(error);
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
  if (error instanceof undiciErrors.BodyTimeoutError) {
    return new LostConnectionError('body-timeout', eventsSeen, { cause: error });
  }
  return new LostConnectionError('connection-dropped', eventsSeen, { cause: error });
}

/** The network code (ECONNREFUSED, ENOTFOUND, …) of a failure that reached nobody, if it is one. */
export function unreachableCode(error: unknown): string | undefined {
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 4; e = e.cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && UNREACHABLE.has(code)) return code;
  }
  return undefined;
}

/**
 * Reads a whole body as text, refusing more than `maxBytes` and cutting it when no byte came
 * for `idleMs` (a trickle of one byte a second passes the idle bound; the exchange's total
 * bound from `send` stops it). Always ends the exchange.
 */
export async function readBounded(
  res: HttpResponse,
  maxBytes: number,
  kind: SizeLimitKind,
  idleMs: number,
  /** A bound of the read's own, tighter than the exchange's (a send answered with JSON). */
  totalMs?: number,
): Promise<string> {
  const declared = Number(header(res.headers, 'content-length'));
  if (Number.isFinite(declared) && declared > maxBytes) {
    const error = new SizeLimitError(kind, maxBytes);
    res.abort(error);
    throw error;
  }
  const chunks: Buffer[] = [];
  let size = 0;
  // One timer for the read: chunks only stamp the time, the timer re-arms for the rest.
  let lastByteAt = performance.now();
  let idleCut: LostConnectionError | undefined;
  let idle: NodeJS.Timeout | undefined;
  const onIdle = (): void => {
    const quiet = performance.now() - lastByteAt;
    if (quiet < idleMs) {
      idle = setTimeout(onIdle, idleMs - quiet);
      return;
    }
    idleCut = new LostConnectionError('body-timeout', 0);
    res.abort(idleCut);
  };
  idle = setTimeout(onIdle, idleMs);
  const total =
    totalMs === undefined
      ? undefined
      : setTimeout(() => {
          idleCut ??= new LostConnectionError('call-timeout', 0);
          res.abort(idleCut);
        }, totalMs);
  try {
    for await (const chunk of res.body) {
      const buf = chunk as Buffer;
      lastByteAt = performance.now();
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
    const bound = idleCut ?? res.boundFailure();
    if (bound !== undefined) throw new LostConnectionError(bound.reason, 0, { cause: error });
    throw classifyNetworkError(error, 0);
  } finally {
    clearTimeout(idle);
    clearTimeout(total);
    res.finish();
  }
  return Buffer.concat(chunks, size).toString('utf8');
}

/** Discards a body we do not want, without waiting for it. */
export function discard(res: HttpResponse): void {
  res.finish();
  res.body.on('error', ignore);
  res.body.destroy();
}

function ignore(): void {}

export function header(headers: HttpResponse['headers'], name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}
