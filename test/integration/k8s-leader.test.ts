import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LiveRegistry } from '../../src/core/registry.js';
import { Controller } from '../../src/k8s/controller.js';
import { quietWindow } from '../helpers/quiet-window.js';
import { goAvailable, startCluster } from '../k8s/apiserver.js';
import { Cluster, eventually } from '../k8s/cluster-helpers.js';
import { type ContractAgent, startContractAgent } from '../peers/contract-agent/contract-agent.js';

/**
 * Several replicas on a real API server: one leader by a coordination.k8s.io/v1 Lease writes
 * status; every replica keeps live clients; a killed leader is replaced once its lease expires,
 * a stopped one at once.
 */

const HAS_GO = goAvailable();
const LEASE_NS = 'agentkourier-system';
const leaderTimings = { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 300 };
// Errors only: a watch the apiserver throttles (429) restarts with a warning, as it should, and
// a passing run should read clean.
const logger = pino({ level: 'error' });

function startChild(kubeconfigPath: string, identity: string): ChildProcess {
  return spawn(process.execPath, ['--import', 'tsx', 'test/k8s/controller-child.ts'], {
    env: {
      ...process.env,
      CONTROLLER_CHILD: JSON.stringify({
        kubeconfigPath,
        identity,
        leaseNamespace: LEASE_NS,
        timings: leaderTimings,
      }),
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
}

async function kill(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGKILL');
  await exited;
}

describe.skipIf(!HAS_GO)(
  'leader election between controller replicas (skipped only without Go, which builds kube-apiserver)',
  () => {
    let cluster: Awaited<ReturnType<typeof startCluster>>;
    let k8s: Cluster;
    let agent: ContractAgent;
    const children: ChildProcess[] = [];
    const controllers: Controller[] = [];

    function replica(identity: string, registry = new LiveRegistry()): Controller {
      const c = new Controller({
        kubeConfig: cluster.kubeConfig,
        registry,
        logger,
        identity,
        leaseNamespace: LEASE_NS,
        timings: { ...leaderTimings, card: { retryBaseMs: 300, retryMaxMs: 1000, recheckMs: 60_000 } },
      });
      controllers.push(c);
      return c;
    }

    beforeAll(async () => {
      cluster = await startCluster();
      k8s = new Cluster(cluster.kubeConfig);
      await k8s.applyCrds();
      for (const ns of ['team-a', LEASE_NS]) await k8s.namespace(ns);
      agent = await startContractAgent({ version: '1.0' });
      await k8s.create('agentbackends', 'team-a', 'agents', { dialect: 'a2a', url: agent.endpoint });
    }, 900_000);

    afterAll(async () => {
      for (const c of children) await kill(c);
      for (const c of controllers) await c.stop();
      await agent?.close();
      await cluster?.stop();
    });

    it('elects one leader; the other keeps live clients but writes nothing; a stopped leader hands over at once', async () => {
      const registryA = new LiveRegistry();
      const registryB = new LiveRegistry();
      const a = replica('replica-a', registryA);
      await a.start();
      await eventually(() => expect(a.isLeader).toBe(true), 10_000);
      const b = replica('replica-b', registryB);
      await b.start();

      await k8s.create('bindings', 'team-a', 'one', {
        backendRef: { name: 'agents' },
        identity: { userId: 'U1' },
        slack: { channels: ['C0ONE'] },
      });
      await eventually(async () => {
        expect(await k8s.condition('bindings', 'team-a', 'one')).toMatchObject({ status: 'True' });
      });
      // Every replica serves threads, so every replica holds the live client.
      await eventually(() => {
        expect(registryA.forChannel('slack', 'C0ONE')?.ref).toBe('team-a/one');
        expect(registryB.forChannel('slack', 'C0ONE')?.ref).toBe('team-a/one');
      });
      // Over several renew periods, still exactly one leader, and only it wrote events.
      await quietWindow(
        2_000,
        'six retry periods (300 ms): a second replica that could lead would have taken the Lease',
      );
      expect([a.isLeader, b.isLeader]).toEqual([true, false]);
      expect(await k8s.leaseHolder(LEASE_NS, 'agentkourier-controller')).toMatchObject({
        holder: 'replica-a',
      });
      const events = await k8s.eventsFor('team-a', 'one');
      expect(events.length).toBeGreaterThan(0);
      expect(new Set(events.map((e) => e.reportingInstance))).toEqual(new Set(['replica-a']));

      const stoppedAt = Date.now();
      await a.stop();
      await eventually(() => expect(b.isLeader).toBe(true), 10_000, 50);
      // Released, not expired: far sooner than the 3 s lease duration.
      expect(Date.now() - stoppedAt).toBeLessThan(leaderTimings.leaseDurationMs);
      expect(await k8s.leaseHolder(LEASE_NS, 'agentkourier-controller')).toMatchObject({
        holder: 'replica-b',
      });
      await b.stop();
    });

    it('takes over from a killed leader once its lease expires', async () => {
      const child = startChild(cluster.kubeconfigPath, 'replica-killed');
      children.push(child);
      await eventually(async () => {
        expect(await k8s.leaseHolder(LEASE_NS, 'agentkourier-controller')).toMatchObject({
          holder: 'replica-killed',
        });
      }, 30_000);
      const before = await k8s.leaseHolder(LEASE_NS, 'agentkourier-controller');
      const survivor = replica('replica-survivor');
      await survivor.start();
      await quietWindow(
        1_000,
        'three retry periods (300 ms): a survivor that did not respect the live Lease would have taken it',
      );
      expect(survivor.isLeader).toBe(false);

      await kill(child);
      const killedAt = Date.now();
      await eventually(() => expect(survivor.isLeader).toBe(true), 15_000, 50);
      const waited = Date.now() - killedAt;
      // Not before the lease could have expired (the last renewal was at most one retry period ago).
      expect(waited).toBeGreaterThan(leaderTimings.leaseDurationMs - leaderTimings.retryPeriodMs - 500);
      const after = await k8s.leaseHolder(LEASE_NS, 'agentkourier-controller');
      expect(after).toMatchObject({ holder: 'replica-survivor' });
      expect(after?.transitions).toBe((before?.transitions ?? 0) + 1);

      // The new leader writes status.
      await k8s.create('bindings', 'team-a', 'two', {
        backendRef: { name: 'agents' },
        identity: { userId: 'U2' },
      });
      await eventually(async () => {
        expect(await k8s.condition('bindings', 'team-a', 'two')).toMatchObject({ status: 'True' });
      });
      const events = await k8s.eventsFor('team-a', 'two');
      expect(events.map((e) => e.reportingInstance)).toContain('replica-survivor');
    });
  },
);

// Said, not silent: without Go the cluster cannot be built, and the run shows why it skipped.
if (!HAS_GO) {
  describe('leader election between controller replicas', () => {
    it.skip('skipped: Go is not installed, so kube-apiserver cannot be built here (CI has Go)', () =>
      undefined);
  });
}
