import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningController, startController } from '../../src/app/controller.js';
import { type FakeSlack, startFakeSlack } from '../../testkit/slack/index.js';
import { goAvailable, startCluster } from '../k8s/apiserver.js';
import { Cluster, capturingLogger, eventually } from '../k8s/cluster-helpers.js';
import { type ContractAgent, startContractAgent } from '../peers/contract-agent/contract-agent.js';
import { mentionEvent, sendSlackEvent } from '../slack/events.js';

const HAS_GO = goAvailable();
const SIGNING_SECRET = 'signing-secret-for-tests';
const CHANNEL = 'C0BROKER1';
const TRIGGER_CHANNEL = 'C0ALERTS1';

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

// `agentkourier controller` as one process: the control plane on a real kube-apiserver, Slack
// (the real Bolt against the fake Web API) and the engine, with /readyz and /metrics. A Binding
// applied with kubectl's API answers a mention in its channel.
describe.skipIf(!HAS_GO)(
  'agentkourier controller: control plane, Slack and engine together (skipped only without Go, which builds kube-apiserver)',
  () => {
    let cluster: Awaited<ReturnType<typeof startCluster>>;
    let k8s: Cluster;
    let agent: ContractAgent;
    let slack: FakeSlack;
    let broker: RunningController;
    let dir: string;

    beforeAll(async () => {
      cluster = await startCluster();
      k8s = new Cluster(cluster.kubeConfig);
      await k8s.applyCrds();
      await k8s.namespace('team-a');
      await k8s.namespace('agentkourier-system');
      agent = await startContractAgent({ version: '1.0' });
      slack = await startFakeSlack();
      slack.addUser({ id: 'U0ADA', name: 'ada', realName: 'Ada', email: 'ada@example.com' });
      dir = await mkdtemp(join(tmpdir(), 'ak-broker-'));
      broker = await startController({
        env: {
          AGENTKOURIER_NAMESPACE: 'agentkourier-system',
          POD_NAME: 'agentkourier-0',
          AGENTKOURIER_STORE: `sqlite:${join(dir, 'state.db')}`,
          AGENTKOURIER_HTTP_PORT: String(await freePort()),
          AGENTKOURIER_METRICS_PORT: String(await freePort()),
          SLACK_BOT_TOKEN: 'xoxb-test',
          SLACK_SIGNING_SECRET: SIGNING_SECRET,
          SLACK_API_URL: slack.url,
        },
        out: () => undefined,
        logger: capturingLogger().logger,
        kubeConfig: cluster.kubeConfig,
      });
    }, 180_000);

    afterAll(async () => {
      await broker?.stop();
      await slack?.close();
      await agent?.close();
      await cluster?.stop();
      if (dir !== undefined) await rm(dir, { recursive: true, force: true });
    });

    it('is ready, serves a Binding applied to the cluster in its Slack channel, and counts the turn', async () => {
      const base = `http://127.0.0.1:${broker.httpPort}`;
      const ops = `http://127.0.0.1:${broker.metricsPort}`;
      await eventually(async () => {
        const res = await fetch(`${ops}/readyz`);
        if (res.status !== 200) throw new Error(`readyz ${res.status}`);
      }, 30_000);
      await k8s.create('agentbackends', 'team-a', 'agents', { dialect: 'a2a', url: agent.endpoint });
      await k8s.create('bindings', 'team-a', 'support', {
        backendRef: { name: 'agents' },
        slack: { channels: [CHANNEL] },
        identity: { userId: 'broker-test' },
      });
      await eventually(async () => {
        const ready = await k8s.condition('bindings', 'team-a', 'support', 'Ready');
        if (ready?.status !== 'True') throw new Error(`not ready: ${ready?.reason ?? 'no status yet'}`);
      }, 30_000);

      const root = slack.postUserMessage({
        channel: CHANNEL,
        user: 'U0ADA',
        text: '<@U0BOT> hello from the cluster',
      });
      const sent = await sendSlackEvent(
        `${base}/slack/events`,
        SIGNING_SECRET,
        mentionEvent({ channel: CHANNEL, user: 'U0ADA', text: 'hello from the cluster', ts: root.ts }),
      );
      expect(sent.status).toBe(200);
      await eventually(async () => {
        const replies = slack.messages(CHANNEL, root.ts).filter((m) => m.user !== 'U0ADA');
        if (!replies.some((m) => m.text.includes('hello from the cluster') && !m.streaming))
          throw new Error('no answer yet');
      }, 20_000);
      const headers = agent.rpc('SendStreamingMessage')[0]?.headers;
      expect(headers?.['x-user-id']).toBe('broker-test');

      const metrics = await (await fetch(`${ops}/metrics`)).text();
      expect(metrics).toContain(
        'agentkourier_turns_settled_total{binding="team-a/support",outcome="completed",code=""} 1',
      );
      // Each port serves only its own: no metrics or probes beside Slack's events, no events
      // beside the metrics, so a NetworkPolicy can open one without the other.
      expect((await fetch(`${base}/metrics`)).status).toBe(404);
      expect((await fetch(`${base}/healthz`)).status).toBe(404);
      expect((await fetch(`${ops}/slack/events`, { method: 'POST', body: '{}' })).status).toBe(404);
    });

    it('serves a Binding’s webhook trigger on the events port, and the leader shows its last delivery in status', async () => {
      const base = `http://127.0.0.1:${broker.httpPort}`;
      const ops = `http://127.0.0.1:${broker.metricsPort}`;
      const token = 'hook-token-0123456789abcdef';
      await k8s.secret('team-a', 'hook-token', { token });
      await k8s.create('bindings', 'team-a', 'alerting', {
        backendRef: { name: 'agents' },
        slack: { channels: [TRIGGER_CHANNEL] },
        identity: { userId: 'broker-test' },
        triggers: [
          {
            name: 'hook',
            kind: 'webhook',
            instruction: 'Look into this.',
            tokenSecretRef: { name: 'hook-token', key: 'token' },
            slack: { channel: TRIGGER_CHANNEL },
          },
        ],
      });
      await eventually(async () => {
        const ready = await k8s.condition('bindings', 'team-a', 'alerting', 'TriggersReady');
        if (ready?.status !== 'True')
          throw new Error(`triggers not ready: ${ready?.reason ?? 'no status yet'}`);
      }, 30_000);
      const path = '/triggers/team-a/alerting/hook';
      const deliver = (auth: string, body: unknown) =>
        fetch(`${base}${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: auth },
          body: JSON.stringify(body),
        });
      expect((await deliver('Bearer wrong', { title: 'x' })).status).toBe(401);
      // Nothing but the metrics port's own paths there.
      expect((await fetch(`${ops}${path}`, { method: 'POST', body: '{}' })).status).toBe(404);
      const res = await deliver(`Bearer ${token}`, {
        title: 'Disk almost full on db-1',
        severity: 'warning',
        fields: { host: 'db-1', used: '93%' },
        dedupeKey: 'disk-db-1',
      });
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({ outcome: 'opened' });
      await eventually(async () => {
        const root = slack.messages(TRIGGER_CHANNEL).find((m) => m.threadTs === undefined);
        if (root === undefined) throw new Error('no thread yet');
        if (
          !slack
            .messages(TRIGGER_CHANNEL, root.ts)
            .some((m) => m.ts !== root.ts && m.text.includes('Look into this'))
        )
          throw new Error('no answer yet');
      }, 20_000);
      // Status lags a delivery by up to the leader's poll of the store (15 s).
      await eventually(async () => {
        const status = (await k8s.get('bindings', 'team-a', 'alerting')).status as {
          triggers?: Array<{ name: string; path?: string; lastDelivery?: { time: string; result: string } }>;
        };
        const hook = status.triggers?.find((t) => t.name === 'hook');
        expect(hook?.path).toBe(path);
        if (hook?.lastDelivery?.result !== 'opened')
          throw new Error(`last delivery: ${JSON.stringify(hook)}`);
        expect(Date.parse(hook.lastDelivery.time)).toBeGreaterThan(Date.now() - 120_000);
      }, 40_000);
      const metrics = await (await fetch(`${ops}/metrics`)).text();
      expect(metrics).toContain(
        'agentkourier_trigger_deliveries_total{binding="team-a/alerting",kind="webhook",result="opened"} 1',
      );
      expect(metrics).toContain(
        'agentkourier_trigger_deliveries_total{binding="team-a/alerting",kind="webhook",result="unauthorized"} 1',
      );
    }, 90_000);
  },
);
