import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { z } from 'zod';
import { goAvailable, NoGoError } from './apiserver.js';

/**
 * The real Helm CLI for the chart's tests, built from its Go module by scripts/helm-bin.sh
 * (cached outside the clone), and the chart rendered into plain objects to check as data.
 */

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
export const CHART = join(ROOT, 'charts/agentkourier');
const HELM_BIN_SCRIPT = join(ROOT, 'scripts/helm-bin.sh');

/**
 * Builds helm once (a cold build takes minutes; progress on our stderr) and returns its path:
 * Helm 3, the tests' helm, or Helm 4 (tools/helm4), which the cluster test installs with too.
 */
export async function helmBinary(major: 3 | 4 = 3): Promise<string> {
  const child = spawn('bash', [HELM_BIN_SCRIPT, String(major)], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
    process.stderr.write(chunk);
  });
  const code = await new Promise<number | null>((done) => child.once('close', done));
  const bin = stdout.trim().split('\n').at(-1) ?? '';
  if (code === 0 && existsSync(bin)) return bin;
  if (!goAvailable())
    throw new NoGoError('go is not on PATH: it is needed to build helm (scripts/helm-bin.sh)');
  throw new Error(`scripts/helm-bin.sh failed (exit ${code}):\n${stderr.slice(-4000)}`);
}

export interface HelmResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs helm; never throws for a non-zero exit (tests assert on refusals). */
export function runHelm(bin: string, args: string[], env: Record<string, string> = {}): Promise<HelmResult> {
  return new Promise((done) => {
    execFile(
      bin,
      args,
      {
        cwd: ROOT,
        // Helm's own state (repositories, cache) in a place of its own, not the user's.
        env: {
          PATH: process.env.PATH ?? '',
          HOME: process.env.HOME ?? '/tmp',
          HELM_CACHE_HOME: '/tmp/ak-helm-cache',
          ...env,
        },
        maxBuffer: 32 * 1024 * 1024,
      },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === 'number' ? error.code : 1;
        done({ code, stdout, stderr });
      },
    );
  });
}

/** `--set` pairs as helm's arguments. */
export function setArgs(values: Record<string, string>): string[] {
  return Object.entries(values).flatMap(([k, v]) => ['--set', `${k}=${v}`]);
}

export const renderedObject = z
  .object({
    apiVersion: z.string(),
    kind: z.string(),
    metadata: z.object({ name: z.string(), namespace: z.string().optional() }).loose(),
  })
  .loose();
export type RenderedObject = z.output<typeof renderedObject>;

/** Every object of a multi-document YAML stream (empty documents skipped). */
export function parseObjects(yaml: string): RenderedObject[] {
  return parseAllDocuments(yaml)
    .map((d) => d.toJSON() as unknown)
    .filter((d) => d !== null && d !== undefined)
    .map((d) => renderedObject.parse(d));
}

/** `helm template` of the chart with these values; throws with helm's message on a refusal. */
export async function renderChart(
  bin: string,
  values: Record<string, string> = {},
  options: { namespace?: string; release?: string } = {},
): Promise<RenderedObject[]> {
  const result = await runHelm(bin, [
    'template',
    options.release ?? 'ak',
    CHART,
    '--namespace',
    options.namespace ?? 'agentkourier',
    ...setArgs(values),
  ]);
  if (result.code !== 0) throw new Error(`helm template failed:\n${result.stderr}`);
  return parseObjects(result.stdout);
}

export function only(objects: RenderedObject[], kind: string, name?: string): RenderedObject {
  const found = objects.filter((o) => o.kind === kind && (name === undefined || o.metadata.name === name));
  if (found.length !== 1)
    throw new Error(`expected one ${kind}${name ? ` ${name}` : ''}, found ${found.length}`);
  return found[0] as RenderedObject;
}

// ---- the Deployment's pod, as the kubelet would start its container --------------------------

const envVar = z.object({
  name: z.string(),
  value: z.string().optional(),
  valueFrom: z
    .object({
      fieldRef: z.object({ fieldPath: z.string() }).optional(),
      secretKeyRef: z.object({ name: z.string(), key: z.string() }).optional(),
    })
    .optional(),
});
export type EnvVar = z.output<typeof envVar>;

export const deploymentShape = z
  .object({
    spec: z.object({
      replicas: z.number(),
      template: z.object({
        spec: z
          .object({
            serviceAccountName: z.string(),
            securityContext: z.record(z.string(), z.unknown()),
            containers: z.array(
              z
                .object({
                  name: z.string(),
                  image: z.string(),
                  command: z.array(z.string()).optional(),
                  args: z.array(z.string()).optional(),
                  env: z.array(envVar),
                  ports: z.array(z.object({ name: z.string(), containerPort: z.number() }).loose()),
                  securityContext: z.record(z.string(), z.unknown()),
                  volumeMounts: z.array(z.object({ name: z.string(), mountPath: z.string() })),
                  livenessProbe: z
                    .object({ httpGet: z.object({ path: z.string(), port: z.string() }) })
                    .loose(),
                  readinessProbe: z
                    .object({ httpGet: z.object({ path: z.string(), port: z.string() }) })
                    .loose(),
                })
                .loose(),
            ),
            volumes: z.array(z.record(z.string(), z.unknown())),
          })
          .loose(),
      }),
    }),
  })
  .loose();
export type DeploymentShape = z.output<typeof deploymentShape>;
export type ContainerShape = DeploymentShape['spec']['template']['spec']['containers'][number];

/**
 * The container's environment resolved as the kubelet does: fieldRefs from the pod, Secret keys
 * through `readSecret`, and values under a volume mount moved to the directory standing in for it.
 */
export async function resolveEnv(
  container: ContainerShape,
  pod: { namespace: string; name: string; serviceAccountName: string },
  readSecret: (name: string, key: string) => Promise<string>,
  mounts: Record<string, string>,
): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const v of container.env) {
    if (v.value !== undefined) {
      let value = v.value;
      for (const [path, dir] of Object.entries(mounts)) {
        value = value.replace(
          new RegExp(`(^|:)${path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?=/|$)`),
          `$1${dir}`,
        );
      }
      out[v.name] = value;
    } else if (v.valueFrom?.fieldRef !== undefined) {
      const path = v.valueFrom.fieldRef.fieldPath;
      if (path === 'metadata.namespace') out[v.name] = pod.namespace;
      else if (path === 'metadata.name') out[v.name] = pod.name;
      else if (path === 'spec.serviceAccountName') out[v.name] = pod.serviceAccountName;
      else throw new Error(`resolveEnv: no value for fieldRef ${path}`);
    } else if (v.valueFrom?.secretKeyRef !== undefined) {
      out[v.name] = await readSecret(v.valueFrom.secretKeyRef.name, v.valueFrom.secretKeyRef.key);
    } else if (v.valueFrom === undefined) {
      out[v.name] = ''; // an empty value: the API server leaves `value` out
    } else {
      throw new Error(`resolveEnv: ${v.name} has a source this test does not resolve`);
    }
  }
  return out;
}
