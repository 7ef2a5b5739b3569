import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { z } from 'zod';
import { loadTeamsConfig } from '../../src/config/teams.js';
import { loadWebChatSettings } from '../../src/config/webchat.js';
import { tracingConfig } from '../../src/observability/tracing.js';
import { goAvailable } from '../k8s/apiserver.js';
import {
  CHART,
  deploymentShape,
  helmBinary,
  only,
  parseObjects,
  type RenderedObject,
  renderChart,
  runHelm,
  setArgs,
} from '../k8s/helm.js';

const HAS_GO = goAvailable();

const chartYaml = z.object({
  appVersion: z.string(),
  kubeVersion: z.string(),
  annotations: z.record(z.string(), z.string()),
});
const CHART_YAML = chartYaml.parse(parse(readFileSync(join(CHART, 'Chart.yaml'), 'utf8')));
/** The published image at the chart's appVersion: what the default values run. */
const DEFAULT_IMAGE = `ghcr.io/agentkourier/agentkourier:${CHART_YAML.appVersion}`;
const DIGEST = `sha256:${'0123456789abcdef'.repeat(4)}`;

/** The rules the controller needs on its resources: exactly its calls (docs/kubernetes.md). */
const RESOURCE_RULES = [
  { apiGroups: ['agentkourier.dev'], resources: ['agentbackends', 'bindings'], verbs: ['list', 'watch'] },
  {
    apiGroups: ['agentkourier.dev'],
    resources: ['agentbackends/status', 'bindings/status'],
    verbs: ['patch'],
  },
  { apiGroups: ['events.k8s.io'], resources: ['events'], verbs: ['create'] },
];
/** Reading Secrets: the named ones, by field selector (RBAC cannot narrow list to names). */
const SECRET_RULES = [{ apiGroups: [''], resources: ['secrets'], verbs: ['list', 'watch'] }];
/** In a namespace it watches by a Role (watchNamespaces), both. */
const WATCH_RULES = [...RESOURCE_RULES, ...SECRET_RULES];
const NAMES_NOT_CREDENTIALS = new Set(['AGENTKOURIER_STORE', 'AGENTKOURIER_SECRET_READER_ROLE']);
/** The least a Teams install needs: the app, its tenant, and that tenant allowed. */
const TEAMS_VALUES = {
  'teams.enabled': 'true',
  'teams.appId': '11111111-2222-4333-8444-555555555555',
  'teams.appTenantId': '6f1c2e10-0000-4000-8000-000000000001',
  'teams.tenants[0]': '6f1c2e10-0000-4000-8000-000000000001',
} as const;
const SUBJECTS = [{ kind: 'ServiceAccount', name: 'ak-agentkourier', namespace: 'agentkourier' }];
const READER_REF = {
  apiGroup: 'rbac.authorization.k8s.io',
  kind: 'ClusterRole',
  name: 'ak-agentkourier-secret-reader',
};
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

/** Every optional observability value on, none at its default. */
const OBSERVABILITY = {
  'grafanaDashboard.enabled': 'true',
  'prometheusRule.enabled': 'true',
  'prometheusRule.labels.release': 'kube-prometheus-stack',
  'tracing.endpoint': 'http://otel-collector.observability:4318',
  'tracing.protocol': 'http/json',
  'tracing.sampler': 'parentbased_traceidratio',
  'tracing.samplerArg': '0.25',
  'tracing.serviceName': 'agentkourier-prod',
  logFormat: 'pretty',
};

function imageOf(objects: RenderedObject[]): string | undefined {
  return deploymentShape.parse(only(objects, 'Deployment')).spec.template.spec.containers[0]?.image;
}

/** The controller container's literal environment (name → value). */
function envOf(objects: RenderedObject[]): Record<string, string | undefined> {
  const container = deploymentShape.parse(only(objects, 'Deployment')).spec.template.spec.containers[0];
  return Object.fromEntries(container?.env.map((e) => [e.name, e.value]) ?? []);
}

function kinds(objects: RenderedObject[]): string[] {
  return objects.map((o) => `${o.kind}/${o.metadata.namespace ?? '-'}/${o.metadata.name}`).sort();
}

function rbacOf(objects: RenderedObject[]) {
  return objects.filter((o) => ['Role', 'ClusterRole', 'RoleBinding', 'ClusterRoleBinding'].includes(o.kind));
}

