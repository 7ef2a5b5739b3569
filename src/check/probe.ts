import { request, errors as undiciErrors } from 'undici';
import type { Identity } from '../a2a/index.js';
import type { HttpProbe } from './observations.js';

/**
 * A bare HTTP exchange for what A2AClient rightly hides from its callers: the Location of a
 * redirect, how long the response headers took, and the raw card JSON (so each card rule can be
 * judged on its own, not only the first refusal). Like the client it never follows a redirect.
 */

export interface ProbeRequest {
  url: string;
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  body?: string;
  headersTimeoutMs: number;
  maxBodyBytes: number;
}

/** The headers every call carries (S-8), built as the client builds them: static, then identity. */
export function identityHeaders(identity: Identity, headers: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = { ...headers };
  if (identity.kind === 'bearer') out.authorization = `Bearer ${identity.token}`;
  else out['x-user-id'] = identity.userId;
  return out;
}

const UNREACHABLE = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

export async function probe(req: ProbeRequest): Promise<HttpProbe> {
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, req.headersTimeoutMs);
  const started = performance.now();
  let res: Awaited<ReturnType<typeof request>>;
  try {
    res = await request(req.url, {
      method: req.method,
      headers: req.headers,
      body: req.body,
      signal: controller.signal,
      headersTimeout: req.headersTimeoutMs + 1000,
      bodyTimeout: req.headersTimeoutMs + 1000,
    });
  } catch (error) {
    if (timedOut) return { kind: 'headers-timeout', limitMs: req.headersTimeoutMs };
    const code = networkCode(error);
    if (code !== undefined || error instanceof undiciErrors.ConnectTimeoutError) {
      return { kind: 'unreachable', reason: code ?? 'connect timeout' };
    }
    return { kind: 'broken', reason: error instanceof Error ? error.message : String(error) };
  } finally {
    clearTimeout(timer);
  }
  const headersMs = Math.round(performance.now() - started);
  const location = first(res.headers.location);
  const contentType = first(res.headers['content-type']) ?? '';
  try {
    const body = await readBody(res.body, req.maxBodyBytes, req.headersTimeoutMs);
    return { kind: 'response', status: res.statusCode, location, contentType, headersMs, body };
  } catch (error) {
    return { kind: 'broken', reason: error instanceof Error ? error.message : String(error) };
  }
}

/** The body, bounded in size and in time: a probe never waits on an agent for ever. */
async function readBody(
  body: AsyncIterable<unknown> & { destroy(error?: Error): unknown },
  maxBytes: number,
  timeoutMs: number,
): Promise<string> {
  const timer = setTimeout(
    () => body.destroy(new Error(`the body took more than ${timeoutMs} ms`)),
    timeoutMs,
  );
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of body) {
      const buf = chunk as Buffer;
      size += buf.length;
      if (size > maxBytes) {
        body.destroy();
        throw new Error(`the body is larger than ${maxBytes} bytes`);
      }
      chunks.push(buf);
    }
  } finally {
    clearTimeout(timer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function networkCode(error: unknown): string | undefined {
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 4; e = e.cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && UNREACHABLE.has(code)) return code;
  }
  return undefined;
}

function first(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}
