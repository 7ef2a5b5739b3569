import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningController, startController } from '../../src/app/controller.js';
import { startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { goAvailable, startCluster } from '../k8s/apiserver.js';
import { Cluster, capturingLogger, eventually } from '../k8s/cluster-helpers.js';
import { startTcpProxy, type TcpProxy } from './tcp-proxy.js';

/**
 * Fault matrix: `agentkourier controller` started while PostgreSQL cannot be reached. What must
 * hold: the process does not exit; it serves /healthz and says on /readyz that the session
 * store is what it waits for; once PostgreSQL answers, it migrates, starts, and is ready.
 */

const HAS_GO = goAvailable();

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

describe.skipIf(!HAS_GO)(
  'the broker starting without its database (skipped only without Go, which builds kube-apiserver)',
  () => {
    let cluster: Awaited<ReturnType<typeof startCluster>>;
    let pg: TestPostgres;
    let proxy: TcpProxy;
    let broker: RunningController | undefined;

    beforeAll(async () => {
      cluster = await startCluster();
      const k8s = new Cluster(cluster.kubeConfig);
      await k8s.applyCrds();
      await k8s.namespace('agentkourier-system');
      pg = await startPostgres();
      proxy = await startTcpProxy({ host: pg.host, port: pg.port }, 'postgresql');
    }, 180_000);

    afterAll(async () => {
      await broker?.stop();
      await proxy?.close();
      await pg?.stop();
      await cluster?.stop();
    });

    it('waits for PostgreSQL, reporting not ready, then starts and is ready', async () => {
      proxy.mode('refuse');
      // /healthz and /readyz are on the metrics port; the HTTP port only takes Slack's events.
      const port = await freePort();
      const httpPort = await freePort();
      const starting = startController({
        env: {
          AGENTKOURIER_NAMESPACE: 'agentkourier-system',
          POD_NAME: 'agentkourier-0',
          AGENTKOURIER_STORE: `postgresql://postgres@127.0.0.1:${proxy.port}/kourier`,
          AGENTKOURIER_METRICS_PORT: String(port),
          AGENTKOURIER_HTTP_PORT: String(httpPort),
        },
        out: () => undefined,
        logger: capturingLogger().logger,
        kubeConfig: cluster.kubeConfig,
      });
      let settled = false;
      void starting.then(
        () => {
          settled = true;
        },
        () => {
          settled = true;
        },
      );
      const base = `http://127.0.0.1:${port}`;
      await eventually(async () => {
        const res = await fetch(`${base}/readyz`);
        expect(res.status).toBe(503);
        expect(await res.text()).toContain('session store');
      }, 20_000);
      expect((await fetch(`${base}/healthz`)).status).toBe(200);
      // Still waiting, a few tries later: it neither exited nor gave up.
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      expect(settled).toBe(false);
      expect(proxy.accepted).toBeGreaterThan(1);

      proxy.mode('pass');
      broker = await starting;
      await eventually(async () => {
        const res = await fetch(`${base}/readyz`);
        expect(res.status).toBe(200);
      }, 60_000);
    });
  },
);
