import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ContractAgent } from '../peers/contract-agent/contract-agent.js';
import { ClusterClient, clusterInfo, eventually, ROOT } from './harness.js';
import { agentOnTheNode, type NodeSlack, slackOnTheNode } from './peers.js';

/**
 * docs/install.md run top to bottom on the real cluster: every shell block of the page is either
 * run as it is written (the substitutions below, and nothing else) or set aside with the reason,
 * so a block added to the page without a decision here fails this test.
 *
 * Substituted: the tokens and secrets (`xoxb-…`, `xapp-…`, `token=…`) by the fake Slack's and the
 * test's; `oci://ghcr.io/agentkourier/charts/agentkourier` by the local registry standing in for
 * ghcr.io (plain HTTP), with the chart pointed at the fake Slack's Web API; the example agent's
 * URL by the contract agent on the node; the upgrade's `--version 0.2.0` by the version published
 * here. The namespaces the RBAC blocks name (team-b, team-c) are created first, as a reader's
 * own namespaces would exist.
 */

const { info, skip } = clusterInfo();
const PAGE = 'docs/install.md';

interface Block {
  id: string;
  script: string;
}

/** The page's sh blocks, named `<section> #<n>` (indented ones in lists included). */
function blocks(): Block[] {
  const text = readFileSync(join(ROOT, PAGE), 'utf8');
  const found: Block[] = [];
  let section = '';
  let n = 0;
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    const heading = /^## (.+)$/.exec(line);
    if (heading !== null) {
      section = heading[1] as string;
      n = 0;
      continue;
    }
    const open = /^(\s*)```sh\s*$/.exec(line);
    if (open === null) continue;
    const indent = (open[1] as string).length;
    const body: string[] = [];
    for (i++; i < lines.length && !/^\s*```\s*$/.test(lines[i] as string); i++)
      body.push((lines[i] as string).slice(indent));
    found.push({ id: `${section} #${++n}`, script: body.join('\n') });
  }
  return found;
}

type Decision = 'run' | { skip: string };

const PLAN: Record<string, Decision> = {
  'The image #1': {
    skip: 'builds and pushes with Docker to your own registry; the harness builds the same Dockerfile with buildah and pushes it to the local registry (test/cluster/builds.ts)',
  },
  'Install with SQLite (one replica) #1': 'run',
  'Install with SQLite (one replica) #2': {
    skip: 'HTTP mode, the second path: it needs an ingress controller and a public URL for Slack; chart-install.test.ts installs in HTTP mode and posts signed events through the Service',
  },
  'Install with PostgreSQL (several replicas) #1': {
    skip: 'needs a PostgreSQL the cluster reaches; the PostgreSQL store runs against a real PostgreSQL in test/integration and test/faults, and helm-chart.test.ts renders these values',
  },
  'Metrics, dashboard, alerts and traces #1': {
    skip: 'needs the Prometheus Operator (ServiceMonitor and PrometheusRule CRDs) and a collector; helm-chart.test.ts renders these values and checks them as data',
  },
  'Connect a generic A2A agent #1': 'run',
  'Connect a kagent agent #1': {
    skip: 'needs kagent in the cluster; kagent-v1 Bindings are tested against a real kagent runtime (test/peers/kagent)',
  },
  'Try a Binding without Slack #1': 'run',
  'RBAC and tenancy #1': 'run',
  'RBAC and tenancy #2': 'run',
  'Several Slack workspaces #1': {
    skip: 'OAuth needs an app with public distribution and a public redirect URL; oauth-workspaces.test.ts installs two workspaces through Bolt’s routes',
  },
  'Upgrade #1': 'run',
  'Uninstall #1': 'run',
};

