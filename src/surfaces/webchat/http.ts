import type { IncomingMessage, ServerResponse } from 'node:http';
import type { z } from 'zod';
import { WebChatRequestError } from './errors.js';
import type { ApiErrorBody } from './view.js';

/** Small HTTP helpers over node:http: bounded JSON bodies in, JSON out, errors as JSON. */

/** Headers every response carries: nothing is cached, sniffed, framed or sent as a referrer. */
export const BASE_HEADERS: Readonly<Record<string, string>> = {
  'Cache-Control': 'no-store',
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'X-Frame-Options': 'DENY',
};

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const payload = JSON.stringify(body);
  res.writeHead(status, {
    ...BASE_HEADERS,
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(payload),
    ...headers,
  });
  res.end(payload);
}

export function sendError(res: ServerResponse, error: WebChatRequestError): void {
  const body: ApiErrorBody = { error: { code: error.code, message: error.message } };
  const headers: Record<string, string> = {};
  if (error.status === 401) headers['WWW-Authenticate'] = 'Bearer realm="agentkourier-webchat"';
  // The rest of an oversized body is not read: close the connection rather than drain it.
  if (error.status === 413) headers.Connection = 'close';
  sendJson(res, error.status, body, headers);
}

/**
 * Reads a JSON body of at most `limit` bytes. Only `application/json` is taken: a cross-site
 * form cannot send it without a CORS preflight, which this server never grants.
 */
export async function readJson(req: IncomingMessage, limit: number): Promise<unknown> {
  const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
  if (type !== 'application/json') {
    throw new WebChatRequestError(
      415,
      'unsupported_media_type',
      'send the body as Content-Type: application/json',
    );
  }
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) throw tooLarge(limit);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const buffer = chunk as Buffer;
    size += buffer.length;
    if (size > limit) throw tooLarge(limit);
    chunks.push(buffer);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '')
    throw new WebChatRequestError(400, 'invalid_json', 'the request body is empty; send a JSON object');
  try {
    return JSON.parse(text);
  } catch (cause) {
    throw new WebChatRequestError(400, 'invalid_json', 'the request body is not valid JSON', { cause });
  }
}

function tooLarge(limit: number): WebChatRequestError {
  return new WebChatRequestError(413, 'body_too_large', `the request body is larger than ${limit} bytes`);
}

/** Validates with zod; a failure names every bad field and why, in one 400. */
export function parseBody<T>(schema: z.ZodType<T>, input: unknown): T {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const details = result.error.issues.map((issue) => {
    const path = issue.path.map(String).join('.');
    return path === '' ? issue.message : `${path}: ${issue.message}`;
  });
  throw new WebChatRequestError(400, 'invalid_request', details.join('; '));
}
