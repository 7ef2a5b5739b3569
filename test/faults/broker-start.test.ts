import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type RunningController, startController } from '../../src/app/controller.js';
import { startPostgres, type TestPostgres } from '../../testkit/postgres.js';
import { startFakeSlack } from '../../testkit/slack/index.js';
import { quietWindow } from '../helpers/quiet-window.js';
import { goAvailable, startCluster } from '../k8s/apiserver.js';
import { Cluster, capturingLogger, eventually } from '../k8s/cluster-helpers.js';
import { startTcpProxy, type TcpProxy } from './tcp-proxy.js';

/**
 * Fault matrix: `agentkourier controller` started while PostgreSQL, or Slack's Web API, cannot be
 * reached. What must hold: the process does not exit; it serves /healthz at once (a kubelet's
 * liveness probe must never kill a pod that only waits) and says on /readyz what it waits for;
 * once the peer answers, it starts and is ready. SIGTERM during the wait ends the start, in
 * Socket Mode's wait for apps.connections.open too.
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
  'the broker starting without its database or Slack (skipped only without Go, which builds kube-apiserver)',
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
      const tried = proxy.accepted;
      await vi.waitFor(() => expect(proxy.accepted).toBeGreaterThan(tried + 1), { timeout: 20_000 });
      expect(settled).toBe(false);

      proxy.mode('pass');
      broker = await starting;
      await eventually(async () => {
        const res = await fetch(`${base}/readyz`);
        expect(res.status).toBe(200);
      }, 60_000);
    });

    function slackEnv(slackUrl: string, metricsPort: number, httpPort: number, dir: string) {
      return {
        AGENTKOURIER_NAMESPACE: 'agentkourier-system',
        POD_NAME: 'agentkourier-0',
        AGENTKOURIER_STORE: `sqlite:${dir}/state.db`,
        AGENTKOURIER_LEASE_NAME: `slack-wait-${metricsPort}`,
        AGENTKOURIER_METRICS_PORT: String(metricsPort),
        AGENTKOURIER_HTTP_PORT: String(httpPort),
        SLACK_BOT_TOKEN: 'xoxb-fake-bot-token',
        SLACK_SIGNING_SECRET: 'signing-secret-123',
        SLACK_API_URL: slackUrl,
      };
    }

    it('waits for Slack with /healthz served and /readyz naming the wait, then is ready once Slack answers', async () => {
      const fake = await startFakeSlack();
      const slackProxy = await startTcpProxy(
        { host: '127.0.0.1', port: Number(new URL(fake.url).port) },
        'http',
      );
      slackProxy.mode('refuse');
      const dir = mkdtempSync(join(tmpdir(), 'kourier-slack-wait-'));
      const port = await freePort();
      let started: RunningController | undefined;
      try {
        const starting = startController({
          env: {
            ...slackEnv(slackProxy.url(new URL(fake.url).pathname), port, await freePort(), dir),
            SLACK_BOT_TOKEN: fake.botToken,
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
        // Served while Slack is still unreachable: the probes see a live, unready process.
        await eventually(async () => {
          const res = await fetch(`${base}/readyz`);
          expect(res.status).toBe(503);
          expect(await res.text()).toContain("Slack's Web API");
        }, 20_000);
        expect((await fetch(`${base}/healthz`)).status).toBe(200);
        await eventually(() => expect(slackProxy.accepted).toBeGreaterThan(1), 20_000);
        expect(settled).toBe(false);
        expect((await fetch(`${base}/healthz`)).status).toBe(200);

        slackProxy.mode('pass');
        started = await starting;
        await eventually(async () => {
          expect((await fetch(`${base}/readyz`)).status).toBe(200);
        }, 60_000);
      } finally {
        await started?.stop();
        await slackProxy.close();
        await fake.close();
        rmSync(dir, { recursive: true, force: true });
      }
    });

    it('SIGTERM while Slack cannot be reached ends the start at once', async () => {
      const dead = await freePort();
      const dir = mkdtempSync(join(tmpdir(), 'kourier-slack-wait-'));
      const port = await freePort();
      const early = new AbortController();
      try {
        const starting = startController({
          env: slackEnv(`http://127.0.0.1:${dead}/api/`, port, await freePort(), dir),
          out: () => undefined,
          logger: capturingLogger().logger,
          kubeConfig: cluster.kubeConfig,
          signal: early.signal,
        });
        await eventually(async () => {
          expect(await (await fetch(`http://127.0.0.1:${port}/readyz`)).text()).toContain("Slack's Web API");
        }, 20_000);
        const aborted = Date.now();
        early.abort();
        const result = await starting;
        expect(result.httpPort).toBe(0);
        expect(Date.now() - aborted).toBeLessThan(5_000);
        // The metrics port is closed with the rest.
        await expect(fetch(`http://127.0.0.1:${port}/healthz`)).rejects.toThrow();
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
    it('Socket Mode: /readyz names the connection it waits for; SIGTERM while apps.connections.open cannot reach Slack ends the start at once and cleanly, and nothing connects', async () => {
      const fake = await startFakeSlack();
      // auth.test answers; Socket Mode's URL does not (a 5xx counts as Slack not reachable).
      fake.serverErrorNext('apps.connections.open', 503, 1_000);
      const dir = mkdtempSync(join(tmpdir(), 'kourier-slack-wait-'));
      const port = await freePort();
      const early = new AbortController();
      try {
        const { SLACK_SIGNING_SECRET: _http, ...env } = slackEnv(fake.url, port, await freePort(), dir);
        const starting = startController({
          env: { ...env, SLACK_BOT_TOKEN: fake.botToken, SLACK_APP_TOKEN: fake.appToken },
          out: () => undefined,
          logger: capturingLogger().logger,
          kubeConfig: cluster.kubeConfig,
          signal: early.signal,
        });
        const outcome = starting.then(
          (result) => ({ stopped: result.httpPort === 0 }),
          (error: unknown) => ({ failed: error }),
        );
        await eventually(
          () => expect(fake.callsOf('apps.connections.open').length).toBeGreaterThan(1),
          30_000,
        );
        const readyz = await fetch(`http://127.0.0.1:${port}/readyz`);
        expect(readyz.status).toBe(503);
        expect(await readyz.text()).toContain(
          "waiting for Slack's Socket Mode connection (apps.connections.open",
        );
        const aborted = Date.now();
        early.abort();
        // A stop, as during auth.test: the process exits 0, not with an error.
        expect(await outcome).toEqual({ stopped: true });
        expect(Date.now() - aborted).toBeLessThan(5_000);
        await expect(fetch(`http://127.0.0.1:${port}/healthz`)).rejects.toThrow();
        const calls = fake.callsOf('apps.connections.open').length;
        await quietWindow(
          2_500,
          'longer than the next wait would have been (2 s): nothing is tried, nothing connects',
        );
        expect(fake.callsOf('apps.connections.open')).toHaveLength(calls);
        expect(fake.socketMode.connections).toHaveLength(0);
      } finally {
        await fake.close();
        rmSync(dir, { recursive: true, force: true });
      }
    });
  },
);
