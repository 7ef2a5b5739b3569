import { createServer, type IncomingMessage, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BodyRefusal, readJsonBody } from './json-body.js';

class Refused extends Error {
  constructor(readonly refusal: BodyRefusal) {
    super(refusal.message);
  }
}

/** A real server that answers what readJsonBody made of the request: the value or the refusal. */
describe('readJsonBody', () => {
  let server: Server;
  let port = 0;
  beforeAll(async () => {
    server = createServer((req: IncomingMessage, res) => {
      readJsonBody(req, 64, (r) => new Refused(r)).then(
        (value) => res.end(JSON.stringify({ value })),
        (error: unknown) => {
          res.setHeader('connection', 'close');
          res.end(
            JSON.stringify(error instanceof Refused ? { refusal: error.refusal } : { other: String(error) }),
          );
        },
      );
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  function send(body: string, headers: Record<string, string>): Promise<Record<string, unknown>> {
    return new Promise((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, method: 'POST', headers }, (res) => {
        let text = '';
        res.on('data', (c: Buffer) => {
          text += c.toString('utf8');
        });
        res.on('end', () => resolve(JSON.parse(text) as Record<string, unknown>));
      });
      req.on('error', reject);
      req.end(body);
    });
  }
  const json = { 'content-type': 'application/json; charset=utf-8' };

  it('reads a JSON body within the limit', async () => {
    expect(await send('{"a":1}', json)).toEqual({ value: { a: 1 } });
  });

  it('refuses another media type (a cross-site form) with 415', async () => {
    const out = await send('a=1', { 'content-type': 'application/x-www-form-urlencoded' });
    expect(out.refusal).toMatchObject({ status: 415, code: 'unsupported_media_type' });
  });

  it('refuses a body over the limit with 413, declared or streamed', async () => {
    const big = JSON.stringify({ text: 'x'.repeat(100) });
    expect((await send(big, json)).refusal).toMatchObject({ status: 413, code: 'body_too_large' });
    const chunked = await send(big, { ...json, 'transfer-encoding': 'chunked' });
    expect(chunked.refusal).toMatchObject({ status: 413, code: 'body_too_large' });
  });

  it('refuses an empty body and one that is not JSON with 400', async () => {
    expect((await send('  ', json)).refusal).toMatchObject({ status: 400, code: 'invalid_json' });
    expect((await send('{nope', json)).refusal).toMatchObject({ status: 400, code: 'invalid_json' });
  });
});
