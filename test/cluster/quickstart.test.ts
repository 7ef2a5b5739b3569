import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { messageEvent } from '../../testkit/slack/events.js';
import { ClusterClient, clusterInfo, eventually, ROOT } from './harness.js';
import { type NodeSlack, slackOnTheNode, USER } from './peers.js';

/**
 * The README's "In a cluster" block, run line by line as a person pastes it, on the real
 * cluster: Socket Mode (the chart's default), the chart from the OCI registry, the demo agent
 * from examples/demo-agent.yaml. What the test changes, and only that: the two tokens are the
 * fake Slack's, the registry is the local one standing in for ghcr.io (plain HTTP), and the
 * chart is pointed at the fake Slack's Web API. Then a direct message gets the demo's answer.
 */

const { info, skip } = clusterInfo();
const DM = 'D0QUICKSTART';

/** The shell block under a README heading, as commands (continuation lines joined). */
export function readmeBlock(heading: string): string[] {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf(`\n${heading}\n`));
  const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1];
  if (block === undefined) throw new Error(`no sh block under ${heading}`);
  return block
    .replace(/\\\n\s*/g, '')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
}

describe.skipIf(info === undefined)(
  `the README's cluster quick start, as pasted${skip === undefined ? '' : ` (skipped: ${skip})`}`,
  () => {
    const k = new ClusterClient(info as NonNullable<typeof info>);
    let node: NodeSlack;

    beforeAll(async () => {
      node = await slackOnTheNode(k);
      await k.hostPathVolume('quickstart-state', { namespace: 'agentkourier', name: 'agentkourier-state' });
    });

    afterAll(async () => {
      await k.helm(['uninstall', 'agentkourier', '-n', 'agentkourier']);
      // Waited for: another file installs the same release into the same namespaces.
      await k.kubectl(['delete', 'namespace', 'team-a', 'agentkourier', '--timeout=180s']);
      await k.kubectl(['delete', 'pv', 'quickstart-state', '--wait=false']);
      await node?.close();
    });

    it('every command succeeds, both resources are READY True, and a direct message gets the demo agent’s answer', async () => {
      const commands = readmeBlock('## In a cluster');
      expect(commands.some((c) => c.startsWith('helm install agentkourier oci://ghcr.io/'))).toBe(true);
      const chart = await k.publishChart();
      let listing = '';
      for (const command of commands) {
        const local = command
          .replace('xoxb-…', node.slack.botToken)
          .replace('xapp-…', node.slack.appToken)
          .replace(
            'oci://ghcr.io/agentkourier/charts/agentkourier',
            `${chart.join(' ')} --set slack.apiUrl=${node.apiUrl} --timeout 3m`,
          );
        expect(local, 'a command still holds a placeholder').not.toContain('…');
        const run = await k.shell(local);
        expect(run.code, `${command}\n${run.stderr}${run.stdout}`).toBe(0);
        if (command.startsWith('kubectl get -n team-a agentkourier')) listing = run.stdout;
      }
      // The last command, until the controller has read the demo agent's card.
      expect(listing).toMatch(/NAME/);
      await eventually(async () => {
        const out = (await k.shell('kubectl get -n team-a agentkourier')).stdout;
        if (!/agentbackend\.agentkourier\.dev\/demo-agent .* True +Ready/.test(out)) throw new Error(out);
        if (!/binding\.agentkourier\.dev\/demo-agent .* True +Ready/.test(out)) throw new Error(out);
      }, 120_000);

      // The controller connected out to Slack (Socket Mode): a direct message is answered.
      const asked = node.slack.postUserMessage({ channel: DM, user: USER, text: 'hello' });
      await node.slack.socketMode.sendEvent(
        messageEvent({ channel: DM, user: USER, text: 'hello', ts: asked.ts, channelType: 'im' }),
      );
      // The demo shows a tool step, then its answer.
      const answer = await eventually(() => {
        const replies = node.slack.messages(DM, asked.ts).filter((m) => m.user !== USER && m.ts > asked.ts);
        const reply = replies.find((m) => !m.streaming && m.text.includes('You said'));
        if (reply === undefined)
          throw new Error(
            `no settled answer in the DM thread yet: ${JSON.stringify(replies.map((m) => m.text))}`,
          );
        return reply.text;
      }, 60_000);
      expect(answer).toContain('demo agent');
      expect(answer).toContain('hello');
    });
  },
);
