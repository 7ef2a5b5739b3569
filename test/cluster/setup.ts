import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { parse } from 'yaml';
import { helmBinary } from '../k8s/helm.js';
import { goTool, kubeBins, pauseImage, projectImage, pushImage, ROOT } from './builds.js';
import { type NodeCluster, startNodeCluster } from './cluster.js';
import type { ClusterInfo } from './harness.js';

/**
 * The cluster tests' global setup: builds what the cluster is made of (cached outside the clone)
 * and starts one cluster that every test file shares (each test uses namespaces of its own);
 * stops it after the last file. Without root or Go the tests skip and say why; without the
 * Debian packages it needs, it fails and names them (.ci/run installs them).
 */

declare module 'vitest' {
  export interface ProvidedContext {
    cluster: ClusterInfo | { skip: string };
  }
}

/** Debian's packages the node runs on, by a file each installs. */
const PACKAGES: Array<[string, string]> = [
  ['/usr/bin/containerd', 'containerd'],
  ['/usr/bin/ctr', 'containerd'],
  ['/usr/sbin/runc', 'runc'],
  ['/usr/lib/cni/bridge', 'containernetworking-plugins'],
  ['/usr/bin/buildah', 'buildah'],
  ['/usr/bin/mmdebstrap', 'mmdebstrap'],
  ['/usr/sbin/iptables', 'iptables'],
  ['/usr/bin/openssl', 'openssl'],
];

function whyNot(): string | undefined {
  if (process.getuid?.() !== 0) return 'not root: a kubelet, containerd and iptables need it';
  if (spawnSync('go', ['version'], { stdio: 'ignore' }).status !== 0)
    return 'go is not on PATH: it builds Kubernetes, the registry and CoreDNS';
  return undefined;
}

let cluster: NodeCluster | undefined;

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const skip = whyNot();
  if (skip !== undefined) {
    process.stderr.write(`cluster tests skipped: ${skip}\n`);
    project.provide('cluster', { skip });
    return async () => undefined;
  }
  const missing = [...new Set(PACKAGES.filter(([file]) => !existsSync(file)).map(([, pkg]) => pkg))];
  if (missing.length > 0)
    throw new Error(
      `the cluster tests need Debian's ${missing.join(', ')}: apt-get install ${missing.join(' ')}`,
    );

  const started = Date.now();
  const appVersion = String(
    (parse(readFileSync(join(ROOT, 'charts/agentkourier/Chart.yaml'), 'utf8')) as { appVersion: unknown })
      .appVersion,
  );
  // The image build waits on the network (Debian, npm) most of its time; the Go builds on the
  // CPU. Side by side they take little more than the longer of the two.
  const [image, bins] = await Promise.all([
    projectImage(),
    (async () => {
      const kube = await kubeBins();
      const helm = await helmBinary();
      const helm4 = await helmBinary(4);
      const registryBin = await goTool(
        'tools/registry',
        'github.com/distribution/distribution/v3/cmd/registry',
        'registry',
      );
      const corednsBin = await goTool('tools/coredns', '.', 'coredns');
      const pauseBin = await goTool('tools/pause', '.', 'pause');
      // What the release test signs, attests and verifies with (release.test.ts).
      const cosign = await goTool('tools/cosign', 'github.com/sigstore/cosign/v3/cmd/cosign', 'cosign');
      await goTool('tools/syft', 'github.com/anchore/syft/cmd/syft', 'syft');
      return { kube, helm, helm4, cosign, registryBin, corednsBin, pause: await pauseImage(pauseBin) };
    })(),
  ]);
  process.stderr.write(`cluster: everything built in ${Math.round((Date.now() - started) / 1000)} s\n`);

  cluster = await startNodeCluster({
    kubeBins: bins.kube,
    registryBin: bins.registryBin,
    corednsBin: bins.corednsBin,
    pauseImage: bins.pause,
    projectImage: image,
    appVersion,
    push: pushImage,
  });
  project.provide('cluster', {
    kubeconfigPath: cluster.kubeconfigPath,
    server: cluster.server,
    nodeIp: cluster.nodeIp,
    nodeName: cluster.nodeName,
    registry: cluster.registry,
    volumesDir: cluster.volumesDir,
    kubectl: join(bins.kube, 'kubectl'),
    helm: bins.helm,
    helm4: bins.helm4,
    cosign: bins.cosign,
    localImage: image,
    appVersion,
  });
  process.stderr.write(
    `cluster: ready in ${Math.round((Date.now() - started) / 1000)} s from the start of the setup\n`,
  );
  return async () => {
    await cluster?.stop();
    cluster = undefined;
  };
}
