import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { z } from 'zod';
import type { ApprovalAuditSink } from '../../core/approval-audit.js';
import type { Actor } from '../../core/compose.js';
import { InvalidConfigError } from '../../core/errors.js';
import type { ChatInbound } from '../../core/inbound.js';
import { type ApiDeps, type BindingDirectory, WebChatApi } from './api.js';
import { PAGE_CSP, PAGE_CSS, PAGE_HTML } from './assets.js';
import { prebuiltPageScript } from './bundle.js';
import { WebChatRequestError } from './errors.js';
import { DEFAULT_FOLLOW, type FollowOptions } from './follow.js';
import { BASE_HEADERS, sendError } from './http.js';
import { accessPolicy, checkHost, checkOrigin, checkToken, isLoopback } from './security.js';
import type { WebChatSurface } from './surface.js';

/** The operations routes: on loopback open, elsewhere behind the token. */
const OPERATIONS = new Set(['/healthz', '/readyz', '/metrics']);
export interface WebChatOptions {
  engine: Pick<ChatInbound, 'receive' | 'cancel' | 'findSession' | 'answer'>;
  /** The surface the engine was built with: the server shows and streams its threads. */
  surface: WebChatSurface;
  /** The live Bindings (LiveRegistry): one list of threads each. */
  registry: BindingDirectory;
  /** Each Binding's readiness, shown in the page and the API (local mode). */
  readiness?: ApiDeps['readiness'];
  /** Where each tool approval decided here is audited (the broker's approval audit). */
  audit?: ApprovalAuditSink;
  /** Default 127.0.0.1. Any other address needs a token. */
  host?: string;
  /** 0 picks a free port. */
  port: number;
  /** When set, every API call needs `Authorization: Bearer <token>`; at least 16 characters. */
  token?: string;
  logger: Logger;
  /** Who the local person is, for the label line and actor metadata. */
  actor?: Actor;
  /** Largest request body (default 256 KiB). */
  bodyLimitBytes?: number;
  follow?: Partial<FollowOptions>;
  /**
   * Other routes served on the same port, tried first (local mode's trigger webhooks); returns
   * true when it answered. They are not behind the web chat's token: they check their own.
   */
  routes?: (req: IncomingMessage, res: ServerResponse) => boolean;
  /**
   * The process's own /healthz, /readyz and /metrics (local mode); returns true when it answered.
   * Open on loopback; on any other address behind the token, as the API is, since they name the
   * Bindings and count their traffic.
   */
  operations?: (req: IncomingMessage, res: ServerResponse) => boolean;
  /**
   * The page's script; default the one `npm run build` bundled into dist/. Tests, running from
   * the sources, pass scripts/build-webchat.ts's buildPageScript.
   */
  pageScript?: () => Promise<string>;
}

export interface WebChat {
  /** http://host:port/ (never with the token in it). */
  url: string;
  close(): Promise<void>;
}

export const DEFAULT_ACTOR: Actor = {
  id: 'webchat-local',
  name: 'Local user',
  label: '[Web chat: Local user (webchat-local)]',
};

const settings = z.object({
  host: z.string().min(1).default('127.0.0.1'),
  port: z.number().int().min(0).max(65_535),
  token: z.string().min(16, 'the web chat token must be at least 16 characters').optional(),
  bodyLimitBytes: z
    .number()
    .int()
    .min(1_024)
    .max(16 * 1024 * 1024)
    .default(256 * 1024),
});

/**
 * Starts the web chat: the page at `/` (with `/app.js` and `/app.css`) and the JSON API under
 * `/api/`. The page's script is built before the server listens, so a broken build fails start.
 */
export async function createWebChat(options: WebChatOptions): Promise<WebChat> {
  const parsed = settings.safeParse(options);
  if (!parsed.success) {
    throw new InvalidConfigError(`web chat: ${parsed.error.issues.map((i) => i.message).join('; ')}`);
  }
  const { host, port, token, bodyLimitBytes } = parsed.data;
  if (!isLoopback(host) && token === undefined) {
    throw new InvalidConfigError(
      `web chat: listening on ${host} needs a token (only loopback may go without)`,
    );
  }
  const logger = options.logger.child({ component: 'webchat' });
  const script = await (options.pageScript ?? prebuiltPageScript)();
  const follows = new Set<() => void>();
  const api = new WebChatApi({
    engine: options.engine,
    surface: options.surface,
    registry: options.registry,
    ...(options.readiness === undefined ? {} : { readiness: options.readiness }),
    ...(options.audit === undefined ? {} : { audit: options.audit }),
    actor: options.actor ?? DEFAULT_ACTOR,
    bodyLimitBytes,
    follow: { ...DEFAULT_FOLLOW, ...options.follow },
    logger,
    track: (end) => {
      follows.add(end);
      return () => follows.delete(end);
    },
  });

  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  if (address === null || typeof address === 'string') {
    server.close();
    throw new InvalidConfigError('web chat: the server has no TCP address');
  }
  const policy = accessPolicy(host, token);
  const assets = staticAssets(script);

  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    handle(req, res).catch((error: unknown) => {
      if (res.headersSent) {
        res.destroy();
        return;
      }
      if (error instanceof WebChatRequestError) {
        sendError(res, error);
        return;
      }
      logger.error(
        { err: error, method: req.method, path: req.url?.split('?')[0] },
        'web chat request failed',
      );
      sendError(
        res,
        new WebChatRequestError(500, 'internal_error', 'the web chat failed to handle this request'),
      );
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://webchat.invalid');
    checkHost(req, policy);
    if (options.routes?.(req, res) === true) return;
    if (options.operations !== undefined && OPERATIONS.has(url.pathname)) {
      if (policy.allowedHosts === null) checkToken(req, policy);
      if (options.operations(req, res)) return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') checkOrigin(req);
    if (url.pathname.startsWith('/api/')) {
      checkToken(req, policy);
      await api.handle(req, res, url);
      return;
    }
    if (url.pathname === '/favicon.ico') {
      res.writeHead(204, BASE_HEADERS).end(); // no icon; saves the browser a 404 in its console
      return;
    }
    const asset = assets.get(url.pathname);
    if (asset === undefined) throw new WebChatRequestError(404, 'not_found', `nothing at ${url.pathname}`);
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      throw new WebChatRequestError(405, 'method_not_allowed', `${req.method} is not allowed here`);
    }
    res.writeHead(200, { ...BASE_HEADERS, ...asset.headers, 'Content-Length': asset.body.length });
    res.end(req.method === 'HEAD' ? undefined : asset.body);
  }

  const shownHost = host.includes(':') ? `[${host}]` : host;
  const url = `http://${shownHost}:${address.port}/`;
  logger.info({ url, tokenRequired: token !== undefined }, 'web chat listening');
  return {
    url,
    close: async () => {
      for (const end of [...follows]) end();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    },
  };
}

interface Asset {
  body: Buffer;
  headers: Record<string, string>;
}

function staticAssets(script: string): Map<string, Asset> {
  const asset = (body: string, type: string, extra: Record<string, string> = {}): Asset => ({
    body: Buffer.from(body, 'utf8'),
    headers: { 'Content-Type': type, ...extra },
  });
  return new Map([
    ['/', asset(PAGE_HTML, 'text/html; charset=utf-8', { 'Content-Security-Policy': PAGE_CSP })],
    ['/app.js', asset(script, 'text/javascript; charset=utf-8')],
    ['/app.css', asset(PAGE_CSS, 'text/css; charset=utf-8')],
  ]);
}
