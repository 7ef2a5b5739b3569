import { type HttpResponse, header, readBounded, send, unreachableCode } from '../a2a/http.js';
import { LostConnectionError, NotSentError, SizeLimitError } from '../a2a/index.js';
import type { HttpProbe } from './observations.js';

/**
 * A bare HTTP exchange for what A2AClient rightly hides from its callers: the Location of a
 * redirect, how long the response headers took, and the raw card JSON (so each card rule can be
 * judged on its own, not only the first refusal). It goes through the client's own HTTP layer
 * (../a2a/http.ts), so like the client it never follows a redirect and every wait is bounded;
 * what that layer throws is turned back into what the checker reports.
 */

export interface ProbeRequest {
  url: string;
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  body?: string;
  /** The response headers' bound, and the body's own once they came. */
  headersTimeoutMs: number;
  maxBodyBytes: number;
}

export async function probe(req: ProbeRequest): Promise<HttpProbe> {
  const started = performance.now();
  let res: HttpResponse;
  try {
    res = await send({
      url: req.url,
      method: req.method,
      headers: req.headers,
      ...(req.body === undefined ? {} : { body: req.body }),
      headersTimeoutMs: req.headersTimeoutMs,
      bodyIdleMs: req.headersTimeoutMs,
      // The headers' bound and then the body's: the exchange's own bound only backs them up.
      totalMs: 2 * req.headersTimeoutMs,
    });
  } catch (error) {
    if (error instanceof LostConnectionError && error.reason === 'headers-timeout')
      return { kind: 'headers-timeout', limitMs: req.headersTimeoutMs };
    if (error instanceof NotSentError)
      return { kind: 'unreachable', reason: unreachableCode(error.cause) ?? 'connect timeout' };
    return { kind: 'broken', reason: networkReason(error) };
  }
  const headersMs = Math.round(performance.now() - started);
  const location = header(res.headers, 'location');
  const contentType = header(res.headers, 'content-type') ?? '';
  try {
    // The body, bounded in size and in time: a probe never waits on an agent for ever.
    const body = await readBounded(
      res,
      req.maxBodyBytes,
      'response',
      req.headersTimeoutMs,
      req.headersTimeoutMs,
    );
    return { kind: 'response', status: res.status, location, contentType, headersMs, body };
  } catch (error) {
    return { kind: 'broken', reason: bodyReason(error, req) };
  }
}

function bodyReason(error: unknown, req: ProbeRequest): string {
  if (error instanceof SizeLimitError) return `the body is larger than ${req.maxBodyBytes} bytes`;
  if (error instanceof LostConnectionError && error.reason !== 'connection-dropped')
    return `the body took more than ${req.headersTimeoutMs} ms`;
  return networkReason(error);
}

/** What the network said, in its own words: the HTTP layer keeps them as the cause. */
function networkReason(error: unknown): string {
  const said = error instanceof LostConnectionError && error.cause !== undefined ? error.cause : error;
  return said instanceof Error ? said.message : String(said);
}
