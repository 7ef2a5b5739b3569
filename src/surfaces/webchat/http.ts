import type { IncomingMessage, ServerResponse } from 'node:http';
import type { z } from 'zod';
import { readJsonBody } from '../../http/json-body.js';
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

/** Reads a JSON body of at most `limit` bytes (http/json-body.ts), refused as the API's own error. */
export function readJson(req: IncomingMessage, limit: number): Promise<unknown> {
  return readJsonBody(
    req,
    limit,
    (r, cause) => new WebChatRequestError(r.status, r.code, r.message, cause === undefined ? {} : { cause }),
  );
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
