import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import {
  ApiException,
  ApiextensionsV1Api,
  AppsV1Api,
  CoreV1Api,
  KubeConfig,
  RbacAuthorizationV1Api,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseDockerfile } from '../../scripts/image-tree.js';
import { type FakeSlack, startFakeSlack } from '../../testkit/slack/index.js';
import { goAvailable, startCluster, type TestCluster } from '../k8s/apiserver.js';
import { Cluster, eventually } from '../k8s/cluster-helpers.js';
import {
  type ControllerProcess,
  forbidden,
  serviceAccountKubeconfig,
  startControllerProcess,
  waitReady,
} from '../k8s/controller-process.js';
import { CHART, deploymentShape, helmBinary, resolveEnv, runHelm, setArgs } from '../k8s/helm.js';
import { parseCreateRoleBinding, runCreateRoleBinding } from '../k8s/kubectl.js';
import { type ContractAgent, startContractAgent } from '../peers/contract-agent/contract-agent.js';
import { mentionEvent, sendSlackEvent } from '../slack/events.js';

const HAS_GO = goAvailable();
const ROOT = resolve(import.meta.dirname, '../..');
const RELEASE = 'ak';
const NS = 'agentkourier-system';
const FULLNAME = 'ak-agentkourier';
const SIGNING_SECRET = 'signing-secret-for-the-chart-test';
const CHANNEL_A = 'C0TEAMA01';
const CHANNEL_B = 'C0TEAMB01';
const CHANNEL_C = 'C0TEAMC01';
const WEBCHAT_TOKEN = 'webchat-token-for-the-chart-test';

async function freePort(): Promise<number> {
  const { createServer } = await import('node:net');
  return new Promise((done, fail) => {
    const server = createServer();
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => done(port));
    });
  });
}

function status(error: unknown): number | undefined {
  return error instanceof ApiException ? error.code : undefined;
}

async function statusOf(call: Promise<unknown>): Promise<number> {
  try {
    await call;
    return 200;
  } catch (error) {
    const code = status(error);
    if (code === undefined) throw error;
    return code;
  }
}

