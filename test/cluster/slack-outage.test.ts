import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClusterClient, clusterInfo, eventually, type Pod, podSchema } from './harness.js';
import { type NodeSlack, slackOnTheNode, TestRelease } from './peers.js';

/**
 * Slack's Web API unreachable while the pod starts, on a real kubelet with probes far tighter
 * than the chart's: the controller serves its health port at once and waits, so the kubelet
 * sees a live, unready container — never killed by its liveness probe — that becomes Ready once
 * Slack answers. (The controller used to open that port only after auth.test answered, and the
 * kubelet killed it every few probes.)
 */

const { info, skip } = clusterInfo();
/** Liveness successes the kubelet must record while Slack is away: far past failureThreshold. */
const LIVE_PROBES = 10;

/** The kubelet's count of this pod's probes of a type and result (its /metrics/probes). */
async function probeCount(k: ClusterClient, pod: Pod, type: string, result: string): Promise<number> {
  const text = await k.kubectlOk(['get', '--raw', `/api/v1/nodes/${k.info.nodeName}/proxy/metrics/probes`]);
  let total = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith('prober_probe_total{')) continue;
    if (!line.includes(`pod="${pod.metadata.name}"`) || !line.includes(`probe_type="${type}"`)) continue;
    if (!line.includes(`result="${result}"`)) continue;
    total += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return total;
}

describe.skipIf(info === undefined)(
  `Slack unreachable while the pod starts${skip === undefined ? '' : ` (skipped: ${skip})`}`,
  () => {
    const k = new ClusterClient(info as NonNullable<typeof info>);
    const release = new TestRelease(k, 'ak-outage');
    const SELECTOR = release.selector;
    let node: NodeSlack;
    let ns: string;

    beforeAll(async () => {
      node = await slackOnTheNode(k);
      ns = await release.prepare('ak-outage', node.slack);
    });

    afterAll(async () => {
      await release.remove();
      await node?.close();
    });

    it('the pod stays up and NotReady, is never killed by its probes, and is Ready once Slack answers', async () => {
      node.proxy.mode('refuse');
      // After the chart's initial delay, two failed liveness probes a second apart would
      // restart the container.
      await release.installHttp(await k.publishChart(), node, [
        'probes.liveness.initialDelaySeconds=5',
        'probes.liveness.periodSeconds=1',
        'probes.liveness.timeoutSeconds=1',
        'probes.liveness.failureThreshold=2',
        'probes.readiness.periodSeconds=1',
      ]);

      // The container runs, says what it waits for, and the kubelet's liveness probe keeps
      // passing while readiness fails.
      const pod = await eventually(
        async () => {
          const [p, ...more] = await k.pods(ns, SELECTOR);
          if (p === undefined || more.length > 0) throw new Error('not one pod yet');
          if (p.status.podIP === undefined || p.status.containerStatuses?.[0]?.state?.running === undefined)
            throw new Error(`pod ${p.metadata.name} not running yet`);
          return p;
        },
        120_000,
        500,
      );
      await eventually(async () => {
        const res = await fetch(`http://${pod.status.podIP}:9090/readyz`);
        expect(res.status).toBe(503);
        expect(await res.text()).toMatch(/waiting for Slack's Web API \(auth\.test: slack_unavailable\)/);
      }, 60_000);
      await eventually(
        async () => {
          const live = await probeCount(k, pod, 'Liveness', 'successful');
          if (live < LIVE_PROBES) throw new Error(`${live} successful liveness probes so far`);
        },
        60_000,
        1_000,
      );
      expect(await probeCount(k, pod, 'Liveness', 'failed')).toBe(0);
      expect(await probeCount(k, pod, 'Readiness', 'failed')).toBeGreaterThanOrEqual(LIVE_PROBES / 2);
      const waiting = await k.json(['-n', ns, 'get', 'pod', pod.metadata.name], podSchema);
      expect(waiting.status.containerStatuses?.[0]?.restartCount).toBe(0);
      expect(waiting.status.containerStatuses?.[0]?.ready).toBe(false);
      expect(node.proxy.accepted).toBeGreaterThan(1);

      // Slack answers: the same container becomes Ready.
      node.proxy.mode('pass');
      const ready = await k.readyPod(ns, SELECTOR, 60_000);
      expect(ready.metadata.uid).toBe(pod.metadata.uid);
      expect(ready.status.containerStatuses?.[0]?.restartCount).toBe(0);
      expect((await fetch(`http://${pod.status.podIP}:9090/readyz`)).status).toBe(200);
    });
  },
);
