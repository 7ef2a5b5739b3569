import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ContractAgent } from '../peers/contract-agent/contract-agent.js';
import { CHART, ClusterClient, clusterInfo, eventually } from './harness.js';
import {
  agentOnTheNode,
  bindChannel,
  mention,
  type NodeSlack,
  settledReply,
  slackOnTheNode,
  TestRelease,
} from './peers.js';

/**
 * The chart as a platform engineer installs it, on a real kubelet: from an OCI registry (the
 * local one stands in for ghcr.io, image and chart alike), under the chart's securityContext and
 * read-only root, a real Service in front of the pod, `kubectl get` as the README shows it, an
 * upgrade to another image tag and an uninstall. Slack is the fake Web API on the node; Slack's
 * signed events reach the chart's Service through kube-proxy as an ingress would send them.
 */

const { info, skip } = clusterInfo();
const ANSWER = 'The agent answered from outside the cluster, through the pod.';

describe.skipIf(info === undefined)(
  `the chart on a real kubelet${skip === undefined ? '' : ` (skipped: ${skip})`}`,
  () => {
    const k = new ClusterClient(info as NonNullable<typeof info>);
    const release = new TestRelease(k, 'ak-install');
    const { name: RELEASE, fullname: FULLNAME, selector: SELECTOR } = release;
    let node: NodeSlack;
    let agent: ContractAgent;
    let ns: string;
    let team: string;
    let eventsUrl: string;
    let firstPod: string;

    beforeAll(async () => {
      node = await slackOnTheNode(k);
      agent = await agentOnTheNode(k, { defaultAnswer: { chunks: [ANSWER] } });
      ns = await release.prepare('ak-install', node.slack);
      team = await k.namespace('team-install');
    });

    afterAll(async () => {
      await release.remove();
      await node?.close();
      await agent?.close();
    });

    it('helm install oci://: the pod is Running and Ready, as the chart user, under its securityContext, read-only root', async () => {
      await release.installHttp(await k.publishChart(), node, [`watchNamespaces={${team}}`]);
      const pod = await k.readyPod(ns, SELECTOR);
      firstPod = pod.metadata.name;
      const [container] = pod.status.containerStatuses ?? [];
      expect(container?.image).toBe(`ghcr.io/agentkourier/agentkourier:${k.info.appVersion}`);
      expect(container?.restartCount).toBe(0);
      // Who it runs as, and where it may write, asked of the running container itself.
      expect((await k.kubectlOk(['-n', ns, 'exec', firstPod, '--', 'id', '-u'])).trim()).toBe('1000');
      const rootWrite = await k.kubectl(['-n', ns, 'exec', firstPod, '--', 'touch', '/probe']);
      expect(rootWrite.code).not.toBe(0);
      expect(rootWrite.stderr).toMatch(/read-only file system/i);
      await k.kubectlOk([
        '-n',
        ns,
        'exec',
        firstPod,
        '--',
        'touch',
        '/var/lib/agentkourier/probe',
        '/tmp/probe',
      ]);
      const capabilities = await k.kubectlOk([
        '-n',
        ns,
        'exec',
        firstPod,
        '--',
        'grep',
        'CapEff',
        '/proc/1/status',
      ]);
      expect(capabilities.trim()).toMatch(/^CapEff:\s+0+$/);
      eventsUrl = await release.eventsUrl();
    });

    it('kubectl get shows READY and REASON as the README says', async () => {
      await bindChannel(k, team, agent);
      await k.apply(
        team,
        `apiVersion: agentkourier.dev/v1alpha1
kind: Binding
metadata:
  name: dangling
spec:
  backendRef:
    name: no-such-backend
  identity:
    userId: cluster-test
  slack:
    channels: [C0NOWHERE01]
`,
      );
      const table = await eventually(async () => {
        const out = await k.kubectlOk(['get', '-n', team, 'agentkourier']);
        if (!/agentbackend\.agentkourier\.dev\/cluster-chat-agent .* True +Ready/.test(out))
          throw new Error(out);
        if (!/binding\.agentkourier\.dev\/cluster-chat .* True +Ready/.test(out)) throw new Error(out);
        if (!/binding\.agentkourier\.dev\/dangling .* False +\S+/.test(out)) throw new Error(out);
        return out;
      }, 60_000);
      const headers = table.split('\n').filter((line) => line.startsWith('NAME'));
      expect(headers).toHaveLength(2);
      for (const header of headers) expect(header).toMatch(/ READY +REASON +AGE$/);
      expect(table).toMatch(/dangling .* False +BackendNotFound/);
    });

    it("a signed Slack event sent to the chart's Service gets the agent's exact answer in the thread", async () => {
      const asked = await mention(node.slack, eventsUrl, 'What is in the cluster?');
      expect(await settledReply(node.slack, asked)).toBe(ANSWER);
      expect(agent.rpc('SendStreamingMessage')).toHaveLength(1);
    });

    it('helm upgrade to a new image tag rolls the pod onto it; the thread carries on', async () => {
      const tag = `${k.info.appVersion}-upgrade.1`;
      await k.pushTag(tag);
      const before = await mention(node.slack, eventsUrl, 'Before the upgrade');
      expect(await settledReply(node.slack, before)).toBe(ANSWER);
      // The same chart from the working tree: an upgrade may come from another chart source.
      await k.helmOk(['upgrade', RELEASE, CHART, '-n', ns, '--reuse-values', '--set', `image.tag=${tag}`]);
      const pod = await eventually(async () => {
        const ready = await k.readyPod(ns, SELECTOR, 5_000);
        if (ready.metadata.name === firstPod) throw new Error('still the first pod');
        return ready;
      }, 120_000);
      // The spec names the tag; the status may name either tag, as both are the same image here.
      const spec = await k.kubectlOk([
        '-n',
        ns,
        'get',
        'pod',
        pod.metadata.name,
        '-o',
        'jsonpath={.spec.containers[0].image}',
      ]);
      expect(spec).toBe(`ghcr.io/agentkourier/agentkourier:${tag}`);
      // The Service routes to the new pod once kube-proxy has its endpoint (Slack would redeliver).
      await eventually(async () => {
        const res = await fetch(eventsUrl.replace(':8080/slack/events', ':9090/readyz'));
        expect(res.status).toBe(200);
      }, 30_000);
      const after = await mention(node.slack, eventsUrl, 'After the upgrade, same thread', before.thread);
      expect(await settledReply(node.slack, after)).toBe(ANSWER);
      // Both turns of that thread are one A2A session: the new pod's send carries the context the
      // agent made for the turn before the upgrade.
      const last = agent.rpc('SendStreamingMessage').at(-1)?.body as
        | { params?: { message?: { contextId?: string } } }
        | undefined;
      const context = last?.params?.message?.contextId;
      expect(context).toBeDefined();
      expect([...agent.tasks.values()].filter((t) => t.contextId === context)).toHaveLength(2);
    });

    it('helm uninstall removes the controller and keeps the CRDs, the resources and the claim', async () => {
      await k.helmOk(['uninstall', RELEASE, '-n', ns, '--wait']);
      await eventually(async () => {
        expect((await k.kubectlOk(['-n', ns, 'get', 'deployments,pods', '-o', 'name'])).trim()).toBe('');
      }, 60_000);
      for (const crd of ['agentbackends.agentkourier.dev', 'bindings.agentkourier.dev'])
        await k.kubectlOk(['get', 'crd', crd]);
      const left = await k.kubectlOk(['get', '-n', team, 'agentkourier', '-o', 'name']);
      expect(left).toContain('binding.agentkourier.dev/cluster-chat');
      expect(left).toContain('agentbackend.agentkourier.dev/cluster-chat-agent');
      expect((await k.kubectlOk(['-n', ns, 'get', 'pvc', '-o', 'name'])).trim()).toBe(
        `persistentvolumeclaim/${FULLNAME}-state`,
      );
    });
  },
);
