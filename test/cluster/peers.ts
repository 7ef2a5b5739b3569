import { expect } from 'vitest';
import { mentionEvent, sendSlackEvent } from '../../testkit/slack/events.js';
import { type FakeSlack, startFakeSlack } from '../../testkit/slack/index.js';
import { startTcpProxy, type TcpProxy } from '../faults/tcp-proxy.js';
import {
  type ContractAgent,
  type ContractAgentOptions,
  startContractAgent,
} from '../peers/contract-agent/contract-agent.js';
import { type ClusterClient, eventually } from './harness.js';

/**
 * The peers a pod talks to, run by the test on the node: the fake Slack Web API behind a TCP
 * proxy the test can cut (pods reach the host at the node's address; the fake listens on
 * loopback), and a contract agent listening on every address and advertising the node's.
 */

export const SIGNING_SECRET = 'cluster-test-signing-secret';
export const CHANNEL = 'C0CLUSTER01';
export const USER = 'U0ADA';

export interface NodeSlack {
  slack: FakeSlack;
  /** Between the pods and the fake: `mode('refuse')` is Slack unreachable. */
  proxy: TcpProxy;
  /** SLACK_API_URL as a pod must use it (the chart's slack.apiUrl). */
  apiUrl: string;
  close(): Promise<void>;
}

export async function slackOnTheNode(k: ClusterClient): Promise<NodeSlack> {
  const slack = await startFakeSlack();
  slack.addUser({ id: USER, name: 'ada', realName: 'Ada', email: 'ada@example.com' });
  const proxy = await startTcpProxy({ host: '127.0.0.1', port: Number(new URL(slack.url).port) }, 'http', {
    listen: '0.0.0.0',
    advertise: k.info.nodeIp,
  });
  return {
    slack,
    proxy,
    apiUrl: proxy.url('/api/'),
    close: async () => {
      await proxy.close();
      await slack.close();
    },
  };
}

export function agentOnTheNode(
  k: ClusterClient,
  options: Omit<ContractAgentOptions, 'version' | 'host'> = {},
): Promise<ContractAgent> {
  return startContractAgent({
    version: '1.0',
    host: { listen: '0.0.0.0', advertise: k.info.nodeIp },
    ...options,
  });
}

/** The Secret the chart reads (slack.existingSecret's default name) with the fake's bot token. */
export async function slackSecret(k: ClusterClient, namespace: string, slack: FakeSlack): Promise<void> {
  await k.kubectlOk([
    '-n',
    namespace,
    'create',
    'secret',
    'generic',
    'agentkourier-slack',
    `--from-literal=bot-token=${slack.botToken}`,
    `--from-literal=signing-secret=${SIGNING_SECRET}`,
  ]);
}

/** An AgentBackend for the agent and a Binding of CHANNEL to it, in the team's namespace. */
export async function bindChannel(
  k: ClusterClient,
  team: string,
  agent: ContractAgent,
  name = 'cluster-chat',
) {
  await k.apply(
    team,
    `apiVersion: agentkourier.dev/v1alpha1
kind: AgentBackend
metadata:
  name: ${name}-agent
spec:
  dialect: a2a
  url: ${agent.endpoint}
---
apiVersion: agentkourier.dev/v1alpha1
kind: Binding
metadata:
  name: ${name}
spec:
  backendRef:
    name: ${name}-agent
  identity:
    userId: cluster-test
  slack:
    channels: [${CHANNEL}]
`,
  );
}

export interface Mention {
  /** The thread's ts (the mention's own, or the thread it was sent in). */
  thread: string;
  /** The mention's ts: the broker's replies come after it. */
  ts: string;
}

