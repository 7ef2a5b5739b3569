import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { inject } from 'vitest';
import { z } from 'zod';
import { eventually } from '../k8s/cluster-helpers.js';
import { CHART } from '../k8s/helm.js';
import { pushImage, ROOT } from './builds.js';

/**
 * What a cluster test file works with: the shared cluster (./setup.ts starts it) through the
 * real kubectl and helm, namespaces of its own, hostPath volumes, and the project's image under
 * more tags. Every call waits on a condition it names, so a failure says what never happened.
 */

export interface ClusterInfo {
  kubeconfigPath: string;
  server: string;
  nodeIp: string;
  nodeName: string;
  registry: string;
  volumesDir: string;
  kubectl: string;
  /** Helm 3 (tools/helm), the helm of every test unless one says otherwise. */
  helm: string;
  /** Helm 4 (tools/helm4): a ClusterClient made with `withHelm4()` runs it as its helm. */
  helm4: string;
  cosign: string;
  /** The project's image in buildah's storage (the one the registry serves as ghcr.io's). */
  localImage: string;
  appVersion: string;
}

export { CHART, eventually, ROOT };

/** The cluster, or why the cluster tests are skipped on this machine. */
export function clusterInfo(): { info: ClusterInfo; skip?: undefined } | { info?: undefined; skip: string } {
  const provided = inject('cluster');
  return 'skip' in provided ? { skip: provided.skip } : { info: provided };
}

export interface CommandResult {
  code: number;
  stdout: string;
  stderr: string;
}

function exec(bin: string, args: string[], env: NodeJS.ProcessEnv, input?: string): Promise<CommandResult> {
  return new Promise((done) => {
    const child = execFile(
      bin,
      args,
      { cwd: ROOT, env, maxBuffer: 32 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === 'number' ? error.code : 1;
        done({ code, stdout, stderr });
      },
    );
    if (input !== undefined) child.stdin?.end(input);
  });
}

export const podSchema = z
  .object({
    metadata: z
      .object({ name: z.string(), uid: z.string(), deletionTimestamp: z.string().optional() })
      .loose(),
    spec: z.object({ nodeName: z.string().optional() }).loose(),
    status: z
      .object({
        phase: z.string().optional(),
        podIP: z.string().optional(),
        conditions: z.array(z.object({ type: z.string(), status: z.string() }).loose()).optional(),
        containerStatuses: z
          .array(
            z
              .object({
                name: z.string(),
                ready: z.boolean(),
                restartCount: z.number(),
                image: z.string(),
                imageID: z.string(),
                state: z.record(z.string(), z.unknown()).optional(),
              })
              .loose(),
          )
          .optional(),
      })
      .loose(),
  })
  .loose();
export type Pod = z.output<typeof podSchema>;

export const podReady = (pod: Pod) =>
  pod.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;

export class ClusterClient {
  readonly namespaces: string[] = [];
  readonly #env: NodeJS.ProcessEnv;

