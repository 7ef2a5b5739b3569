import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { CloudAdapter, Request, TurnContext, WebResponse } from '@microsoft/agents-hosting';
import type { Logger } from 'pino';
import { TEAMS_MESSAGES_PATH } from '../../config/teams.js';

/**
 * The messaging endpoint Teams calls, `POST /api/messages`, on a port of its own: the body read
 * within bounds, the SDK's check of the request's token (`authorizeRequest`: signature, issuer,
 * audience, expiry; a request without a valid one is answered 401 and goes no further), then the
 * SDK's processing of the activity, which calls `handle`. A failure to take an activity (the
 * store down) answers 500, so Teams delivers it again.
 */

const MAX_BODY_BYTES = 1024 * 1024;
const BODY_TIMEOUT_MS = 30_000;

export interface TeamsEndpoint {
  url: string;
  close(): Promise<void>;
}

export async function listenTeams(o: {
  adapter: CloudAdapter;
  handle: (ctx: TurnContext) => Promise<void>;
  host: string;
  port: number;
  logger: Logger;
}): Promise<TeamsEndpoint> {
  const server: Server = createServer((req, res) => {
    void serve(req, res).catch((error: unknown) => {
      o.logger.error(
        { err: error instanceof Error ? error.name : typeof error },
        'a Teams activity was not taken',
      );
      if (!res.headersSent) res.writeHead(500).end();
      else res.end();
    });
  });
  server.requestTimeout = BODY_TIMEOUT_MS;

  async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if ((req.url ?? '').split('?')[0] !== TEAMS_MESSAGES_PATH) return void res.writeHead(404).end();
    if (req.method !== 'POST') return void res.writeHead(405, { allow: 'POST' }).end();
    const text = await readBody(req);
    if (text === undefined) return void res.writeHead(413).end();
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      return void res.writeHead(400).end();
    }
    if (typeof body !== 'object' || body === null || Array.isArray(body))
      return void res.writeHead(400).end();
    const request: Request = {
      body: body as Record<string, unknown>,
      headers: req.headers as Request['headers'],
      method: 'POST',
    };
    const response = webResponse(res);
    let authorized = false;
    await o.adapter.authorizeRequest(request, response, () => {
      authorized = true;
    });
    if (!authorized) {
      if (!res.writableEnded) res.writeHead(401).end();
      return;
    }
    await o.adapter.process(request, response, o.handle);
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port, o.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const host = o.host === '0.0.0.0' || o.host === '::' ? '127.0.0.1' : o.host;
  return {
    url: `http://${host}:${port}${TEAMS_MESSAGES_PATH}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The SDK's response port over node's ServerResponse. */
function webResponse(res: ServerResponse): WebResponse {
  const response: WebResponse = {
    status(code: number) {
      res.statusCode = code;
      return response;
    },
    setHeader(name: string, value: string) {
      res.setHeader(name, value);
      return response;
    },
    send(body?: unknown) {
      if (res.writableEnded) return response;
      if (body !== undefined) {
        if (!res.hasHeader('content-type')) res.setHeader('content-type', 'application/json');
        res.end(typeof body === 'string' ? body : JSON.stringify(body));
      } else res.end();
      return response;
    },
    end() {
      if (!res.writableEnded) res.end();
      return response;
    },
    get headersSent() {
      return res.headersSent;
    },
    get writableEnded() {
      return res.writableEnded;
    },
  };
  return response;
}

/** The body as text, or undefined past the size bound. */
function readBody(req: IncomingMessage): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        resolve(undefined);
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}
