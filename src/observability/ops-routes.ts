import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Registry } from 'prom-client';

/**
 * /healthz (the process answers), /readyz (it can serve: store open, registry loaded, …) and
 * /metrics (Prometheus). Returns false for any other path, so the broker's one HTTP server can
 * hand the request on (to Slack's receiver, say).
 */
export function opsRoutes(options: { registry: Registry; ready: () => string | true }) {
  return (req: IncomingMessage, res: ServerResponse): boolean => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') return false;
    if (path === '/healthz') {
      reply(res, 200, 'text/plain; charset=utf-8', 'ok\n');
      return true;
    }
    if (path === '/readyz') {
      const ready = options.ready();
      if (ready === true) reply(res, 200, 'text/plain; charset=utf-8', 'ready\n');
      else reply(res, 503, 'text/plain; charset=utf-8', `not ready: ${ready}\n`);
      return true;
    }
    if (path === '/metrics') {
      options.registry.metrics().then(
        (text) => reply(res, 200, options.registry.contentType, text),
        () => reply(res, 500, 'text/plain; charset=utf-8', 'metrics could not be collected\n'),
      );
      return true;
    }
    return false;
  };
}

function reply(res: ServerResponse, status: number, type: string, body: string): void {
  res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' });
  res.end(body);
}