  constructor(readonly info: ClusterInfo) {
    this.#env = {
      PATH: `${join(info.kubectl, '..')}:${process.env.PATH ?? ''}`,
      HOME: process.env.HOME ?? '/root',
      KUBECONFIG: info.kubeconfigPath,
      // Helm's own state in a place of its own, not the user's.
      HELM_CACHE_HOME: '/tmp/ak-cluster-helm/cache',
      HELM_CONFIG_HOME: '/tmp/ak-cluster-helm/config',
      HELM_DATA_HOME: '/tmp/ak-cluster-helm/data',
    };
  }

  /** The same cluster, with Helm 4 as this client's helm (helm, helmOk, shell). */
  withHelm4(): ClusterClient {
    return new ClusterClient({ ...this.info, helm: this.info.helm4 });
  }

  /** The environment the documented commands run in: kubectl and helm on PATH, the kubeconfig. */
  get env(): NodeJS.ProcessEnv {
    return { ...this.#env, PATH: `${join(this.info.helm, '..')}:${this.#env.PATH}` };
  }

  kubectl(args: string[], input?: string): Promise<CommandResult> {
    return exec(this.info.kubectl, args, this.#env, input);
  }

  /** kubectl that must succeed: its stdout, or an error with what it said. */
  async kubectlOk(args: string[], input?: string): Promise<string> {
    const r = await this.kubectl(args, input);
    if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')} failed (${r.code}): ${r.stderr}${r.stdout}`);
    return r.stdout;
  }

  /** A command line as a person types it (bash, in the clone, kubectl and helm on PATH). */
  shell(line: string): Promise<CommandResult> {
    return exec('bash', ['-c', line], this.env);
  }

  helm(args: string[]): Promise<CommandResult> {
    return exec(this.info.helm, args, this.#env);
  }

  async helmOk(args: string[]): Promise<string> {
    const r = await this.helm(args);
    if (r.code !== 0) throw new Error(`helm ${args.join(' ')} failed (${r.code}): ${r.stderr}${r.stdout}`);
    return r.stdout;
  }

  /** A namespace of this test's own (`prefix-<random>`), deleted by cleanup(). */
  async namespace(prefix: string): Promise<string> {
    const name = `${prefix}-${randomBytes(3).toString('hex')}`;
    await this.kubectlOk(['create', 'namespace', name]);
    this.namespaces.push(name);
    await eventually(async () => {
      await this.kubectlOk(['-n', name, 'get', 'serviceaccount', 'default']);
    }, 30_000);
    return name;
  }

  async apply(namespace: string, yaml: string): Promise<void> {
    await this.kubectlOk(['apply', '-n', namespace, '-f', '-'], yaml);
  }

  async json<T>(args: string[], schema: z.ZodType<T>): Promise<T> {
    return schema.parse(JSON.parse(await this.kubectlOk([...args, '-o', 'json'])));
  }

  async pods(namespace: string, selector: string): Promise<Pod[]> {
    const list = await this.json(
      ['-n', namespace, 'get', 'pods', '-l', selector],
      z.object({ items: z.array(podSchema) }),
    );
    return list.items;
  }

  /** The one pod of a selector, once it exists and is not being deleted, Running and Ready. */
  async readyPod(namespace: string, selector: string, timeoutMs = 120_000): Promise<Pod> {
    return eventually(
      async () => {
        const live = (await this.pods(namespace, selector)).filter(
          (p) => p.metadata.deletionTimestamp === undefined,
        );
        if (live.length !== 1) throw new Error(`${live.length} live pods match ${selector} in ${namespace}`);
        const [pod] = live as [Pod];
        if (pod.status.phase !== 'Running' || !podReady(pod))
          throw new Error(
            `pod ${pod.metadata.name} is ${pod.status.phase}, not Ready: ${JSON.stringify(pod.status.containerStatuses)}`,
          );
        return pod;
      },
      timeoutMs,
      500,
    );
  }

  /** The project's image in the registry under another tag of ghcr.io/agentkourier/agentkourier. */
  async pushTag(tag: string): Promise<void> {
    await pushImage(this.info.localImage, `${this.info.registry}/agentkourier/agentkourier:${tag}`);
  }

  /**
   * A hostPath PersistentVolume (no StorageClass here) that a claim without a class binds to:
   * the node's directory outlives the pods, as a disk would.
   */
  async hostPathVolume(
    name: string,
    claim?: { namespace: string; name: string },
    size = '1Gi',
  ): Promise<string> {
    const path = join(this.info.volumesDir, name);
    mkdirSync(path, { recursive: true });
    // The pod's user (1000) writes there; the kubelet applies no fsGroup to a hostPath.
    chmodSync(path, 0o777);
    await this.apply(
      'default',
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'PersistentVolume',
        metadata: { name },
        spec: {
          capacity: { storage: size },
          accessModes: ['ReadWriteOnce'],
          persistentVolumeReclaimPolicy: 'Retain',
          storageClassName: '',
          hostPath: { path, type: 'Directory' },
          // Reserved for its test's claim, so another file's claim cannot take it.
          ...(claim === undefined ? {} : { claimRef: claim }),
        },
      }),
    );
    return path;
  }

  /**
   * The chart as the release workflow publishes it: packaged by scripts/package-chart.sh for
   * the image at ghcr.io/agentkourier/agentkourier, pushed to the registry that stands in for
   * ghcr.io. Returns what `helm install` takes: the oci:// reference and its flags.
   */
  async publishChart(version = this.info.appVersion): Promise<string[]> {
    const packaged = await exec(
      'bash',
      [join(ROOT, 'scripts/package-chart.sh'), version, 'ghcr.io/agentkourier/agentkourier'],
      { ...this.env, HELM: this.info.helm },
    );
    if (packaged.code !== 0) throw new Error(`package-chart.sh failed: ${packaged.stderr}`);
    const tgz = packaged.stdout.trim().split('\n').at(-1) ?? '';
    await this.helmOk(['push', tgz, `oci://${this.info.registry}/charts`, '--plain-http']);
    return [`oci://${this.info.registry}/charts/agentkourier`, '--version', version, '--plain-http'];
  }

  /** Deletes this file's namespaces (and what is in them); the cluster itself stays. */
  async cleanup(): Promise<void> {
    if (this.namespaces.length === 0) return;
    await this.kubectl(['delete', 'namespace', '--wait=false', ...this.namespaces.splice(0)]);
  }
}
