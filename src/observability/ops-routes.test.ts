import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { BrokerMetrics } from './metrics.js';
import { opsRoutes } from './ops-routes.js';

describe('ops routes', () => {
  let server: Server | undefined;
  const registry = new Registry();
  new BrokerMetrics(registry, { version: '0.0.0-test' });
  afterEach(async () => {
    await new Promise<void>((resolve) => (server === undefined ? resolve() : server.close(() => resolve())));
  });

  async function start(ready: () => string | true): Promise<string> {
    const routes = opsRoutes({ registry, ready });
    server = createServer((req, res) => {
      if (!routes(req, res)) {
        res.writeHead(404);
        res.end();
      }
    });
    await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
    const address = server?.address() as AddressInfo | undefined;
    return `http://127.0.0.1:${address?.port ?? 0}`;
  }

  it('answers health, readiness (with the reason) and metrics, and hands on other paths', async () => {
    let state: string | true = 'store not open';
    const url = await start(() => state);
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    const notReady = await fetch(`${url}/readyz`);
    expect(notReady.status).toBe(503);
    expect(await notReady.text()).toContain('store not open');
    state = true;
    expect((await fetch(`${url}/readyz`)).status).toBe(200);
    const m = await fetch(`${url}/metrics`);
    expect(m.headers.get('content-type')).toContain('text/plain; version=0.0.4');
    const text = await m.text();
    expect(text).toContain('# TYPE agentkourier_credential_rejections_total counter');
    expect(text).toMatch(/^agentkourier_build_info\{version="0\.0\.0-test",node_version="v\d+[^"]*"\} 1$/m);
    expect(text).toMatch(/^process_cpu_seconds_total /m);
    expect((await fetch(`${url}/slack/events`)).status).toBe(404);
  });
});