describe.skipIf(info === undefined)(
  `${PAGE}, run top to bottom${skip === undefined ? '' : ` (skipped: ${skip})`}`,
  () => {
    const k = new ClusterClient(info as NonNullable<typeof info>);
    let node: NodeSlack;
    let agent: ContractAgent;
    let forward: ChildProcess | undefined;

    beforeAll(async () => {
      node = await slackOnTheNode(k);
      agent = await agentOnTheNode(k);
      await k.hostPathVolume('install-doc-state', { namespace: 'agentkourier', name: 'agentkourier-state' });
    });

    afterAll(async () => {
      forward?.kill();
      await k.helm(['uninstall', 'agentkourier', '-n', 'agentkourier']);
      // Waited for: another file installs the same release into the same namespaces.
      await k.kubectl([
        'delete',
        'namespace',
        'agentkourier',
        'team-a',
        'team-b',
        'team-c',
        '--timeout=180s',
      ]);
      await k.kubectl(['delete', 'pv', 'install-doc-state', '--wait=false']);
      await node?.close();
      await agent?.close();
    });

    it('accounts for every shell block of the page: run, or set aside with a reason', () => {
      const ids = blocks().map((b) => b.id);
      expect(ids.filter((id) => PLAN[id] === undefined)).toEqual([]);
      expect(Object.keys(PLAN).filter((id) => !ids.includes(id))).toEqual([]);
    });

    it('runs the install, the agent, the web chat, RBAC, upgrade and uninstall as written', async () => {
      const local = await k.publishChart();
      const [ref, , version] = local as [string, string, string];
      const substitute = (script: string): string =>
        script
          .replaceAll('xoxb-…', node.slack.botToken)
          .replaceAll('xapp-…', node.slack.appToken)
          .replaceAll('token=…', 'token=cluster-test-agent-token')
          .replaceAll('--version 0.2.0', `--version ${version}`)
          .replaceAll(
            'oci://ghcr.io/agentkourier/charts/agentkourier',
            `${ref} --plain-http --set slack.apiUrl=${node.apiUrl} --timeout 3m`,
          )
          .replaceAll('http://support-agent.team-a.svc:8080/a2a', agent.endpoint);
      const run = async (id: string, script = blocks().find((b) => b.id === id)?.script ?? '') => {
        expect(script, id).not.toBe('');
        const done = await k.shell(`set -euo pipefail\n${substitute(script)}`);
        expect(done.code, `${id}:\n${done.stderr}${done.stdout}`).toBe(0);
        return done.stdout;
      };

      // Install with SQLite, in Socket Mode: the pod is Ready (helm --wait), READY 1/1.
      const pods = await run('Install with SQLite (one replica) #1');
      expect(pods).toMatch(/agentkourier-\S+ +1\/1 +Running/);

      // A generic A2A agent: its Secret readable through the documented rolebinding.
      await run('Connect a generic A2A agent #1');
      await eventually(async () => {
        const out = (await k.shell('kubectl get -n team-a agentkourier')).stdout;
        if (!/binding\.agentkourier\.dev\/support .* True +Ready/.test(out)) throw new Error(out);
      }, 60_000);

      // The web chat without Slack: port-forward (the block's last line, long-running) is
      // started on its own, then the API answers with the Secret's token.
      const webchat = blocks().find((b) => b.id === 'Try a Binding without Slack #1')?.script ?? '';
      const forwardLine = webchat.split('\n').find((l) => l.includes('port-forward')) ?? '';
      expect(forwardLine).toContain('kubectl -n agentkourier port-forward deployment/agentkourier 8082');
      await run(
        'Try a Binding without Slack #1',
        webchat.replace(
          forwardLine,
          'kubectl -n agentkourier rollout status deployment/agentkourier --timeout 3m',
        ),
      );
      forward = spawn('bash', ['-c', `exec ${forwardLine}`], { cwd: ROOT, env: k.env, stdio: 'ignore' });
      const token = (
        await k.shell(
          "kubectl -n agentkourier get secret agentkourier-webchat -o jsonpath='{.data.token}' | base64 -d",
        )
      ).stdout.trim();
      await eventually(async () => {
        const res = await fetch('http://127.0.0.1:8082/api/bindings', {
          headers: { authorization: `Bearer ${token}` },
        });
        expect(res.status).toBe(200);
        const { bindings } = (await res.json()) as { bindings: Array<{ ref: string }> };
        expect(bindings.map((b) => b.ref)).toContain('team-a/support');
      }, 60_000);
      forward.kill();

      // RBAC: the namespaces the blocks name exist, as a reader's own would.
      await run(
        'create the namespaces the RBAC blocks name',
        'kubectl create namespace team-b\nkubectl create namespace team-c',
      );
      await run('RBAC and tenancy #1');
      await run('RBAC and tenancy #2');

      // Upgrade (CRDs first), then uninstall: CRDs, resources and claim kept.
      await run('Upgrade #1');
      await k.readyPod('agentkourier', 'app.kubernetes.io/instance=agentkourier', 180_000);
      await run('Uninstall #1');
      const left = await k.kubectlOk(['get', '-n', 'team-a', 'agentkourier', '-o', 'name']);
      expect(left).toContain('binding.agentkourier.dev/support');
      expect((await k.kubectlOk(['-n', 'agentkourier', 'get', 'pvc', '-o', 'name'])).trim()).toBe(
        'persistentvolumeclaim/agentkourier-state',
      );
    });
  },
);
