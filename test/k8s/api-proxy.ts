import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { request as httpsRequest, type RequestOptions } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';

/**
 * A plain-HTTP proxy in front of a real API server, for the controller's resilience tests: it
 * forwards every request (authenticating with the cluster's kubeconfig) and can misbehave the
 * ways a real API server does: a watch answered with 410 Gone (an expired resourceVersion, as
 * after etcd compaction), and an outage that drops every connection.
 */

export interface ApiProxy {
  /** A kubeconfig that reaches the API server through the proxy. */
  kubeConfig: KubeConfig;
  /** Requests seen, as "METHOD path?query". */
  readonly requests: string[];
  /** Ends open watches on paths containing `pathPart`; their next watch gets 410 Gone. */
  expireWatches(pathPart: string): void;
  /** Drops every connection and refuses new ones until up() (the API server is unreachable). */
  down(): void;
  up(): void;
  close(): Promise<void>;
}

const GONE_EVENT = JSON.stringify({
  type: 'ERROR',
  object: {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: 'too old resource version: 1 (2)',
    reason: 'Expired',
    code: 410,
  },
});

export async function startApiProxy(upstream: KubeConfig): Promise<ApiProxy> {
  const cluster = upstream.getCurrentCluster();
  if (cluster === null) throw new Error('the kubeconfig has no current cluster');
  const target = new URL(cluster.server);
  const tls: RequestOptions = {};
  await upstream.applyToHTTPSOptions(tls);

  const requests: string[] = [];
  const sockets = new Set<Socket>();
  const watches = new Set<{ path: string; res: ServerResponse }>();
  const expireNext = new Set<string>();
  let isDown = false;

  const forward = (req: IncomingMessage, res: ServerResponse): void => {
    const path = req.url ?? '/';
    const headers = { ...req.headers, ...(tls.headers ?? {}), host: target.host };
    const upstreamReq = httpsRequest(
      {
        ...tls,
        protocol: 'https:',
        hostname: target.hostname,
        port: target.port,
        method: req.method,
        path,
        headers,
      },
      (upstreamRes) => {
        upstreamRes.on('error', () => res.destroy());
        res.writeHead(upstreamRes.statusCode ?? 502, upstreamRes.headers);
        upstreamRes.pipe(res);
      },
    );
    // Connections are cut on purpose here; none of that may become an unhandled error.
    upstreamReq.on('error', () => res.destroy());
    req.on('error', () => upstreamReq.destroy());
    res.on('error', () => upstreamReq.destroy());
    res.on('close', () => upstreamReq.destroy());
    req.pipe(upstreamReq);
  };

  const server: Server = createServer((req, res) => {
    const path = req.url ?? '/';
    requests.push(`${req.method} ${path}`);
    if (isDown) {
      req.socket.destroy();
      return;
    }
    const isWatch = /[?&]watch=(true|1)/.test(path);
    if (isWatch) {
      const expired = [...expireNext].find((p) => path.includes(p));
      if (expired !== undefined) {
        expireNext.delete(expired);
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(`${GONE_EVENT}\n`);
        return;
      }
      const entry = { path, res };
      watches.add(entry);
      res.on('close', () => watches.delete(entry));
    }
    forward(req, res);
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromOptions({
    clusters: [{ name: 'proxy', server: `http://127.0.0.1:${port}`, skipTLSVerify: true }],
    users: [{ name: 'proxy' }],
    contexts: [{ name: 'proxy', cluster: 'proxy', user: 'proxy' }],
    currentContext: 'proxy',
  });

  return {
    kubeConfig,
    requests,
    expireWatches(pathPart) {
      expireNext.add(pathPart);
      for (const w of [...watches]) if (w.path.includes(pathPart)) w.res.destroy();
    },
    down() {
      isDown = true;
      for (const s of sockets) s.destroy();
    },
    up() {
      isDown = false;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
