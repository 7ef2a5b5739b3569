import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LiveRegistry } from '../../src/core/registry.js';
import { Controller } from '../../src/k8s/controller.js';
import { type ApiProxy, startApiProxy } from '../k8s/api-proxy.js';
import { goAvailable, startCluster } from '../k8s/apiserver.js';
import { Cluster, eventually } from '../k8s/cluster-helpers.js';
import { type ContractAgent, startContractAgent } from '../peers/contract-agent/contract-agent.js';

/**
 * The controller when the API server misbehaves, through a proxy in front of a real one: a
 * watch that expires (410 Gone) is relisted, and an outage is outlived, not fatal.
 */

const HAS_GO = goAvailable();
const LEASE_NS = 'agentkourier-system';

describe.skipIf(!HAS_GO)(
  'controller resilience on a real kube-apiserver (skipped only without Go, which builds kube-apiserver)',
  () => {
    let cluster: Awaited<ReturnType<typeof startCluster>>;
    let k8s: Cluster;
    let agent: ContractAgent;
    let proxy: ApiProxy;
    let controller: Controller;
    const registry = new LiveRegistry();

    beforeAll(async () => {
      cluster = await startCluster();
      k8s = new Cluster(cluster.kubeConfig);
      await k8s.applyCrds();
      for (const ns of ['team-a', LEASE_NS]) await k8s.namespace(ns);
      agent = await startContractAgent({ version: '1.0' });
      proxy = await startApiProxy(cluster.kubeConfig);
      controller = new Controller({
        kubeConfig: proxy.kubeConfig,
        registry,
        logger: pino({ level: 'silent' }),
        identity: 'replica-1',
        leaseNamespace: LEASE_NS,
        timings: {
          leaseDurationMs: 3000,
          renewDeadlineMs: 2000,
          retryPeriodMs: 300,
          card: { retryBaseMs: 300, retryMaxMs: 1000, recheckMs: 60_000 },
          retryBaseMs: 200,
          retryMaxMs: 1000,
          watchRestartBaseMs: 200,
          watchRestartMaxMs: 1000,
        },
      });
      await controller.start();
      await k8s.create('agentbackends', 'team-a', 'agents', { dialect: 'a2a', url: agent.endpoint });
    }, 900_000);

    afterAll(async () => {
      await controller?.stop();
      await proxy?.close();
      await agent?.close();
      await cluster?.stop();
    });

    it('relists when a watch expires (410 Gone) and keeps following changes', async () => {
      await k8s.create('bindings', 'team-a', 'one', {
        backendRef: { name: 'agents' },
        identity: { userId: 'U1' },
        slack: { channels: ['C0ONE'] },
      });
      await eventually(() => expect(registry.forChannel('slack', 'C0ONE')?.ref).toBe('team-a/one'));
      const lists = () =>
        proxy.requests.filter(
          (r) => r.startsWith('GET /apis/agentkourier.dev/v1alpha1/bindings') && !r.includes('watch='),
        ).length;
      const before = lists();
      proxy.expireWatches('/bindings');
      await eventually(() => expect(lists()).toBe(before + 1));
      await k8s.patch('bindings', 'team-a', 'one', [
        { op: 'replace', path: '/spec/slack/channels', value: ['C0TWO'] },
      ]);
      await eventually(() => expect(registry.forChannel('slack', 'C0TWO')?.ref).toBe('team-a/one'));
    });

    it('outlives an API server outage: watches restart, leadership returns, missed changes are reconciled', async () => {
      proxy.down();
      // Changed while the controller cannot see the API server.
      await k8s.create('bindings', 'team-a', 'during-outage', {
        backendRef: { name: 'agents' },
        identity: { userId: 'U2' },
        slack: { channels: ['C0OUTAGE'] },
      });
      // It cannot renew its Lease: it steps down once the renew deadline (2 s) passes.
      await eventually(() => expect(controller.isLeader).toBe(false), 10_000);
      proxy.up();
      await eventually(
        () => expect(registry.forChannel('slack', 'C0OUTAGE')?.ref).toBe('team-a/during-outage'),
        30_000,
      );
      await eventually(() => expect(controller.isLeader).toBe(true), 15_000);
      await eventually(async () => {
        expect(await k8s.condition('bindings', 'team-a', 'during-outage')).toMatchObject({ status: 'True' });
      }, 20_000);
    });

    it('follows on after kube-apiserver itself restarts', async () => {
      await cluster.restartApiServer();
      await k8s.create('bindings', 'team-a', 'after-restart', {
        backendRef: { name: 'agents' },
        identity: { userId: 'U3' },
        slack: { channels: ['C0RESTART'] },
      });
      await eventually(
        () => expect(registry.forChannel('slack', 'C0RESTART')?.ref).toBe('team-a/after-restart'),
        30_000,
      );
      await eventually(async () => {
        expect(await k8s.condition('bindings', 'team-a', 'after-restart')).toMatchObject({ status: 'True' });
      }, 20_000);
    });
  },
);

// Said, not silent: without Go the cluster cannot be built, and the run shows why it skipped.
if (!HAS_GO) {
  describe('controller resilience on a real kube-apiserver', () => {
    it.skip('skipped: Go is not installed, so kube-apiserver cannot be built here (CI has Go)', () =>
      undefined);
  });
}
