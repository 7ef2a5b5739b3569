import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LiveRegistry } from '../../src/core/registry.js';
import { Controller } from '../../src/k8s/controller.js';
import { goAvailable, startCluster } from '../k8s/apiserver.js';
import { Cluster, capturingLogger, eventually } from '../k8s/cluster-helpers.js';
import { type ContractAgent, startContractAgent } from '../peers/contract-agent/contract-agent.js';

/**
 * Defect: card reads ran on the reconcile workers every namespace shares, and a card that
 * trickled in was never given up on, so a handful of Bindings on one tenant's slow agent held
 * every worker and no other tenant's Binding was reconciled. Now the card reads run in a pool
 * of their own, a few per namespace, and each ends at the client's card bound.
 */

const HAS_GO = goAvailable();
const LEASE_NS = 'agentkourier-system';

describe.skipIf(!HAS_GO)(
  'one tenant’s slow agent delays no other tenant (skipped only without Go, which builds kube-apiserver)',
  () => {
    let cluster: Awaited<ReturnType<typeof startCluster>>;
    let k8s: Cluster;
    let slow: ContractAgent;
    let fast: ContractAgent;
    let controller: Controller;
    const registry = new LiveRegistry();

    beforeAll(async () => {
      cluster = await startCluster();
      k8s = new Cluster(cluster.kubeConfig);
      await k8s.applyCrds();
      for (const ns of ['team-slow', 'team-fast', LEASE_NS]) await k8s.namespace(ns);
      // Headers at once, then the card one byte a second: about ten minutes for the whole card.
      slow = await startContractAgent({ version: '1.0', card: { trickleMs: 1000 } });
      fast = await startContractAgent({ version: '1.0' });
      controller = new Controller({
        kubeConfig: cluster.kubeConfig,
        registry,
        logger: capturingLogger().logger,
        identity: 'replica-1',
        leaseNamespace: LEASE_NS,
        // Fewer workers than slow Bindings: before the fix, every worker waited on a card.
        concurrency: 2,
        timings: {
          leaseDurationMs: 3000,
          renewDeadlineMs: 2000,
          retryPeriodMs: 300,
          card: { retryBaseMs: 300, retryMaxMs: 1000, recheckMs: 60_000 },
        },
      });
      await controller.start();
      await eventually(() => expect(controller.isLeader).toBe(true), 10_000);
    }, 900_000);

    afterAll(async () => {
      await controller?.stop();
      await slow?.close();
      await fast?.close();
      await cluster?.stop();
    });

    it('[DT-2] Bindings on a trickling agent stay Pending while another namespace’s Binding becomes Ready at once', async () => {
      await k8s.create('agentbackends', 'team-slow', 'agents', { dialect: 'a2a', url: slow.endpoint });
      for (let i = 0; i < 6; i++) {
        await k8s.create('bindings', 'team-slow', `chat-${i}`, {
          backendRef: { name: 'agents' },
          identity: { userId: `U${i}` },
        });
      }
      // Let the slow card reads start and hold whatever they hold.
      await eventually(
        () => expect(slow.requests.filter((r) => r.httpMethod === 'GET').length).toBeGreaterThanOrEqual(2),
        10_000,
      );
      const started = Date.now();
      await k8s.create('agentbackends', 'team-fast', 'agents', { dialect: 'a2a', url: fast.endpoint });
      await k8s.create('bindings', 'team-fast', 'chat', {
        backendRef: { name: 'agents' },
        identity: { userId: 'U9' },
      });
      await eventually(async () => {
        const obj = await k8s.get('bindings', 'team-fast', 'chat');
        expect(obj.status?.conditions?.find((c) => c.type === 'Ready')).toMatchObject({ status: 'True' });
      }, 15_000);
      // Well inside the 60 s a slow card read may take before it is given up on.
      expect(Date.now() - started).toBeLessThan(15_000);
      // The slow tenant's Bindings were reconciled too (live clients, status), only their card waits.
      const pending = await k8s.get('bindings', 'team-slow', 'chat-5');
      expect(pending.status?.conditions?.find((c) => c.type === 'CardAccepted')).toMatchObject({
        status: 'Unknown',
      });
      // And no more than its own share of card reads ran for the slow namespace at once.
      expect(slow.requests.filter((r) => r.httpMethod === 'GET').length).toBeLessThanOrEqual(2);
    });
  },
);