/** A mention posted in the fake and sent, signed, to the broker's events URL (HTTP mode). */
export async function mention(
  slack: FakeSlack,
  eventsUrl: string,
  text: string,
  threadTs?: string,
): Promise<Mention> {
  const root = slack.postUserMessage({
    channel: CHANNEL,
    user: USER,
    text: `<@${slack.botUserId}> ${text}`,
    ...(threadTs === undefined ? {} : { threadTs }),
  });
  const event = mentionEvent({
    channel: CHANNEL,
    user: USER,
    text,
    ts: root.ts,
    botUserId: slack.botUserId,
    ...(threadTs === undefined ? {} : { threadTs }),
  });
  // A Service whose pod just became Ready may not route to it yet (kube-proxy writes its rules
  // after the endpoint appears, and refuses meanwhile). A refused connection delivered nothing,
  // so it is sent again, as Slack retries a delivery that failed.
  const sent = await deliverWhenRouted(eventsUrl, event);
  expect(sent.status, sent.body).toBe(200);
  return { thread: threadTs ?? root.ts, ts: root.ts };
}

/** The broker's replies after a mention, in its thread. */
export function repliesTo(slack: FakeSlack, m: Mention) {
  return slack.messages(CHANNEL, m.thread).filter((r) => r.user !== USER && r.ts > m.ts);
}

/** The broker's settled reply to a mention. */
export function settledReply(slack: FakeSlack, m: Mention, timeoutMs = 60_000): Promise<string> {
  return eventually(() => {
    const reply = repliesTo(slack, m).find((r) => !r.streaming);
    if (reply === undefined) throw new Error('no settled answer in the thread yet');
    return reply.text;
  }, timeoutMs);
}

/**
 * A release of the chart a test installs in a namespace of its own: the namespace, a hostPath
 * volume reserved for the release's claim, and the Slack Secret before the install; the
 * uninstall and what was made for it after.
 */
export class TestRelease {
  readonly fullname: string;
  readonly selector: string;
  namespace = '';

  constructor(
    readonly k: ClusterClient,
    readonly name: string,
  ) {
    this.fullname = `${name}-agentkourier`;
    this.selector = `app.kubernetes.io/instance=${name}`;
  }

  get volume(): string {
    return `${this.namespace}-state`;
  }

  /** Makes the namespace (`<prefix>-<random>`), the volume and the Secret with the fake's token. */
  async prepare(prefix: string, slack: FakeSlack): Promise<string> {
    this.namespace = await this.k.namespace(prefix);
    await this.k.hostPathVolume(this.volume, { namespace: this.namespace, name: `${this.fullname}-state` });
    await slackSecret(this.k, this.namespace, slack);
    return this.namespace;
  }

  /** `helm install` of `chart` in HTTP mode against the fake Web API, with more values. */
  async installHttp(chart: string[], node: NodeSlack, values: string[] = []): Promise<void> {
    const set = ['slack.mode=http', `slack.apiUrl=${node.apiUrl}`, ...values].flatMap((v) => ['--set', v]);
    await this.k.helmOk(['install', this.name, ...chart, '-n', this.namespace, ...set]);
  }

  /** The Service's events URL (http port), as kube-proxy routes it. */
  async eventsUrl(): Promise<string> {
    const ip = await this.k.kubectlOk([
      '-n',
      this.namespace,
      'get',
      'service',
      this.fullname,
      '-o',
      'jsonpath={.spec.clusterIP}',
    ]);
    return `http://${ip.trim()}:8080/slack/events`;
  }

  async remove(): Promise<void> {
    if (this.namespace === '') return;
    await this.k.helm(['uninstall', this.name, '-n', this.namespace]);
    await this.k.cleanup();
    await this.k.kubectl(['delete', 'pv', this.volume, '--wait=false']);
  }
}

/**
 * Sends a signed event, again only while the Service refuses the connection (nothing was
 * delivered then); any other failure ends it, so an event is never delivered twice.
 */
async function deliverWhenRouted(
  eventsUrl: string,
  event: Record<string, unknown>,
): Promise<{ status: number; body: string }> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      return await sendSlackEvent(eventsUrl, SIGNING_SECRET, event);
    } catch (error) {
      const code = (error as { cause?: { code?: unknown } }).cause?.code;
      if (code !== 'ECONNREFUSED' || Date.now() > deadline) throw error;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}
