import { expect } from 'vitest';
import { mentionEvent, sendSlackEvent } from '../../testkit/slack/events.js';
import { type FakeSlack, startFakeSlack } from '../../testkit/slack/index.js';
import {
  type ContractAgent,
  type ContractAgentOptions,
  startContractAgent,
} from '../agents/contract-agent.js';
import { startTcpProxy, type TcpProxy } from '../faults/tcp-proxy.js';
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
  const sent = await sendSlackEvent(
    eventsUrl,
    SIGNING_SECRET,
    mentionEvent({
      channel: CHANNEL,
      user: USER,
      text,
      ts: root.ts,
      botUserId: slack.botUserId,
      ...(threadTs === undefined ? {} : { threadTs }),
    }),
  );
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
