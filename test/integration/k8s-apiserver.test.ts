import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import {
  ApiException,
  ApiextensionsV1Api,
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  V1MicroTime,
  VersionApi,
  Watch,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { goAvailable, startCluster, type TestCluster } from '../k8s/apiserver.js';

// A real etcd + kube-apiserver (built once by scripts/kube-bins.sh; the first build takes
// minutes). Without Go the suite is skipped, and its title says why.
const hasGo = goAvailable();
const title = hasGo
  ? 'a real kube-apiserver + etcd'
  : 'a real kube-apiserver + etcd — SKIPPED: go is not on PATH, so kube-apiserver and etcd cannot be built';
if (!hasGo) console.warn(`[apiserver.test] ${title}`);

const GROUP = 'widgets.test.agentkourier.dev';
const CRD_NAME = `gadgets.${GROUP}`;
const CEL_MESSAGE = 'spec.min must not exceed spec.max';

describe.skipIf(!hasGo)(title, () => {
  let cluster: TestCluster;
  let core: CoreV1Api;
  const namespace = `it-${Date.now().toString(36)}`;

  beforeAll(async () => {
    const started = Date.now();
    cluster = await startCluster();
    console.info(`[apiserver.test] cluster ready at ${cluster.server} in ${Date.now() - started} ms`);
    core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: namespace } } });
  }, 1_800_000); // the first run builds kube-apiserver: ~10 min on 2 idle cores

  afterAll(async () => {
    await cluster?.stop();
  }, 60_000);

  it('serves the kubeconfig admin over TLS on loopback', async () => {
    expect(cluster.server).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const ns = await core.readNamespace({ name: namespace });
    expect(ns.status?.phase).toBe('Active');
    const version = await cluster.kubeConfig.makeApiClient(VersionApi).getCode();
    expect(version.gitVersion).toMatch(/^v1\.\d+\.\d+$/); // set at build time, not v0.0.0-master
  });

  it('applies a CRD with a CEL rule, refuses an invalid object with the CEL message', async () => {
    const ext = cluster.kubeConfig.makeApiClient(ApiextensionsV1Api);
    await ext.createCustomResourceDefinition({
      body: {
        apiVersion: 'apiextensions.k8s.io/v1',
        kind: 'CustomResourceDefinition',
        metadata: { name: CRD_NAME },
        spec: {
          group: GROUP,
          scope: 'Namespaced',
          names: { plural: 'gadgets', singular: 'gadget', kind: 'Gadget', listKind: 'GadgetList' },
          versions: [
            {
              name: 'v1',
              served: true,
              storage: true,
              schema: {
                openAPIV3Schema: {
                  type: 'object',
                  properties: {
                    spec: {
                      type: 'object',
                      required: ['min', 'max'],
                      properties: { min: { type: 'integer' }, max: { type: 'integer' } },
                      x_kubernetes_validations: [{ rule: 'self.min <= self.max', message: CEL_MESSAGE }],
                    },
                  },
                },
              },
            },
          ],
        },
      },
    });
    await until(async () => {
      const crd = await ext.readCustomResourceDefinition({ name: CRD_NAME });
      return crd.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True') ?? false;
    }, 30_000);

    const custom = cluster.kubeConfig.makeApiClient(CustomObjectsApi);
    const gadget = (name: string, min: number, max: number) => ({
      group: GROUP,
      version: 'v1',
      namespace,
      plural: 'gadgets',
      body: { apiVersion: `${GROUP}/v1`, kind: 'Gadget', metadata: { name }, spec: { min, max } },
    });
    // Right after Established the new resource may take a moment to appear in discovery.
    await until(async () => {
      try {
        await custom.createNamespacedCustomObject(gadget('good', 1, 2));
        return true;
      } catch (error) {
        if (error instanceof ApiException && error.code === 404) return false;
        throw error;
      }
    }, 30_000);
    const good = (await custom.getNamespacedCustomObject({
      group: GROUP,
      version: 'v1',
      namespace,
      plural: 'gadgets',
      name: 'good',
    })) as { spec: { min: number; max: number } };
    expect(good.spec).toEqual({ min: 1, max: 2 });

    const refusal = await custom.createNamespacedCustomObject(gadget('bad', 3, 2)).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(refusal).toBeInstanceOf(ApiException);
    const { code, body } = refusal as ApiException<unknown>;
    expect(code).toBe(422);
    expect(typeof body === 'string' ? body : JSON.stringify(body)).toContain(CEL_MESSAGE);
  });

  it('creates a coordination.k8s.io/v1 Lease with MicroTime fields', async () => {
    const coordination = cluster.kubeConfig.makeApiClient(CoordinationV1Api);
    const now = new V1MicroTime();
    await coordination.createNamespacedLease({
      namespace,
      body: {
        metadata: { name: 'leader' },
        spec: { holderIdentity: 'me', leaseDurationSeconds: 15, acquireTime: now, renewTime: now },
      },
    });
    const lease = await coordination.readNamespacedLease({ name: 'leader', namespace });
    expect(lease.spec?.holderIdentity).toBe('me');
    expect(new Date(lease.spec?.renewTime ?? 0).getTime()).toBe(now.getTime());
  });

  it('creates and reads a Secret', async () => {
    await core.createNamespacedSecret({
      namespace,
      body: { metadata: { name: 'token' }, stringData: { token: 's3cret' } },
    });
    const secret = await core.readNamespacedSecret({ name: 'token', namespace });
    expect(Buffer.from(secret.data?.token ?? '', 'base64').toString()).toBe('s3cret');
  });

  it('delivers an ADDED event to a watch', async () => {
    let resolveAdded: (name: string) => void = () => undefined;
    let rejectAdded: (error: unknown) => void = () => undefined;
    const added = new Promise<string>((resolve, reject) => {
      resolveAdded = resolve;
      rejectAdded = reject;
    });
    const watch = new Watch(cluster.kubeConfig);
    // Resolves once the watch request has its response headers: the watch is open.
    const controller = await watch.watch(
      `/api/v1/namespaces/${namespace}/configmaps`,
      {},
      (phase, object: { metadata?: { name?: string } }) => {
        if (phase === 'ADDED' && object.metadata?.name === 'watched') resolveAdded(object.metadata.name);
      },
      (error: unknown) => rejectAdded(error ?? new Error('the watch ended before the ADDED event')),
    );
    const timer = setTimeout(() => rejectAdded(new Error('no ADDED event within 20 s')), 20_000);
    try {
      await core.createNamespacedConfigMap({
        namespace,
        body: { metadata: { name: 'watched' }, data: { a: 'b' } },
      });
      await expect(added).resolves.toBe('watched');
    } finally {
      clearTimeout(timer);
      controller.abort();
    }
  });

  it('comes back after restartApiServer with the data intact', async () => {
    await cluster.restartApiServer();
    const secret = await core.readNamespacedSecret({ name: 'token', namespace });
    expect(secret.metadata?.name).toBe('token');
  });

  it('stop() leaves no process and no temp dir behind', async () => {
    const dir = dirname(cluster.kubeconfigPath);
    expect(processesMentioning(dir).length).toBeGreaterThanOrEqual(2); // etcd, kube-apiserver
    await cluster.stop();
    expect(processesMentioning(dir)).toEqual([]);
    expect(existsSync(dir)).toBe(false);
  });
});

/** Command lines of live (non-zombie) processes that name `text`, read from /proc. */
function processesMentioning(text: string): string[] {
  const found: string[] = [];
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
      if (cmdline.includes(text)) found.push(`${pid}: ${cmdline}`);
    } catch {} // gone meanwhile
  }
  return found;
}

async function until(check: () => Promise<boolean>, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}
