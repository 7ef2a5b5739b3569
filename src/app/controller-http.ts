import {
  createServer,
  type IncomingMessage,
  type RequestListener,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { SLACK_EVENTS_PATH, SLACK_INSTALL_PATH, SLACK_OAUTH_REDIRECT_PATH } from '../config/slack.js';

/**
 * The controller's two HTTP ports. Health and metrics on one, Slack's events on the other, so a
 * NetworkPolicy can let Prometheus and the kubelet reach the first without opening the second to
 * the world, or the events port to Slack's ingress without exposing /metrics.
 */

export interface ListeningServer {
  port: number;
  /**
   * Stops accepting connections and waits for requests in flight (a Slack event being stored)
   * up to `graceMs`, then cuts what is left.
   */
  close(graceMs?: number): Promise<void>;
}

export async function listen(listener: RequestListener, port: number): Promise<ListeningServer> {
  const server: Server = createServer(listener);
  let closing = false;
  // A connection whose request finishes after close() began would idle on as keep-alive until
  // the grace runs out; let it go as soon as its response is sent.
  server.on('request', (_req: IncomingMessage, res: ServerResponse) => {
    res.once('finish', () => {
      if (closing) setImmediate(() => server.closeIdleConnections());
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: (graceMs = 0) =>
      new Promise<void>((resolve) => {
        closing = true;
        const cut = setTimeout(() => server.closeAllConnections(), graceMs);
        server.close(() => {
          clearTimeout(cut);
          resolve();
        });
        server.closeIdleConnections();
      }),
  };
}

export function notFound(res: ServerResponse): void {
  res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' });
  res.end('not found\n');
}

/**
 * The events port: POST /slack/events to Bolt's receiver (HTTP mode), and the trigger webhooks
 * (POST /triggers/<namespace>/<binding>/<name>). While the process drains, both are answered
 * 503, so Slack and Alertmanager deliver again (to another replica, or to this one after its
 * restart) instead of handing them to an engine that no longer starts turns.
 */
export function eventsListener(options: {
  slack: () => RequestListener | undefined;
  /** The trigger routes: true when they took the request (they answer 503 while draining). */
  triggers?: (req: IncomingMessage, res: ServerResponse) => boolean;
  /** The broker's public keys (src/identity/well-known.ts), for agents that verify its assertions. */
  wellKnown?: (req: IncomingMessage, res: ServerResponse) => boolean;
  draining: () => boolean;
}): RequestListener {
  return (req: IncomingMessage, res: ServerResponse) => {
    if (options.wellKnown?.(req, res) === true) return;
    if (options.triggers?.(req, res) === true) return;
    const path = (req.url ?? '').split('?')[0];
    const slack = options.slack();
    // Events are POSTed; OAuth mode's install page and redirect are GETs (Bolt's receiver
    // answers 404 for them in single-workspace mode).
    const forSlack =
      (req.method === 'POST' && path === SLACK_EVENTS_PATH) ||
      (req.method === 'GET' && (path === SLACK_INSTALL_PATH || path === SLACK_OAUTH_REDIRECT_PATH));
    if (slack === undefined || !forSlack) {
      notFound(res);
      return;
    }
    if (options.draining()) {
      res.writeHead(503, { 'content-type': 'text/plain; charset=utf-8', 'retry-after': '5' });
      res.end('shutting down\n');
      return;
    }
    slack(req, res);
  };
}
