import { describe, expect, it } from 'vitest';
import { goAvailable } from '../k8s/apiserver.js';
import {
  CHART,
  deploymentShape,
  helmBinary,
  only,
  type RenderedObject,
  renderChart,
  runHelm,
  setArgs,
} from '../k8s/helm.js';

const HAS_GO = goAvailable();

/** The rules the controller needs in a namespace it watches: exactly its calls (docs/kubernetes.md). */
const WATCH_RULES = [
  { apiGroups: ['agentkourier.dev'], resources: ['agentbackends', 'bindings'], verbs: ['list', 'watch'] },
  {
    apiGroups: ['agentkourier.dev'],
    resources: ['agentbackends/status', 'bindings/status'],
    verbs: ['patch'],
  },
  { apiGroups: [''], resources: ['secrets'], verbs: ['list', 'watch'] },
  { apiGroups: ['events.k8s.io'], resources: ['events'], verbs: ['create'] },
];
const LEASE_RULES = [
  { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create'] },
  {
    apiGroups: ['coordination.k8s.io'],
    resources: ['leases'],
    resourceNames: ['agentkourier-controller'],
    verbs: ['get', 'update'],
  },
];
const HA = {
  replicas: '3',
  'store.kind': 'postgres',
  'store.postgres.existingSecret': 'agentkourier-postgres',
};

function kinds(objects: RenderedObject[]): string[] {
  return objects.map((o) => `${o.kind}/${o.metadata.namespace ?? '-'}/${o.metadata.name}`).sort();
}

function rbacOf(objects: RenderedObject[]) {
  return objects.filter((o) => ['Role', 'ClusterRole', 'RoleBinding', 'ClusterRoleBinding'].includes(o.kind));
}

describe.skipIf(!HAS_GO)(
  'the Helm chart, rendered and linted (skipped only without Go, which builds helm)',
  () => {
    it('lints clean with the default values and with HA values', async () => {
      const helm = await helmBinary();
      const variants: Array<Record<string, string>> = [
        {},
        HA,
        { watchNamespaces: '{team-a,team-b}', 'slack.mode': 'socket' },
      ];
      for (const values of variants) {
        const lint = await runHelm(helm, ['lint', '--strict', CHART, ...setArgs(values)]);
        expect(lint.stderr + lint.stdout).toContain('0 chart(s) failed');
        expect(lint.code).toBe(0);
      }
    });

    it('renders, by default, exactly the objects of one SQLite replica watching every namespace', async () => {
      const objects = await renderChart(await helmBinary());
      expect(kinds(objects)).toEqual([
        'ClusterRole/-/ak-agentkourier',
        'ClusterRoleBinding/-/ak-agentkourier',
        'Deployment/agentkourier/ak-agentkourier',
        'PersistentVolumeClaim/agentkourier/ak-agentkourier-state',
        'PodDisruptionBudget/agentkourier/ak-agentkourier',
        'Role/agentkourier/ak-agentkourier-leader-election',
        'RoleBinding/agentkourier/ak-agentkourier-leader-election',
        'Service/agentkourier/ak-agentkourier',
        'ServiceAccount/agentkourier/ak-agentkourier',
      ]);
      expect(only(objects, 'ClusterRole').rules).toEqual(WATCH_RULES);
      expect(only(objects, 'Role').rules).toEqual(LEASE_RULES);
      for (const binding of ['ClusterRoleBinding', 'RoleBinding']) {
        expect(only(objects, binding).subjects).toEqual([
          { kind: 'ServiceAccount', name: 'ak-agentkourier', namespace: 'agentkourier' },
        ]);
      }
      const deployment = deploymentShape.parse(only(objects, 'Deployment'));
      expect(deployment.spec.replicas).toBe(1);
      expect((only(objects, 'Deployment').spec as { strategy: unknown }).strategy).toEqual({
        type: 'Recreate',
      });
      const pod = deployment.spec.template.spec;
      expect(pod.serviceAccountName).toBe('ak-agentkourier');
      expect(pod.securityContext).toMatchObject({
        runAsNonRoot: true,
        seccompProfile: { type: 'RuntimeDefault' },
      });
      const container = pod.containers[0];
      expect(container?.securityContext).toEqual({
        runAsNonRoot: true,
        readOnlyRootFilesystem: true,
        allowPrivilegeEscalation: false,
        capabilities: { drop: ['ALL'] },
        seccompProfile: { type: 'RuntimeDefault' },
      });
      expect(container?.args).toEqual(['controller']);
      expect(container?.ports.map((p) => [p.name, p.containerPort])).toEqual([
        ['http', 8080],
        ['metrics', 9090],
      ]);
      expect(container?.livenessProbe.httpGet).toEqual({ path: '/healthz', port: 'metrics' });
      expect(container?.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'metrics' });
      // The writable paths are volumes; the rest of the root file system is read-only.
      expect(container?.volumeMounts.map((m) => m.mountPath).sort()).toEqual([
        '/tmp',
        '/var/lib/agentkourier',
      ]);
      const env = Object.fromEntries(container?.env.map((e) => [e.name, e]) ?? []);
      expect(env.AGENTKOURIER_WATCH_NAMESPACES).toBeUndefined(); // every namespace
      expect(env.AGENTKOURIER_METRICS_PORT?.value).toBe('9090');
      expect(env.AGENTKOURIER_HTTP_PORT?.value).toBe('8080');
      expect(env.AGENTKOURIER_STORE?.value).toBe('sqlite:/var/lib/agentkourier/state.db');
      expect(env.AGENTKOURIER_NAMESPACE?.valueFrom?.fieldRef?.fieldPath).toBe('metadata.namespace');
      for (const name of ['SLACK_BOT_TOKEN', 'SLACK_SIGNING_SECRET']) {
        expect(env[name]?.value).toBeUndefined();
        expect(env[name]?.valueFrom?.secretKeyRef?.name).toBe('agentkourier-slack');
      }
      const service = only(objects, 'Service').spec as { ports: Array<{ name: string; port: number }> };
      expect(service.ports.map((p) => [p.name, p.port])).toEqual([
        ['http', 8080],
        ['metrics', 9090],
      ]);
      expect(only(objects, 'PersistentVolumeClaim').metadata.annotations).toEqual({
        'helm.sh/resource-policy': 'keep',
      });
    });

    it('renders HA values: PostgreSQL from a Secret, rolling updates, a Role per watched namespace', async () => {
      const objects = await renderChart(await helmBinary(), {
        ...HA,
        watchNamespaces: '{team-a,team-b}',
        'namespaceChannels.team-a': '{C0123ABCDEF}',
        'networkPolicy.enabled': 'true',
        'serviceMonitor.enabled': 'true',
      });
      expect(objects.some((o) => o.kind.startsWith('Cluster'))).toBe(false);
      expect(objects.some((o) => o.kind === 'PersistentVolumeClaim')).toBe(false);
      const watchRoles = objects.filter((o) => o.kind === 'Role' && o.metadata.name === 'ak-agentkourier');
      expect(watchRoles.map((r) => r.metadata.namespace).sort()).toEqual(['team-a', 'team-b']);
      for (const role of watchRoles) expect(role.rules).toEqual(WATCH_RULES);
      const bindings = objects.filter(
        (o) => o.kind === 'RoleBinding' && o.metadata.name === 'ak-agentkourier',
      );
      expect(bindings.map((b) => [b.metadata.namespace, b.roleRef, b.subjects])).toEqual(
        ['team-a', 'team-b'].map((ns) => [
          ns,
          { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'ak-agentkourier' },
          [{ kind: 'ServiceAccount', name: 'ak-agentkourier', namespace: 'agentkourier' }],
        ]),
      );
      // Leases stay in the release namespace, whatever is watched.
      expect(only(objects, 'Role', 'ak-agentkourier-leader-election').metadata.namespace).toBe(
        'agentkourier',
      );

      const deployment = deploymentShape.parse(only(objects, 'Deployment'));
      expect(deployment.spec.replicas).toBe(3);
      expect((only(objects, 'Deployment').spec as { strategy: { type: string } }).strategy.type).toBe(
        'RollingUpdate',
      );
      const container = deployment.spec.template.spec.containers[0];
      const env = Object.fromEntries(container?.env.map((e) => [e.name, e]) ?? []);
      expect(env.AGENTKOURIER_STORE?.valueFrom?.secretKeyRef).toEqual({
        name: 'agentkourier-postgres',
        key: 'url',
      });
      expect(env.AGENTKOURIER_WATCH_NAMESPACES?.value).toBe('team-a,team-b');
      expect(JSON.parse(env.AGENTKOURIER_NAMESPACE_CHANNELS?.value ?? '')).toEqual({
        'team-a': ['C0123ABCDEF'],
      });
      expect(container?.volumeMounts.map((m) => m.mountPath)).toEqual(['/tmp']);
      const spread = (
        only(objects, 'Deployment').spec as { template: { spec: { topologySpreadConstraints: unknown } } }
      ).template.spec.topologySpreadConstraints;
      expect(spread).toEqual([
        {
          maxSkew: 1,
          topologyKey: 'kubernetes.io/hostname',
          whenUnsatisfiable: 'ScheduleAnyway',
          labelSelector: {
            matchLabels: { 'app.kubernetes.io/name': 'agentkourier', 'app.kubernetes.io/instance': 'ak' },
          },
        },
      ]);
      // One rule per port: the metrics port and Slack's events can be opened apart.
      const policy = only(objects, 'NetworkPolicy').spec as { ingress: Array<{ ports: unknown }> };
      expect(policy.ingress.map((r) => r.ports)).toEqual([
        [{ port: 'metrics', protocol: 'TCP' }],
        [{ port: 'http', protocol: 'TCP' }],
      ]);
      expect((only(objects, 'ServiceMonitor').spec as { endpoints: unknown }).endpoints).toEqual([
        { port: 'metrics', path: '/metrics', interval: '30s', scrapeTimeout: '10s' },
      ]);
    });

    it('opens the http port in Socket Mode too, for the trigger webhooks', async () => {
      const objects = await renderChart(await helmBinary(), {
        'slack.mode': 'socket',
        'networkPolicy.enabled': 'true',
        'networkPolicy.http.from[0].namespaceSelector.matchLabels.name': 'monitoring',
      });
      const policy = only(objects, 'NetworkPolicy').spec as {
        ingress: Array<{ ports: unknown; from?: unknown }>;
      };
      expect(policy.ingress.map((r) => r.ports)).toEqual([
        [{ port: 'metrics', protocol: 'TCP' }],
        [{ port: 'http', protocol: 'TCP' }],
      ]);
      expect(policy.ingress[1]?.from).toEqual([
        { namespaceSelector: { matchLabels: { name: 'monitoring' } } },
      ]);
    });

    it('puts no token and no wildcard in any rendered object', async () => {
      const helm = await helmBinary();
      const variants: Array<Record<string, string>> = [
        {},
        HA,
        { watchNamespaces: '{team-a}', 'slack.mode': 'socket' },
      ];
      for (const values of variants) {
        const objects = await renderChart(helm, values);
        const text = JSON.stringify(objects);
        expect(text).not.toMatch(/xox[abp]-|xapp-|postgres(ql)?:\/\//);
        for (const object of rbacOf(objects)) expect(JSON.stringify(object)).not.toContain('"*"');
        expect(objects.some((o) => o.kind === 'Secret')).toBe(false);
        const container = deploymentShape.parse(only(objects, 'Deployment')).spec.template.spec.containers[0];
        for (const env of container?.env ?? []) {
          if (/TOKEN|SECRET|STORE/.test(env.name) && env.name !== 'AGENTKOURIER_STORE') {
            expect(env.valueFrom?.secretKeyRef, env.name).toBeDefined();
          }
        }
      }
    });

    it.each([
      [{ bogus: '1' }, "additional properties 'bogus' not allowed"],
      [{ 'image.bogus': 'x' }, "at '/image': additional properties 'bogus' not allowed"],
      [{ 'ports.metrics': 'nine' }, "at '/ports/metrics': got string, want integer"],
      [{ replicas: '2' }, "at '/replicas': maximum: got 2, want 1"],
      [{ replicas: '2', 'store.kind': 'postgres' }, "at '/store/postgres/existingSecret'"],
      [{ 'slack.existingSecret': '' }, "at '/slack/existingSecret': minLength"],
      [{ 'slack.mode': 'websocket' }, "at '/slack/mode'"],
      [{ watchNamespaces: '{Team_A}' }, "at '/watchNamespaces/0'"],
      [{ 'namespaceChannels.team-a': '{general}' }, "at '/namespaceChannels/team-a/0'"],
      [{ logLevel: 'loud' }, "at '/logLevel'"],
    ])('refuses bad values, naming the key: %j', async (values, message) => {
      const result = await runHelm(await helmBinary(), ['template', 'ak', CHART, ...setArgs(values)]);
      expect(result.code).not.toBe(0);
      expect(result.stderr).toContain(message);
    });

    it('refuses the same port for Slack and the metrics, with a reason', async () => {
      const result = await runHelm(await helmBinary(), [
        'template',
        'ak',
        CHART,
        ...setArgs({ 'ports.metrics': '8080' }),
      ]);
      expect(result.code).not.toBe(0);
      expect(result.stderr).toContain('ports.http and ports.metrics must differ');
    });
  },
);