describe.skipIf(!HAS_GO)(
  'the Helm chart, rendered and linted (skipped only without Go, which builds helm)',
  () => {
    it('lints clean with the default values, HA values and the observability values', async () => {
      const helm = await helmBinary();
      const variants: Array<Record<string, string>> = [
        {},
        HA,
        { watchNamespaces: '{team-a,team-b}', 'slack.mode': 'socket' },
        { 'rbac.secretNamespaces': '{team-a,team-b}', 'rbac.clusterWideSecrets': 'true' },
        { 'webchat.enabled': 'true', 'webchat.existingSecret': 'agentkourier-webchat' },
        OBSERVABILITY,
      ];
      for (const values of variants) {
        const lint = await runHelm(helm, ['lint', '--strict', CHART, ...setArgs(values)]);
        expect(lint.stderr + lint.stdout).toContain('0 chart(s) failed');
        expect(lint.code).toBe(0);
      }
    });

    it('runs the published image at the chart appVersion by default, and pins it by digest when given one', async () => {
      const helm = await helmBinary();
      expect(imageOf(await renderChart(helm))).toBe(DEFAULT_IMAGE);
      expect(imageOf(await renderChart(helm, { 'image.tag': '0.2.0' }))).toBe(
        'ghcr.io/agentkourier/agentkourier:0.2.0',
      );
      // A digest alone names what runs: the tag (set or defaulted) is left out, not kept beside it.
      const pinned: Array<Record<string, string>> = [
        { 'image.digest': DIGEST },
        { 'image.digest': DIGEST, 'image.tag': '0.2.0' },
      ];
      for (const values of pinned) {
        expect(imageOf(await renderChart(helm, values))).toBe(`ghcr.io/agentkourier/agentkourier@${DIGEST}`);
      }
      expect(
        imageOf(
          await renderChart(helm, {
            'image.repository': 'registry.example.com/agentkourier',
            'image.tag': 'dev',
          }),
        ),
      ).toBe('registry.example.com/agentkourier:dev');
    });

    it("refuses a cluster older than Chart.yaml's kubeVersion and accepts the minimum", async () => {
      const helm = await helmBinary();
      expect(CHART_YAML.kubeVersion).toBe('>=1.34.0-0');
      // The claim is the tested Kubernetes: the minor tools/kube-bins builds (apiserver and kubelet).
      const kubeBins = readFileSync(join(CHART, '../../tools/kube-bins/go.mod'), 'utf8');
      const tested = /^\s*k8s\.io\/kubernetes v1\.(\d+)\./m.exec(kubeBins)?.[1];
      expect(CHART_YAML.kubeVersion).toBe(`>=1.${tested}.0-0`);
      const render = (version: string) => runHelm(helm, ['template', 'ak', CHART, '--kube-version', version]);
      for (const older of ['1.33.5', '1.30.0', '1.25.16']) {
        const refused = await render(older);
        expect(refused.code, older).not.toBe(0);
        expect(refused.stderr).toContain(
          `chart requires kubeVersion: >=1.34.0-0 which is incompatible with Kubernetes v${older}`,
        );
      }
      // The minimum, a managed cluster's pre-release suffix on it, the version the tests run, a newer one.
      for (const version of ['1.34.0', '1.34.2-eks-3025e55', '1.34.4', '1.37.2']) {
        const accepted = await render(version);
        expect(accepted.stderr, version).toBe('');
        expect(accepted.code).toBe(0);
      }
    });

    it("describes itself for Artifact Hub: the default image, the CRDs and examples/a2a.yaml's resources", async () => {
      const a = CHART_YAML.annotations;
      expect(a['artifacthub.io/license']).toBe(
        (JSON.parse(readFileSync(join(CHART, '../../package.json'), 'utf8')) as { license: string }).license,
      );
      expect(a['artifacthub.io/operator']).toBe('true');
      expect(['true', 'false']).toContain(a['artifacthub.io/prerelease']);
      expect(parse(a['artifacthub.io/images'] ?? '')).toEqual([
        { name: 'agentkourier', image: DEFAULT_IMAGE },
      ]);
      const links = z
        .array(z.object({ name: z.string(), url: z.url() }))
        .parse(parse(a['artifacthub.io/links'] ?? ''));
      expect(links.map((l) => l.name)).toContain('support');
      // The CRD cards name the CRDs the chart installs.
      const crds = z
        .array(z.object({ kind: z.string(), version: z.string(), name: z.string() }).loose())
        .parse(parse(a['artifacthub.io/crds'] ?? ''));
      const installed = ['agentbackends', 'bindings'].map((plural) => {
        const crd = parse(readFileSync(join(CHART, `crds/agentkourier.dev_${plural}.yaml`), 'utf8')) as {
          metadata: { name: string };
          spec: { names: { kind: string }; versions: Array<{ name: string }> };
        };
        return { kind: crd.spec.names.kind, version: crd.spec.versions[0]?.name, name: crd.metadata.name };
      });
      expect(crds.map((c) => ({ kind: c.kind, version: c.version, name: c.name }))).toEqual(installed);
      // The examples are examples/a2a.yaml's own resources (its Secret left out), so they stay valid.
      const example = parseAllDocuments(readFileSync(join(CHART, '../../examples/a2a.yaml'), 'utf8'))
        .map((d) => d.toJSON() as { kind: string })
        .filter((o) => o.kind !== 'Secret');
      expect(parse(a['artifacthub.io/crdsExamples'] ?? '')).toEqual(example);
    });

    it('renders, by default, exactly the objects of one SQLite replica watching every namespace', async () => {
      const objects = await renderChart(await helmBinary());
      expect(kinds(objects)).toEqual([
        'ClusterRole/-/ak-agentkourier',
        'ClusterRole/-/ak-agentkourier-secret-reader',
        'ClusterRoleBinding/-/ak-agentkourier',
        'Deployment/agentkourier/ak-agentkourier',
        'PersistentVolumeClaim/agentkourier/ak-agentkourier-state',
        'PodDisruptionBudget/agentkourier/ak-agentkourier',
        'Role/agentkourier/ak-agentkourier-leader-election',
        'RoleBinding/agentkourier/ak-agentkourier-leader-election',
        'Service/agentkourier/ak-agentkourier',
        'ServiceAccount/agentkourier/ak-agentkourier',
      ]);
      // Every namespace's resources, and no Secret anywhere: the reader is bound nowhere yet.
      expect(only(objects, 'ClusterRole', 'ak-agentkourier').rules).toEqual(RESOURCE_RULES);
      expect(only(objects, 'ClusterRole', 'ak-agentkourier-secret-reader').rules).toEqual(SECRET_RULES);
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
      // What a SecretForbidden status names: the pod's service account and the reader role.
      expect(env.AGENTKOURIER_SERVICE_ACCOUNT?.valueFrom?.fieldRef?.fieldPath).toBe(
        'spec.serviceAccountName',
      );
      expect(env.AGENTKOURIER_SECRET_READER_ROLE?.value).toBe('ak-agentkourier-secret-reader');
      // Socket Mode by default, as the app manifest: the bot token and the app-level token.
      expect(env.SLACK_MODE?.value).toBe('socket');
      expect(env.SLACK_SIGNING_SECRET).toBeUndefined();
      for (const [name, key] of [
        ['SLACK_BOT_TOKEN', 'bot-token'],
        ['SLACK_APP_TOKEN', 'app-token'],
      ] as const) {
        expect(env[name]?.value).toBeUndefined();
        expect(env[name]?.valueFrom?.secretKeyRef).toMatchObject({ name: 'agentkourier-slack', key });
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

    it('grants Secrets per namespace (rbac.secretNamespaces), or cluster-wide only when asked', async () => {
      const helm = await helmBinary();
      const perNamespace = await renderChart(helm, { 'rbac.secretNamespaces': '{team-a,team-b}' });
      const readers = perNamespace.filter((o) => o.metadata.name === 'ak-agentkourier-secret-reader');
      expect(readers.map((o) => [o.kind, o.metadata.namespace ?? '-'])).toEqual([
        ['ClusterRole', '-'],
        ['RoleBinding', 'team-a'],
        ['RoleBinding', 'team-b'],
      ]);
      for (const binding of readers.filter((o) => o.kind === 'RoleBinding')) {
        expect([binding.roleRef, binding.subjects]).toEqual([READER_REF, SUBJECTS]);
      }
      expect(perNamespace.filter((o) => o.kind === 'ClusterRoleBinding').map((o) => o.metadata.name)).toEqual(
        ['ak-agentkourier'],
      );
      expect(only(perNamespace, 'ClusterRole', 'ak-agentkourier').rules).toEqual(RESOURCE_RULES);

      // The opt-in: the same reader bound cluster-wide.
      const clusterWide = await renderChart(helm, { 'rbac.clusterWideSecrets': 'true' });
      const crb = only(clusterWide, 'ClusterRoleBinding', 'ak-agentkourier-secret-reader');
      expect([crb.roleRef, crb.subjects]).toEqual([READER_REF, SUBJECTS]);
      expect(clusterWide.filter((o) => o.kind === 'RoleBinding').map((o) => o.metadata.name)).toEqual([
        'ak-agentkourier-leader-election',
      ]);

      // Watching listed namespaces, their Roles hold the Secrets: nothing cluster-wide, whatever
      // rbac.* says, and no reader role for a status to name.
      const listed = await renderChart(helm, {
        watchNamespaces: '{team-a}',
        'rbac.secretNamespaces': '{team-b}',
        'rbac.clusterWideSecrets': 'true',
      });
      expect(listed.filter((o) => o.kind.startsWith('Cluster'))).toEqual([]);
      expect(listed.filter((o) => o.metadata.namespace === 'team-b')).toEqual([]);
      expect(only(listed, 'Role', 'ak-agentkourier').rules).toEqual(WATCH_RULES);
      expect(envOf(listed).AGENTKOURIER_SECRET_READER_ROLE).toBeUndefined();
      // rbac.create=false: no RBAC at all, and so no role to name.
      const none = await renderChart(helm, { 'rbac.create': 'false' });
      expect(rbacOf(none)).toEqual([]);
      expect(envOf(none).AGENTKOURIER_SECRET_READER_ROLE).toBeUndefined();
    });

    it('serves no web chat by default: no port, no variable', async () => {
      const objects = await renderChart(await helmBinary());
      const container = deploymentShape.parse(only(objects, 'Deployment')).spec.template.spec.containers[0];
      expect(container?.ports.map((p) => p.name)).toEqual(['http', 'metrics']);
      expect(Object.keys(envOf(objects)).filter((n) => n.startsWith('AGENTKOURIER_WEBCHAT'))).toEqual([]);
    });

    it('renders the web chat when enabled: its port on the container only, the token from the Secret', async () => {
      const helm = await helmBinary();
      const objects = await renderChart(helm, {
        'webchat.enabled': 'true',
        'webchat.existingSecret': 'agentkourier-webchat',
      });
      const container = deploymentShape.parse(only(objects, 'Deployment')).spec.template.spec.containers[0];
      expect(container?.ports.map((p) => [p.name, p.containerPort])).toEqual([
        ['http', 8080],
        ['metrics', 9090],
        ['webchat', 8082],
      ]);
      // Not on the Service: kubectl port-forward reaches the pod's loopback, nothing else does.
      const service = only(objects, 'Service').spec as { ports: Array<{ name: string }> };
      expect(service.ports.map((p) => p.name)).toEqual(['http', 'metrics']);
      const env = Object.fromEntries(container?.env.map((e) => [e.name, e]) ?? []);
      expect(env.AGENTKOURIER_WEBCHAT_PORT?.value).toBe('8082');
      expect(env.AGENTKOURIER_WEBCHAT_HOST?.value).toBe('127.0.0.1');
      expect(env.AGENTKOURIER_WEBCHAT_TOKEN?.value).toBeUndefined();
      expect(env.AGENTKOURIER_WEBCHAT_TOKEN?.valueFrom?.secretKeyRef).toEqual({
        name: 'agentkourier-webchat',
        key: 'token',
      });
      // The controller's own parser takes what the chart renders (the token as the Secret gives it).
      expect(
        loadWebChatSettings({
          AGENTKOURIER_WEBCHAT_PORT: env.AGENTKOURIER_WEBCHAT_PORT?.value,
          AGENTKOURIER_WEBCHAT_HOST: env.AGENTKOURIER_WEBCHAT_HOST?.value,
          AGENTKOURIER_WEBCHAT_TOKEN: 'a-token-from-the-secret',
        }),
      ).toEqual({ port: 8082, host: '127.0.0.1', token: 'a-token-from-the-secret' });

      const elsewhere = envOf(
        await renderChart(helm, {
          'webchat.enabled': 'true',
          'webchat.existingSecret': 'chat',
          'webchat.port': '7000',
          'webchat.listenAddress': '0.0.0.0',
        }),
      );
      expect([elsewhere.AGENTKOURIER_WEBCHAT_PORT, elsewhere.AGENTKOURIER_WEBCHAT_HOST]).toEqual([
        '7000',
        '0.0.0.0',
      ]);

      // The notes say how to reach it: the port-forward, the page with the token, where the token is.
      const notes = readFileSync(join(CHART, 'templates/NOTES.txt'), 'utf8');
      expect(notes).toContain(
        'port-forward deployment/{{ include "agentkourier.fullname" . }} {{ .Values.webchat.port }}',
      );
      expect(notes).toContain('http://localhost:{{ .Values.webchat.port }}/#token=<token>');
    });

    it('renders Microsoft Teams when enabled: its port on the container and the Service, its settings, the secret from the Secret', async () => {
      const helm = await helmBinary();
      const tenant = TEAMS_VALUES['teams.appTenantId'];
      const objects = await renderChart(helm, {
        ...TEAMS_VALUES,
        'teams.tenants[1]': '6f1c2e10-0000-4000-8000-000000000002',
        'networkPolicy.enabled': 'true',
      });
      const container = deploymentShape.parse(only(objects, 'Deployment')).spec.template.spec.containers[0];
      expect(container?.ports.map((p) => [p.name, p.containerPort])).toContainEqual(['teams', 3978]);
      const service = only(objects, 'Service').spec as { ports: Array<{ name: string; port: number }> };
      expect(service.ports.map((p) => [p.name, p.port])).toContainEqual(['teams', 3978]);
      const env = Object.fromEntries(container?.env.map((e) => [e.name, e]) ?? []);
      // The broker's own parser takes what the chart renders (the secret as the Secret gives it).
      const config = loadTeamsConfig({
        TEAMS_APP_ID: env.TEAMS_APP_ID?.value,
        TEAMS_APP_TENANT_ID: env.TEAMS_APP_TENANT_ID?.value,
        TEAMS_TENANTS: env.TEAMS_TENANTS?.value,
        TEAMS_PORT: env.TEAMS_PORT?.value,
        TEAMS_APP_SECRET: 'a-secret-from-the-secret',
      });
      expect([config.port, [...config.tenants].length, config.appTenantId]).toEqual([3978, 2, tenant]);
      expect(env.TEAMS_APP_SECRET?.value).toBeUndefined();
      expect(env.TEAMS_APP_SECRET?.valueFrom?.secretKeyRef).toEqual({
        name: 'agentkourier-teams',
        key: 'app-secret',
      });
      const policy = only(objects, 'NetworkPolicy').spec as {
        ingress: Array<{ ports: Array<{ port: string }> }>;
      };
      expect(policy.ingress.flatMap((r) => r.ports.map((p) => p.port))).toContain('teams');

      const off = await renderChart(helm);
      const plain = deploymentShape.parse(only(off, 'Deployment')).spec.template.spec.containers[0];
      expect(plain?.ports.map((p) => p.name)).not.toContain('teams');
      expect(Object.keys(envOf(off)).filter((n) => n.startsWith('TEAMS_'))).toEqual([]);

      const refused = await runHelm(helm, ['template', 'ak', CHART, ...setArgs({ 'teams.enabled': 'true' })]);
      expect(refused.code).not.toBe(0);
      expect(refused.stderr).toContain('teams.enabled needs teams.appId');
    });

    it('renders a Teams app that authenticates with a certificate from a TLS Secret, mounted as files the broker reads', async () => {
      const helm = await helmBinary();
      const objects = await renderChart(helm, {
        ...TEAMS_VALUES,
        'teams.certificate.existingSecret': 'teams-app-tls',
      });
      const pod = only(objects, 'Deployment').spec as {
        template: {
          spec: {
            containers: Array<{
              env: Array<{ name: string; value?: string }>;
              volumeMounts: Array<{ name: string; mountPath: string; readOnly?: boolean; subPath?: string }>;
            }>;
            volumes: Array<{
              name: string;
              secret?: { secretName: string; items: Array<{ key: string; path: string }> };
            }>;
          };
        };
      };
      const container = pod.template.spec.containers[0];
      const env = Object.fromEntries(container?.env.map((e) => [e.name, e.value]) ?? []);
      expect(env.TEAMS_APP_SECRET).toBeUndefined();
      expect(Object.keys(env)).not.toContain('TEAMS_APP_SECRET');
      const config = loadTeamsConfig({ ...env });
      expect(config.credential).toEqual({
        kind: 'certificate',
        certificateFile: '/etc/agentkourier/teams/tls.crt',
        keyFile: '/etc/agentkourier/teams/tls.key',
      });
      const mount = container?.volumeMounts.find((m) => m.name === 'teams-certificate');
      // A directory, not a subPath: a renewed Secret reaches the files without a restart.
      expect(mount).toEqual({
        name: 'teams-certificate',
        mountPath: '/etc/agentkourier/teams',
        readOnly: true,
      });
      expect(pod.template.spec.volumes.find((v) => v.name === 'teams-certificate')?.secret).toEqual({
        secretName: 'teams-app-tls',
        items: [
          { key: 'tls.crt', path: 'tls.crt' },
          { key: 'tls.key', path: 'tls.key' },
        ],
      });
    });

    it('refuses a web chat it could not run: no Secret, a port taken, several replicas', async () => {
      const helm = await helmBinary();
      const on = { 'webchat.enabled': 'true', 'webchat.existingSecret': 'chat' };
      for (const [values, message] of [
        [{ 'webchat.enabled': 'true' }, "at '/webchat/existingSecret': minLength"],
        [{ ...on, 'webchat.port': '9090' }, 'webchat.port must differ from ports.http and ports.metrics'],
        [{ ...on, ...HA }, 'webchat.enabled needs replicas: 1'],
      ] as const) {
        const result = await runHelm(helm, ['template', 'ak', CHART, ...setArgs(values)]);
        expect(result.code, JSON.stringify(values)).not.toBe(0);
        expect(result.stderr).toContain(message);
      }
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
        { 'webchat.enabled': 'true', 'webchat.existingSecret': 'agentkourier-webchat' },
      ];
      for (const values of variants) {
        const objects = await renderChart(helm, values);
        const text = JSON.stringify(objects);
        expect(text).not.toMatch(/xox[abp]-|xapp-|postgres(ql)?:\/\//);
        for (const object of rbacOf(objects)) expect(JSON.stringify(object)).not.toContain('"*"');
        expect(objects.some((o) => o.kind === 'Secret')).toBe(false);
        const container = deploymentShape.parse(only(objects, 'Deployment')).spec.template.spec.containers[0];
        for (const env of container?.env ?? []) {
          // The two that only look like credentials: sqlite's path, and a ClusterRole's name.
          if (/TOKEN|SECRET|STORE/.test(env.name) && !NAMES_NOT_CREDENTIALS.has(env.name)) {
            expect(env.valueFrom?.secretKeyRef, env.name).toBeDefined();
          }
        }
      }
    });

    it("ships the Grafana dashboard in a ConfigMap for Grafana's sidecar, byte for byte", async () => {
      const dashboard = readFileSync(join(CHART, 'files/grafana-dashboard.json'), 'utf8');
      const helm = await helmBinary();
      const byDefault = only(await renderChart(helm, { 'grafanaDashboard.enabled': 'true' }), 'ConfigMap');
      expect(byDefault.metadata).toMatchObject({
        name: 'ak-agentkourier-dashboard',
        namespace: 'agentkourier',
        labels: { grafana_dashboard: '1', 'app.kubernetes.io/instance': 'ak' },
      });
      expect(byDefault.metadata.annotations).toBeUndefined();
      expect(Object.keys(byDefault.data as object)).toEqual(['agentkourier.json']);
      expect((byDefault.data as Record<string, string>)['agentkourier.json']).toBe(dashboard);

      const elsewhere = only(
        await renderChart(helm, {
          'grafanaDashboard.enabled': 'true',
          'grafanaDashboard.labelKey': 'grafana.example.com/dashboard',
          'grafanaDashboard.labelValue': 'agents',
          'grafanaDashboard.namespace': 'monitoring',
          'grafanaDashboard.annotations.grafana_folder': 'Agent Kourier',
        }),
        'ConfigMap',
      );
      expect(elsewhere.metadata.namespace).toBe('monitoring');
      expect(elsewhere.metadata.labels).toMatchObject({ 'grafana.example.com/dashboard': 'agents' });
      expect(elsewhere.metadata.labels).not.toHaveProperty('grafana_dashboard');
      expect(elsewhere.metadata.annotations).toEqual({ grafana_folder: 'Agent Kourier' });
      expect((elsewhere.data as Record<string, string>)['agentkourier.json']).toBe(dashboard);
    });

    it("ships the alert rules as a PrometheusRule whose groups are the rules file's", async () => {
      const file = parse(readFileSync(join(CHART, 'files/prometheus-rules.yaml'), 'utf8')) as {
        groups: unknown[];
      };
      expect(file.groups.length).toBeGreaterThan(0);
      const rule = only(await renderChart(await helmBinary(), OBSERVABILITY), 'PrometheusRule');
      expect(rule.apiVersion).toBe('monitoring.coreos.com/v1');
      expect(rule.metadata).toMatchObject({
        name: 'ak-agentkourier',
        namespace: 'agentkourier',
        labels: { release: 'kube-prometheus-stack', 'app.kubernetes.io/instance': 'ak' },
      });
      expect(rule.spec).toEqual({ groups: file.groups });
    });

    it('renders tracing and the log format as the OTEL_* and LOG_FORMAT variables the controller reads', async () => {
      const helm = await helmBinary();
      const env = envOf(await renderChart(helm, OBSERVABILITY));
      expect(env).toMatchObject({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://otel-collector.observability:4318',
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
        OTEL_TRACES_SAMPLER_ARG: '0.25',
        OTEL_SERVICE_NAME: 'agentkourier-prod',
        LOG_FORMAT: 'pretty',
      });
      // The controller's own parser takes them as meant.
      const config = tracingConfig(env);
      expect(config?.url).toBe('http://otel-collector.observability:4318/v1/traces');
      expect(config?.protocol).toBe('http/json');
      expect(config?.serviceName).toBe('agentkourier-prod');
      expect(config?.sampler.toString()).toMatch(/^ParentBased\{root=TraceIdRatioBased\{0\.25\}/);

      // An endpoint alone: the protocol and sampler defaults spelled out, nothing unset rendered.
      const minimal = envOf(await renderChart(helm, { 'tracing.endpoint': 'https://otel.example.com' }));
      expect(Object.entries(minimal).filter(([name]) => name.startsWith('OTEL_'))).toEqual([
        ['OTEL_EXPORTER_OTLP_ENDPOINT', 'https://otel.example.com'],
        ['OTEL_EXPORTER_OTLP_PROTOCOL', 'http/protobuf'],
        ['OTEL_TRACES_SAMPLER', 'parentbased_always_on'],
      ]);
      expect(minimal.LOG_FORMAT).toBeUndefined();
      expect(tracingConfig(minimal)?.sampler.toString()).toMatch(/^ParentBased\{root=AlwaysOnSampler/);

      // A ratio from a values file is a number; it is rendered in the decimal form the controller
      // accepts, and one it would refuse (1e-05) is refused here, by name.
      const ratio = await runHelm(helm, [
        'template',
        'ak',
        CHART,
        '--set',
        'tracing.endpoint=http://otel:4318',
        '--set-json',
        'tracing.samplerArg=0.5',
      ]);
      expect(ratio.code).toBe(0);
      expect(envOf(parseObjects(ratio.stdout)).OTEL_TRACES_SAMPLER_ARG).toBe('0.5');
      const tiny = await runHelm(helm, [
        'template',
        'ak',
        CHART,
        '--set',
        'tracing.endpoint=http://otel:4318',
        '--set-json',
        'tracing.samplerArg=0.00001',
      ]);
      expect(tiny.code).not.toBe(0);
      expect(tiny.stderr).toContain('tracing.samplerArg must be a ratio from 0 to 1 in decimal notation');
    });

    it('renders no observability object and no OTEL_* or LOG_FORMAT variable unless asked', async () => {
      const helm = await helmBinary();
      const variants: Array<Record<string, string>> = [
        {},
        // Tracing settings without an endpoint: still off.
        { 'tracing.sampler': 'always_on', 'tracing.samplerArg': '0.5', 'tracing.serviceName': 'x' },
      ];
      for (const values of variants) {
        const objects = await renderChart(helm, values);
        expect(objects.filter((o) => ['ConfigMap', 'PrometheusRule'].includes(o.kind))).toEqual([]);
        const names = Object.keys(envOf(objects));
        expect(names.filter((n) => n.startsWith('OTEL_') || n === 'LOG_FORMAT')).toEqual([]);
      }
    });

    it.each([
      [{ bogus: '1' }, "additional properties 'bogus' not allowed"],
      [{ 'image.bogus': 'x' }, "at '/image': additional properties 'bogus' not allowed"],
      [{ 'image.digest': 'sha256:0123' }, "at '/image/digest'"],
      [{ 'image.digest': `md5:${'0'.repeat(32)}` }, "at '/image/digest'"],
      [{ 'ports.metrics': 'nine' }, "at '/ports/metrics': got string, want integer"],
      [{ replicas: '2' }, "at '/replicas': maximum: got 2, want 1"],
      [{ replicas: '2', 'store.kind': 'postgres' }, "at '/store/postgres/existingSecret'"],
      [{ 'slack.existingSecret': '' }, "at '/slack/existingSecret': minLength"],
      [{ 'slack.mode': 'websocket' }, "at '/slack/mode'"],
      [{ watchNamespaces: '{Team_A}' }, "at '/watchNamespaces/0'"],
      [{ 'namespaceChannels.team-a': '{general}' }, "at '/namespaceChannels/team-a/0'"],
      [{ logLevel: 'loud' }, "at '/logLevel'"],
      [{ 'rbac.secretNamespaces': '{Team_A}' }, "at '/rbac/secretNamespaces/0'"],
      [{ 'rbac.secretNamespaces': '{team-a,team-a}' }, "at '/rbac/secretNamespaces'"],
      [{ 'rbac.clusterWideSecrets': 'yes' }, "at '/rbac/clusterWideSecrets': got string, want boolean"],
      [{ 'webchat.bogus': '1' }, "at '/webchat': additional properties 'bogus' not allowed"],
      [{ 'webchat.enabled': 'yes' }, "at '/webchat/enabled': got string, want boolean"],
      [{ 'webchat.port': 'web' }, "at '/webchat/port': got string, want integer"],
      [{ 'webchat.listenAddress': '10.0.0.1' }, "at '/webchat/listenAddress'"],
      [{ logFormat: 'xml' }, "at '/logFormat': value must be one of 'json', 'pretty'"],
      [
        { 'grafanaDashboard.bogus': '1' },
        "at '/grafanaDashboard': additional properties 'bogus' not allowed",
      ],
      [{ 'grafanaDashboard.enabled': 'yes' }, "at '/grafanaDashboard/enabled': got string, want boolean"],
      [{ 'grafanaDashboard.labelKey': 'not a key' }, "at '/grafanaDashboard/labelKey'"],
      [{ 'grafanaDashboard.namespace': 'Monitoring' }, "at '/grafanaDashboard/namespace'"],
      [{ 'prometheusRule.bogus': 'x' }, "at '/prometheusRule': additional properties 'bogus' not allowed"],
      [
        { 'prometheusRule.labels.release': '1' },
        "at '/prometheusRule/labels/release': got number, want string",
      ],
      [{ 'tracing.bogus': 'x' }, "at '/tracing': additional properties 'bogus' not allowed"],
      [{ 'tracing.endpoint': 'otel:4318' }, "at '/tracing/endpoint'"],
      [{ 'tracing.protocol': 'grpc' }, "at '/tracing/protocol': value must be one of"],
      [{ 'tracing.sampler': 'sometimes' }, "at '/tracing/sampler': value must be one of"],
      [{ 'tracing.samplerArg': '2' }, "at '/tracing/samplerArg': maximum: got 2, want 1"],
      [{ 'tracing.samplerArg': 'half' }, "at '/tracing/samplerArg'"],
      [{ 'tracing.serviceName': 'true' }, "at '/tracing/serviceName': got boolean, want string"],
    ])('refuses bad values, naming the key: %j', async (values, message) => {
      const result = await runHelm(await helmBinary(), ['template', 'ak', CHART, ...setArgs(values)]);
      expect(result.code).not.toBe(0);
      expect(result.stderr).toContain(message);
    });

    it('renders OAuth mode: the client id in clear, its secret and the sealing keys from the Secret, no bot token', async () => {
      const helm = await helmBinary();
      const objects = await renderChart(helm, {
        'slack.mode': 'http',
        'slack.oauth.enabled': 'true',
        'slack.oauth.clientId': '1111.2222',
        'slack.oauth.redirectUri': 'https://kourier.example.com/slack/oauth_redirect',
        'namespaceChannels.team-a': '{T0123/C0456,T0789/*,direct-messages}',
      });
      const container = deploymentShape.parse(only(objects, 'Deployment')).spec.template.spec.containers[0];
      const env = Object.fromEntries(container?.env.map((e) => [e.name, e]) ?? []);
      expect(env.SLACK_BOT_TOKEN).toBeUndefined();
      expect(env.SLACK_CLIENT_ID?.value).toBe('1111.2222');
      expect(env.SLACK_REDIRECT_URI?.value).toBe('https://kourier.example.com/slack/oauth_redirect');
      for (const [name, key] of [
        ['SLACK_CLIENT_SECRET', 'client-secret'],
        ['SLACK_INSTALLATION_KEYS', 'installation-keys'],
        ['SLACK_STATE_SECRET', 'state-secret'],
        ['SLACK_SIGNING_SECRET', 'signing-secret'],
      ] as const) {
        expect(env[name]?.value).toBeUndefined();
        expect(env[name]?.valueFrom?.secretKeyRef).toMatchObject({ name: 'agentkourier-slack', key });
      }
      const lint = await runHelm(helm, [
        'lint',
        '--strict',
        CHART,
        ...setArgs({ 'slack.mode': 'http', 'slack.oauth.enabled': 'true', 'slack.oauth.clientId': '1.2' }),
      ]);
      expect(lint.code).toBe(0);
      for (const [values, message] of [
        [
          { 'slack.oauth.enabled': 'true', 'slack.oauth.clientId': '1.2', 'slack.mode': 'socket' },
          'needs slack.mode http',
        ],
        [{ 'slack.mode': 'http', 'slack.oauth.enabled': 'true' }, 'needs slack.oauth.clientId'],
      ] as const) {
        const result = await runHelm(helm, ['template', 'ak', CHART, ...setArgs(values)]);
        expect(result.code).not.toBe(0);
        expect(result.stderr).toContain(message);
      }
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