// The newcomer's path, proved on a real kube-apiserver: `helm install`, two applies, the first
// answer in Slack. The controller runs as a process with the installed Deployment's command,
// arguments and environment, authenticated as the chart's ServiceAccount with a TokenRequest
// token, so every call it makes is authorized by the chart's RBAC and nothing else.
describe.skipIf(!HAS_GO)(
  'helm install on the test kube-apiserver, the controller as the chart ServiceAccount (skipped only without Go, which builds kube-apiserver and helm)',
  () => {
    let cluster: TestCluster;
    let k8s: Cluster;
    let helm: string;
    let agent: ContractAgent;
    let slack: FakeSlack;
    let dir: string;
    let ports: { http: number; metrics: number; webchat: number };
    let controller: ControllerProcess | undefined;
    const helmEnv = (): Record<string, string> => ({ KUBECONFIG: cluster.kubeconfigPath });

    /** The installed Deployment, read back from the API server. */
    async function installedDeployment() {
      const apps = cluster.kubeConfig.makeApiClient(AppsV1Api);
      const raw = await apps.readNamespacedDeployment({ namespace: NS, name: FULLNAME });
      return deploymentShape.parse(JSON.parse(JSON.stringify(raw)));
    }

    /**
     * Starts the Deployment's container as a process, as the kubelet would: the image's
     * ENTRYPOINT (from the Dockerfile) with the container's args, `node` being this project's
     * Node 24 and /app this clone's build; env resolved from the pod and the Secrets; each
     * volume mount a directory of the test's.
     */
    async function startPod(podName: string): Promise<ControllerProcess> {
      const deployment = await installedDeployment();
      const pod = deployment.spec.template.spec;
      const container = pod.containers[0];
      if (container === undefined) throw new Error('the Deployment has no container');
      const mounts: Record<string, string> = {};
      for (const m of container.volumeMounts) {
        mounts[m.mountPath] = join(dir, 'volumes', m.name);
        mkdirSync(mounts[m.mountPath] as string, { recursive: true });
      }
      const core = cluster.kubeConfig.makeApiClient(CoreV1Api);
      const env = await resolveEnv(
        container,
        { namespace: NS, name: podName, serviceAccountName: pod.serviceAccountName },
        async (name, key) => {
          const secret = await core.readNamespacedSecret({ namespace: NS, name });
          const value = secret.data?.[key];
          if (value === undefined) throw new Error(`Secret ${name} has no key ${key}`);
          return Buffer.from(value, 'base64').toString('utf8');
        },
        mounts,
      );
      const kubeconfig = join(dir, `${podName}.kubeconfig`);
      await serviceAccountKubeconfig(cluster.kubeConfig, NS, pod.serviceAccountName, kubeconfig);
      const image = parseDockerfile(readFileSync(join(ROOT, 'Dockerfile'), 'utf8')).at(-1);
      const entrypoint = JSON.parse(
        image?.instructions.find((i) => i.op === 'ENTRYPOINT')?.args ?? '[]',
      ) as string[];
      const [program, ...rest] = [...entrypoint, ...(container.command ?? []), ...(container.args ?? [])];
      expect(program).toBe('node');
      const args = rest.map((a) => (a.startsWith('/app/') ? join(ROOT, a.slice('/app/'.length)) : a));
      return startControllerProcess(process.execPath, args, {
        cwd: ROOT,
        env: { ...env, KUBECONFIG: kubeconfig, TMPDIR: mounts['/tmp'] ?? dir, NODE_ENV: 'production' },
      });
    }

    async function answerIn(channel: string, text: string, waitMs = 20_000): Promise<string | undefined> {
      const root = slack.postUserMessage({ channel, user: 'U0ADA', text: `<@U0BOT> ${text}` });
      const sent = await sendSlackEvent(
        `http://127.0.0.1:${ports.http}/slack/events`,
        SIGNING_SECRET,
        mentionEvent({ channel, user: 'U0ADA', text, ts: root.ts }),
      );
      expect(sent.status).toBe(200);
      try {
        return await eventually(() => {
          const reply = slack.messages(channel, root.ts).find((m) => m.user !== 'U0ADA' && !m.streaming);
          if (reply === undefined) throw new Error('no answer yet');
          return reply.text;
        }, waitMs);
      } catch {
        return undefined;
      }
    }

    beforeAll(async () => {
      [cluster, helm] = await Promise.all([startCluster(), helmBinary()]);
      k8s = new Cluster(cluster.kubeConfig);
      for (const ns of [NS, 'team-a', 'team-b', 'team-c']) await k8s.namespace(ns);
      // The image's dist/, as the Dockerfile's build stage makes it.
      execFileSync('npm', ['run', 'build'], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
      agent = await startContractAgent({ version: '1.0' });
      slack = await startFakeSlack();
      slack.addUser({ id: 'U0ADA', name: 'ada', realName: 'Ada', email: 'ada@example.com' });
      dir = mkdtempSync(join(tmpdir(), 'ak-helm-'));
      ports = { http: await freePort(), metrics: await freePort(), webchat: await freePort() };
      // The one thing made before `helm install`: the Slack Secret the chart points at.
      await k8s.secret(NS, 'agentkourier-slack', {
        'bot-token': 'xoxb-test',
        'signing-secret': SIGNING_SECRET,
      });
      await k8s.secret(NS, 'agentkourier-webchat', { token: WEBCHAT_TOKEN });
    }, 900_000);

    afterAll(async () => {
      await controller?.stop();
      await slack?.close();
      await agent?.close();
      await cluster?.stop();
      if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    });

    it('[install] helm install, two applies, first answer; every call through the chart RBAC', async () => {
      const install = await runHelm(
        helm,
        [
          'install',
          RELEASE,
          CHART,
          '--namespace',
          NS,
          ...setArgs({
            'ports.http': String(ports.http),
            'ports.metrics': String(ports.metrics),
            'slack.apiUrl': slack.url,
            // Slack's events come to the Service here (Socket Mode is the default).
            'slack.mode': 'http',
            // Every namespace watched, Secrets read in team-a only.
            'rbac.secretNamespaces': '{team-a}',
            'webchat.enabled': 'true',
            'webchat.existingSecret': 'agentkourier-webchat',
            'webchat.port': String(ports.webchat),
          }),
        ],
        helmEnv(),
      );
      expect(install.stderr).toBe('');
      expect(install.code).toBe(0);
      // NOTES.txt says what comes next, with the commands.
      expect(install.stdout).toContain('kubectl apply -n team-a -f -');
      expect(install.stdout).toContain('kind: Binding');
      expect(install.stdout).toContain(
        'It reads Secrets only where it is granted: team-a (rbac.secretNamespaces).',
      );
      expect(install.stdout).toContain(`kubectl create rolebinding ${FULLNAME}-secrets -n <namespace>`);
      expect(install.stdout).toContain(
        `kubectl -n ${NS} port-forward deployment/${FULLNAME} ${ports.webchat}`,
      );
      expect(install.stdout).toContain(`http://localhost:${ports.webchat}/#token=<token>`);

      controller = await startPod(`${FULLNAME}-5d8f7c9b4-a1b2c`);
      await waitReady(controller, ports.metrics);

      // Two applies: the agent (with its token in a Secret) and the Binding to a channel.
      await k8s.secret('team-a', 'agent-token', { token: 'team-a-token' });
      await k8s.create('agentbackends', 'team-a', 'agents', { dialect: 'a2a', url: agent.endpoint });
      await k8s.create('bindings', 'team-a', 'support', {
        backendRef: { name: 'agents' },
        identity: { tokenSecretRef: { name: 'agent-token', key: 'token' } },
        slack: { channels: [CHANNEL_A] },
      });
      await eventually(async () => {
        const ready = await k8s.condition('bindings', 'team-a', 'support');
        if (ready?.status !== 'True') throw new Error(`not ready: ${ready?.reason ?? 'no status yet'}`);
      }, 30_000);

      expect(await answerIn(CHANNEL_A, 'hello from helm')).toContain('hello from helm');
      // The web chat the chart turned on: the token from its Secret, the Binding by namespace/name.
      const chat = `http://127.0.0.1:${ports.webchat}`;
      expect((await fetch(`${chat}/api/bindings`)).status).toBe(401);
      const auth = { authorization: `Bearer ${WEBCHAT_TOKEN}` };
      expect(await (await fetch(`${chat}/api/bindings`, { headers: auth })).json()).toEqual({
        bindings: [expect.objectContaining({ ref: 'team-a/support', threadCount: 0 })],
      });
      const created = await fetch(`${chat}/api/threads`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify({ binding: 'team-a/support', text: 'hello from the web chat' }),
      });
      expect(created.status).toBe(201);
      const { thread } = (await created.json()) as { thread: { id: string } };
      const answer = await eventually(async () => {
        const view = (await (await fetch(`${chat}/api/threads/${thread.id}`, { headers: auth })).json()) as {
          messages: Array<{ kind: string; final?: boolean; text: string }>;
        };
        const final = view.messages.find((m) => m.kind === 'answer' && m.final === true);
        if (final === undefined) throw new Error('no answer in the web chat yet');
        return final.text;
      }, 20_000);
      expect(answer).toContain('hello from the web chat');
      expect(controller.output()).not.toContain(WEBCHAT_TOKEN);
      // The token came from the Secret (list+watch on secrets), sent as the Binding's identity.
      expect(agent.rpc('SendStreamingMessage').at(-1)?.headers.authorization).toBe('Bearer team-a-token');
      // Status was patched (Ready above), Events created, the Lease taken: each verb in use.
      const events = await k8s.eventsFor('team-a', 'support');
      expect(events.some((e) => e.reportingInstance === `${FULLNAME}-5d8f7c9b4-a1b2c`)).toBe(true);
      expect((await k8s.leaseHolder(NS, 'agentkourier-controller'))?.holder).toBe(
        `${FULLNAME}-5d8f7c9b4-a1b2c`,
      );
      expect(forbidden(controller.output())).toEqual([]);
    });

    it('[secrets] a Binding whose Secret is in a namespace not granted says so; the RoleBinding it names makes it ready', async () => {
      // The ClusterRole reads no Secrets: the controller may not list team-c's.
      await k8s.secret('team-c', 'agent-token', { token: 'team-c-token' });
      await k8s.create('agentbackends', 'team-c', 'agents', { dialect: 'a2a', url: agent.endpoint });
      await k8s.create('bindings', 'team-c', 'support', {
        backendRef: { name: 'agents' },
        identity: { tokenSecretRef: { name: 'agent-token', key: 'token' } },
        slack: { channels: [CHANNEL_C] },
      });
      const refused = await eventually(async () => {
        const ready = await k8s.condition('bindings', 'team-c', 'support');
        if (ready?.reason !== 'SecretForbidden')
          throw new Error(`not refused yet: ${ready?.reason ?? 'no status'}`);
        return ready;
      }, 30_000);
      expect(refused.status).toBe('False');
      expect(refused.message).toContain('identity.tokenSecretRef: Secret "agent-token" cannot be read');
      expect(refused.message).toContain('may not list Secrets in namespace "team-c"');
      expect(refused.message).toContain('rbac.secretNamespaces (add team-c)');
      // The command the status gives is the one a person runs, as it is.
      const command = /kubectl create rolebinding .*$/.exec(refused.message ?? '')?.[0] ?? '';
      expect(parseCreateRoleBinding(command)).toEqual({
        name: `${FULLNAME}-secrets`,
        namespace: 'team-c',
        clusterRole: `${FULLNAME}-secret-reader`,
        serviceAccount: { namespace: NS, name: FULLNAME },
      });
      // Nothing reached the agent from team-c meanwhile.
      expect(agent.rpc('SendStreamingMessage').map((r) => r.headers.authorization)).not.toContain(
        'Bearer team-c-token',
      );

      await runCreateRoleBinding(command, cluster);
      const made = await cluster.kubeConfig
        .makeApiClient(RbacAuthorizationV1Api)
        .readNamespacedRoleBinding({ namespace: 'team-c', name: `${FULLNAME}-secrets` });
      expect([made.roleRef, made.subjects]).toEqual([
        { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: `${FULLNAME}-secret-reader` },
        [{ kind: 'ServiceAccount', name: FULLNAME, namespace: NS }],
      ]);
      // The refused list is retried with backoff (30 s at most between tries).
      await eventually(async () => {
        const ready = await k8s.condition('bindings', 'team-c', 'support');
        if (ready?.status !== 'True') throw new Error(`not ready: ${ready?.reason ?? 'no status yet'}`);
      }, 60_000);
      expect(await answerIn(CHANNEL_C, 'hello from team-c')).toContain('hello from team-c');
      expect(agent.rpc('SendStreamingMessage').at(-1)?.headers.authorization).toBe('Bearer team-c-token');
      // Logged once, with the same words, though the list was refused on every try.
      const refusals = forbidden(controller?.output() ?? '');
      expect(refusals).toHaveLength(1);
      expect(refusals[0]).toContain('may not list Secrets in namespace \\"team-c\\"');
      expect(refusals[0]).toContain(command);
    });

    it('[upgrade] watchNamespaces rolls out: only team-a is watched, team-b and its Secrets are out of reach', async () => {
      // SIGTERM drains: the process exits cleanly and hands the Lease back at once.
      expect(await controller?.stop()).toBe(0);
      controller = undefined;
      expect((await k8s.leaseHolder(NS, 'agentkourier-controller'))?.holder).toBe('');

      const upgrade = await runHelm(
        helm,
        [
          'upgrade',
          RELEASE,
          CHART,
          '--namespace',
          NS,
          '--reuse-values',
          ...setArgs({ watchNamespaces: '{team-a}', logLevel: 'debug' }),
        ],
        helmEnv(),
      );
      expect(upgrade.code, upgrade.stderr).toBe(0);
      const rbac = cluster.kubeConfig.makeApiClient(RbacAuthorizationV1Api);
      expect(await statusOf(rbac.readClusterRole({ name: FULLNAME }))).toBe(404);
      // The reused rbac.secretNamespaces grants nothing more: the Roles hold the Secrets.
      expect(await statusOf(rbac.readClusterRole({ name: `${FULLNAME}-secret-reader` }))).toBe(404);
      expect(
        await statusOf(
          rbac.readNamespacedRoleBinding({ namespace: 'team-a', name: `${FULLNAME}-secret-reader` }),
        ),
      ).toBe(404);
      expect(await statusOf(rbac.readNamespacedRole({ namespace: 'team-a', name: FULLNAME }))).toBe(200);
      expect(await statusOf(rbac.readNamespacedRole({ namespace: 'team-b', name: FULLNAME }))).toBe(404);
      const env = Object.fromEntries(
        (await installedDeployment()).spec.template.spec.containers[0]?.env.map((e) => [e.name, e.value]) ??
          [],
      );
      expect([env.AGENTKOURIER_WATCH_NAMESPACES, env.LOG_LEVEL]).toEqual(['team-a', 'debug']);

      const pod = `${FULLNAME}-6c9d8e7f5-d4e5f`;
      controller = await startPod(pod);
      await waitReady(controller, ports.metrics);
      // Another team's Binding, Secret and channel, outside the watched namespaces.
      await k8s.secret('team-b', 'agent-token', { token: 'team-b-token' });
      await k8s.create('agentbackends', 'team-b', 'agents', { dialect: 'a2a', url: agent.endpoint });
      await k8s.create('bindings', 'team-b', 'support', {
        backendRef: { name: 'agents' },
        identity: { tokenSecretRef: { name: 'agent-token', key: 'token' } },
        slack: { channels: [CHANNEL_B] },
      });
      // Asked first, so the answer in team-a below shows the controller had its chance meanwhile.
      expect(await answerIn(CHANNEL_B, 'anyone in team-b?', 3_000)).toBeUndefined();
      expect(await answerIn(CHANNEL_A, 'still here after the upgrade')).toContain(
        'still here after the upgrade',
      );
      expect((await k8s.get('bindings', 'team-b', 'support')).status).toBeUndefined();
      const sent = agent.rpc('SendStreamingMessage').map((r) => r.headers.authorization);
      expect(sent).not.toContain('Bearer team-b-token');

      // What the ServiceAccount may do, asked as the ServiceAccount itself.
      const sa = new KubeConfig();
      sa.loadFromFile(join(dir, `${pod}.kubeconfig`));
      const asController = sa.makeApiClient(CoreV1Api);
      expect(await statusOf(asController.listNamespacedSecret({ namespace: 'team-a' }))).toBe(200);
      expect(await statusOf(asController.listNamespacedSecret({ namespace: 'team-b' }))).toBe(403);
      expect(
        await statusOf(asController.readNamespacedSecret({ namespace: 'team-a', name: 'agent-token' })),
      ).toBe(403);
      expect(forbidden(controller.output())).toEqual([]);
    });

    it('[uninstall] helm uninstall removes the controller and keeps the CRDs, the resources and the state claim', async () => {
      expect(await controller?.stop()).toBe(0);
      controller = undefined;
      const uninstall = await runHelm(helm, ['uninstall', RELEASE, '--namespace', NS], helmEnv());
      expect(uninstall.code, uninstall.stderr).toBe(0);
      const core = cluster.kubeConfig.makeApiClient(CoreV1Api);
      const crds = cluster.kubeConfig.makeApiClient(ApiextensionsV1Api);
      const rbac = cluster.kubeConfig.makeApiClient(RbacAuthorizationV1Api);
      expect(await statusOf(core.readNamespacedServiceAccount({ namespace: NS, name: FULLNAME }))).toBe(404);
      expect(await statusOf(rbac.readNamespacedRole({ namespace: 'team-a', name: FULLNAME }))).toBe(404);
      expect(
        await statusOf(
          cluster.kubeConfig
            .makeApiClient(AppsV1Api)
            .readNamespacedDeployment({ namespace: NS, name: FULLNAME }),
        ),
      ).toBe(404);
      for (const name of ['agentbackends.agentkourier.dev', 'bindings.agentkourier.dev']) {
        expect(await statusOf(crds.readCustomResourceDefinition({ name }))).toBe(200);
      }
      expect((await k8s.get('bindings', 'team-a', 'support')).metadata.name).toBe('support');
      expect(
        await statusOf(
          core.readNamespacedPersistentVolumeClaim({ namespace: NS, name: `${FULLNAME}-state` }),
        ),
      ).toBe(200);
    });
  },
);
