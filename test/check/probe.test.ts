import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { type ProbeRequest, probe } from '../../src/check/probe.js';
import { deadPort } from './helpers.js';

/**
 * The checker's raw exchange, kind by kind, as its rules read it: the card and transport rules
 * quote these reasons, so they stay word for word whatever HTTP layer carries them.
 */

let server: Server | undefined;

afterEach(async () => {
  server?.closeAllConnections();
  await new Promise<void>((resolve) => (server === undefined ? resolve() : server.close(() => resolve())));
  server = undefined;
});

async function serve(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<string> {
  server = createServer(handler);
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/card`;
}

function get(url: string, over: Partial<ProbeRequest> = {}): ProbeRequest {
  return { url, method: 'GET', headers: {}, headersTimeoutMs: 400, maxBodyBytes: 64, ...over };
}

describe('check probe', () => {
  it('reports a response with its status, Location, content type, timing and body', async () => {
    const url = await serve((req, res) => {
      res.writeHead(307, { location: 'http://elsewhere.invalid/', 'content-type': 'text/plain' });
      res.end(`${req.method} ${req.headers['x-user-id'] ?? ''}`);
    });
    const got = await probe(get(url, { headers: { 'x-user-id': 'ada' } }));
    expect(got).toMatchObject({
      kind: 'response',
      status: 307,
      location: 'http://elsewhere.invalid/',
      contentType: 'text/plain',
      body: 'GET ada',
    });
    expect(got.kind === 'response' && got.headersMs >= 0).toBe(true);
  });

  it('sends a POST body', async () => {
    const url = await serve((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => {
        body += c.toString('utf8');
      });
      req.on('end', () => res.end(`${req.method} ${body}`));
    });
    const got = await probe({ ...get(url), method: 'POST', body: '{"a":1}' });
    expect(got).toMatchObject({ kind: 'response', status: 200, body: 'POST {"a":1}' });
  });

  it('reports the network code when nothing answers', async () => {
    const got = await probe(get(`http://127.0.0.1:${await deadPort()}/card`));
    expect(got).toEqual({ kind: 'unreachable', reason: 'ECONNREFUSED' });
  });

  it('reports response headers that did not come within the bound', async () => {
    const url = await serve(() => undefined);
    expect(await probe(get(url, { headersTimeoutMs: 200 }))).toEqual({
      kind: 'headers-timeout',
      limitMs: 200,
    });
  });

  it('reports a body larger than the bound', async () => {
    const url = await serve((_req, res) => {
      res.writeHead(200);
      res.write('x'.repeat(40));
      res.end('y'.repeat(40));
    });
    expect(await probe(get(url))).toEqual({ kind: 'broken', reason: 'the body is larger than 64 bytes' });
  });

  it('reports a body that takes longer than the bound', async () => {
    const url = await serve((_req, res) => {
      res.writeHead(200);
      res.write('{');
    });
    expect(await probe(get(url, { headersTimeoutMs: 200 }))).toEqual({
      kind: 'broken',
      reason: 'the body took more than 200 ms',
    });
  });

  it('reports a connection cut in the middle of the body, in the words of the network layer', async () => {
    const url = await serve((req, res) => {
      res.writeHead(200, { 'content-length': '100' });
      res.write('partial');
      setTimeout(() => req.socket.destroy(), 20);
    });
    expect(await probe(get(url, { maxBodyBytes: 1000 }))).toEqual({
      kind: 'broken',
      reason: 'other side closed',
    });
  });
});
