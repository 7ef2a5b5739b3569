import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ContractAgent } from '../peers/contract-agent/contract-agent.js';
import { ClusterClient, clusterInfo, eventually } from './harness.js';
import {
  agentOnTheNode,
  bindChannel,
  mention,
  type NodeSlack,
  repliesTo,
  slackOnTheNode,
  TestRelease,
} from './peers.js';

/**
 * The pod deleted in the middle of an answer, as a node drain or `kubectl delete pod` does:
 * the kubelet sends SIGTERM, kills what is left after the grace period, and the Deployment
 * starts another pod on the same PersistentVolume. The turn is in the SQLite file there; the new
 * pod takes it up from the agent's task without sending the message again, and the thread gets
 * the whole answer once.
 */

const { info, skip } = clusterInfo();
// Longer than the chart's grace period, so the answer cannot end in the pod being deleted.
const CHUNKS = Array.from({ length: 40 }, (_, i) => `Part ${i + 1} of the long answer. `);
// The thread shows it without the last chunk's trailing space.
const ANSWER = CHUNKS.join('').trimEnd();

describe.skipIf(info === undefined)(
  `a pod deleted mid-answer${skip === undefined ? '' : ` (skipped: ${skip})`}`,
  () => {
    const k = new ClusterClient(info as NonNullable<typeof info>);
    const release = new TestRelease(k, 'ak-restart');
    const SELECTOR = release.selector;
    let node: NodeSlack;
    let agent: ContractAgent;
    let ns: string;
    let team: string;

    beforeAll(async () => {
      node = await slackOnTheNode(k);
      // An agent that works on after its client went away, as the SDKs' agents do.
      agent = await agentOnTheNode(k, {
        workOn: true,
        defaultAnswer: { chunks: CHUNKS, chunkDelayMs: 1_000 },
      });
      ns = await release.prepare('ak-restart', node.slack);
      team = await k.namespace('team-restart');
    });

    afterAll(async () => {
      await release.remove();
      await node?.close();
      await agent?.close();
    });

    it('the new pod finishes the turn on the PersistentVolume: the whole answer once, one run, one send', async () => {
      await release.installHttp(await k.publishChart(), node, [`watchNamespaces={${team}}`]);
      const first = await k.readyPod(ns, SELECTOR);
      await bindChannel(k, team, agent);
      await eventually(async () => {
        const out = await k.kubectlOk(['get', '-n', team, 'bindings.agentkourier.dev', 'cluster-chat']);
        if (!/True +Ready/.test(out)) throw new Error(out);
      }, 60_000);

      const asked = await mention(node.slack, await release.eventsUrl(), 'Tell me the long story');
      // Mid-answer: a few parts are in the thread, most are still to come.
      await eventually(() => {
        const streaming = repliesTo(node.slack, asked).find((r) => r.text.includes('Part 3 '));
        if (streaming === undefined) throw new Error('the answer has not reached part 3 yet');
      }, 60_000);
      const deletedAt = agent.requests.length;
      await k.kubectlOk(['-n', ns, 'delete', 'pod', first.metadata.name, '--wait=false']);

      const second = await eventually(async () => {
        const ready = await k.readyPod(ns, SELECTOR, 5_000);
        if (ready.metadata.name === first.metadata.name) throw new Error('still the first pod');
        return ready;
      }, 180_000);
      expect(second.status.containerStatuses?.[0]?.restartCount).toBe(0);

      // The whole answer, settled, in the thread (the first pod's stream may have been ended
      // early; what counts is what the thread shows at the end).
      await eventually(
        () => {
          const replies = repliesTo(node.slack, asked);
          if (!replies.some((r) => !r.streaming && r.text === ANSWER))
            throw new Error(
              `not the whole answer yet: ${JSON.stringify(replies.map((r) => ({ text: r.text, streaming: r.streaming, state: r.streamState, edits: r.edits })))}`,
            );
        },
        120_000,
        1_000,
      );
      // One reply: the new pod finished the message the first one started, it posted no other.
      const replies = repliesTo(node.slack, asked);
      expect(replies.map((r) => r.text)).toEqual([ANSWER]);
      // The message went to the agent once and ran once; the new pod followed the same task.
      expect(agent.rpc('SendStreamingMessage')).toHaveLength(1);
      expect([...agent.runs.values()]).toEqual([1]);
      const afterDelete = agent.requests.slice(deletedAt).map((r) => r.rpcMethod);
      expect(afterDelete.filter((m) => m === 'SubscribeToTask' || m === 'GetTask').length).toBeGreaterThan(0);
    });
  },
);
