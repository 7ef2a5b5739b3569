import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  buildImageTree,
  checkRuntimeImports,
  entryScript,
  type ImageTree,
  imageCommand,
  makeReadOnly,
} from '../../scripts/image-tree.js';
import { goAvailable, startCluster, type TestCluster } from '../k8s/apiserver.js';
import { Cluster } from '../k8s/cluster-helpers.js';
import { startControllerProcess, waitReady } from '../k8s/controller-process.js';

const HAS_GO = goAvailable();
const NS = 'agentkourier-system';

async function freePort(): Promise<number> {
  const { createServer } = await import('node:net');
  return new Promise((done, fail) => {
    const server = createServer();
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => done(port));
    });
  });
}

// The container image's tree, built from the Dockerfile without Docker (scripts/image-tree.ts):
// production dependencies, dist/ and package.json only, read-only, run as the image's non-root
// USER with only the volumes writable, against a real kube-apiserver.
describe.skipIf(!HAS_GO)(
  'the image tree: agentkourier controller from the Dockerfile build, non-root, read-only (skipped only without Go, which builds kube-apiserver)',
  () => {
    let image: ImageTree;
    let cluster: TestCluster;
    let k8s: Cluster;
    let dir: string;

    /** A directory the image's user may write: a volume. */
    function volume(name: string): string {
      const path = join(dir, name);
      mkdirSync(path, { recursive: true });
      if (process.getuid?.() === 0) chownSync(path, image.user.uid, image.user.gid);
      return path;
    }

    function controllerEnv(kubeconfig: string, pod: string, ports: { http: number; metrics: number }) {
      return {
        ...image.env,
        HOME: '/nonexistent',
        KUBECONFIG: kubeconfig,
        TMPDIR: volume('tmp'),
        AGENTKOURIER_NAMESPACE: NS,
        POD_NAME: pod,
        AGENTKOURIER_STORE: `sqlite:${volume('state')}/state.db`,
        AGENTKOURIER_HTTP_PORT: String(ports.http),
        AGENTKOURIER_METRICS_PORT: String(ports.metrics),
      };
    }

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), 'ak-image-'));
      chmodSync(dir, 0o755); // the image's user must reach the tree and the volumes under it
      image = buildImageTree({ out: join(dir, 'tree') });
      const problems = await checkRuntimeImports(join(image.rootfs, image.workdir), entryScript(image));
      expect(problems).toEqual([]);
      makeReadOnly(image.rootfs);
      cluster = await startCluster();
      k8s = new Cluster(cluster.kubeConfig);
      await k8s.applyCrds();
      await k8s.namespace(NS);
    }, 600_000);

    afterAll(async () => {
      await cluster?.stop();
      if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    });

    it('holds what the Dockerfile ships: dist/, production dependencies, package.json, the state dir', () => {
      const app = join(image.rootfs, image.workdir);
      expect(image.workdir).toBe('/app');
      expect(image.user.uid).not.toBe(0);
      const ls = spawnSync('ls', ['-A', app], { encoding: 'utf8' }).stdout.split('\n').filter(Boolean);
      expect(ls.sort()).toEqual(['dist', 'node_modules', 'package.json']);
      // Dev tools are not there: the build's compiler, test runner and bundler.
      for (const dev of ['typescript', 'vitest', 'esbuild', 'tsx', '@biomejs/biome']) {
        expect(spawnSync('test', ['-e', join(app, 'node_modules', dev)]).status, dev).toBe(1);
      }
      expect(spawnSync('test', ['-f', join(app, 'dist/surfaces/webchat/app.js')]).status).toBe(0);
      expect(image.volumes.sort()).toEqual(['/tmp', '/var/lib/agentkourier']);
      expect(image.entrypoint).toEqual(['node', '/app/dist/main.js']);
      expect(image.cmd).toEqual(['controller']);
    });

    it('runs the controller as the image user: ready, Lease taken, metrics served, the tree unwritable; SIGTERM drains and hands the Lease back', async () => {
      const kubeconfig = join(volume('config'), 'kubeconfig');
      copyFileSync(cluster.kubeconfigPath, kubeconfig);
      if (process.getuid?.() === 0) chownSync(kubeconfig, image.user.uid, image.user.gid);
      const ports = { http: await freePort(), metrics: await freePort() };
      const { command, args } = imageCommand(image, image.cmd);
      const proc = startControllerProcess(command, args, {
        cwd: join(image.rootfs, image.workdir),
        env: controllerEnv(kubeconfig, 'agentkourier-image-0', ports),
      });
      try {
        await waitReady(proc, ports.metrics);
        const metrics = await fetch(`http://127.0.0.1:${ports.metrics}/metrics`);
        expect(metrics.status).toBe(200);
        expect(await metrics.text()).toContain('agentkourier_');
        expect((await fetch(`http://127.0.0.1:${ports.http}/metrics`)).status).toBe(404);
        const until = Date.now() + 20_000;
        while ((await k8s.leaseHolder(NS, 'agentkourier-controller'))?.holder !== 'agentkourier-image-0') {
          if (Date.now() > until) throw new Error('the Lease was not taken');
          await new Promise((r) => setTimeout(r, 100));
        }
        // The same user cannot write into its own tree (a read-only root file system's effect).
        const write = imageCommand(image, []);
        const tried = spawnSync(
          write.command,
          [
            ...write.args.slice(0, -1),
            '-e',
            `require('node:fs').writeFileSync(${JSON.stringify(join(image.rootfs, image.workdir, 'x'))}, '')`,
          ],
          { encoding: 'utf8' },
        );
        expect(tried.status).not.toBe(0);
        expect(tried.stderr).toMatch(/EACCES|EROFS/);
      } finally {
        expect(await proc.stop()).toBe(0);
      }
      expect(proc.output()).toContain('controller draining');
      expect((await k8s.leaseHolder(NS, 'agentkourier-controller'))?.holder).toBe('');
    });

    it('stops cleanly (exit 0) on SIGTERM while it cannot reach the API server', async () => {
      const kubeconfig = join(volume('config'), 'unreachable');
      const { writeFileSync } = await import('node:fs');
      writeFileSync(
        kubeconfig,
        [
          'apiVersion: v1',
          'kind: Config',
          'clusters: [{name: c, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]',
          'users: [{name: u, user: {token: nothing}}]',
          'contexts: [{name: x, context: {cluster: c, user: u}}]',
          'current-context: x',
          '',
        ].join('\n'),
        { mode: 0o644 },
      );
      const ports = { http: await freePort(), metrics: await freePort() };
      const { command, args } = imageCommand(image, image.cmd);
      const proc = startControllerProcess(command, args, {
        cwd: join(image.rootfs, image.workdir),
        env: controllerEnv(kubeconfig, 'agentkourier-image-1', ports),
      });
      const until = Date.now() + 30_000;
      for (;;) {
        const health = await fetch(`http://127.0.0.1:${ports.metrics}/healthz`).catch(() => undefined);
        if (health?.status === 200) break;
        if (Date.now() > until) throw new Error(`never healthy:\n${proc.output()}`);
        await new Promise((r) => setTimeout(r, 100));
      }
      expect((await fetch(`http://127.0.0.1:${ports.metrics}/readyz`)).status).toBe(503);
      expect(await proc.stop()).toBe(0);
    });
  },
);
