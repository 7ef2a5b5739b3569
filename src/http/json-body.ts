import type { IncomingMessage } from 'node:http';

/** Why a request body was refused: the HTTP status and a stable code each server answers with. */
export interface BodyRefusal {
  status: 400 | 413 | 415;
  code: 'unsupported_media_type' | 'body_too_large' | 'invalid_json';
  message: string;
}

/**
 * Reads the JSON body of a request to one of the broker's own servers (the web chat's API, the
 * trigger webhooks), at most `limit` bytes. Only `application/json` is taken: a cross-site form
 * cannot send it without a CORS preflight, which no broker server grants. A declared length over
 * the limit is refused before a byte is read, and the reading stops as soon as the limit passes.
 * Each server turns a refusal into its own typed error with `refuse`.
 */
export async function readJsonBody(
  req: IncomingMessage,
  limit: number,
  refuse: (refusal: BodyRefusal, cause?: unknown) => Error,
): Promise<unknown> {
  const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
  if (type !== 'application/json')
    throw refuse({
      status: 415,
      code: 'unsupported_media_type',
      message: 'send the body as Content-Type: application/json',
    });
  const tooLarge = (): Error =>
    refuse({
      status: 413,
      code: 'body_too_large',
      message: `the request body is larger than ${limit} bytes`,
    });
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) throw tooLarge();
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const buffer = chunk as Buffer;
    size += buffer.length;
    if (size > limit) throw tooLarge();
    chunks.push(buffer);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '')
    throw refuse({
      status: 400,
      code: 'invalid_json',
      message: 'the request body is empty; send a JSON object',
    });
  try {
    return JSON.parse(text);
  } catch (cause) {
    throw refuse({ status: 400, code: 'invalid_json', message: 'the request body is not valid JSON' }, cause);
  }
}
