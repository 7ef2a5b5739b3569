import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { networkInterfaces } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { startEtcd } from '../k8s/apiserver.js';
import { kubeconfigFor, TestPki } from '../k8s/pki.js';
import { freePort, get, Janitor, type Proc, sleep, waitReady } from '../k8s/processes.js';
import { ROOT, run } from './builds.js';
import {
  API_PORT,
  API_SERVICE_IP,
  CLUSTER_CIDR,
  CLUSTER_DOMAIN,
  cniConflist,
  containerdToml,
  corefile,
  KUBE_PROXY_HEALTHZ_PORT,
  kubeletConfigYaml,
  kubeProxyConfigYaml,
  type NodeLayout,
  paths,
  registryConfigYaml,
  SERVICE_CIDR,
} from './node-config.js';

/**
 * A real single-node Kubernetes cluster on this machine, for the tests that run the project's
 * image as a pod: etcd, kube-apiserver (service-account tokens, Node and RBAC authorization),
 * kube-controller-manager, kube-scheduler, a kubelet on Debian's containerd and runc with a CNI
 * bridge, kube-proxy (iptables), CoreDNS, and distribution's registry on loopback, which
 * containerd uses in place of ghcr.io (so the chart's default image is pulled as in a real
 * cluster). Everything runs as host processes of the test run; the state lives under one base
 * directory, and a reset (reset-host.sh) removes whatever a run left behind.
 *
 * Needs root. Only one such cluster fits on a machine (the `cni0` bridge, iptables, fixed
 * ports): a second start while one runs fails and says so.
 */

export interface ClusterParts {
  /** The directory of etcd, kube-apiserver, the node's binaries and kubectl (scripts/kube-bins.sh). */
  kubeBins: string;
  registryBin: string;
  corednsBin: string;
  /** Local (buildah) images: the pod sandbox, and the project's image. */
  pauseImage: string;
  projectImage: string;
  /** The chart's appVersion: the project's image is pushed as ghcr.io/agentkourier/agentkourier:<it>. */
  appVersion: string;
  push(local: string, remote: string): Promise<unknown>;
}

export interface NodeCluster {
  /** https://<node ip>:6443 */
  server: string;
  /** An admin kubeconfig (client certificate, system:masters). */
  kubeconfigPath: string;
  nodeIp: string;
  nodeName: string;
  /** 127.0.0.1:port of the registry, which also serves ghcr.io's names. */
  registry: string;
  /** Where hostPath PersistentVolumes may live. */
  volumesDir: string;
  stop(): Promise<void>;
}

export const NODE_NAME = 'kourier-node';
/** The project's image as the chart names it by default; containerd pulls it from the registry. */
export const PUBLISHED_IMAGE = 'ghcr.io/agentkourier/agentkourier';
const BASE = process.env.AGENTKOURIER_CLUSTER_DIR ?? '/var/lib/agentkourier-test-cluster';
const LOCK = `${BASE}.pid`;
const READY_MS = 120_000;

/** The machine's address on its default route: the node's IP (pods reach it through the bridge). */
export function nodeAddress(): string {
  for (const addresses of Object.values(networkInterfaces()))
    for (const a of addresses ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  throw new Error('this machine has no IPv4 address besides loopback: pods could not reach it');
}

/** The pid of a test process whose cluster still runs here, if any. */
function holder(): number | undefined {
  if (!existsSync(LOCK)) return undefined;
  const pid = Number(readFileSync(LOCK, 'utf8').trim());
  if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid) return undefined;
  try {
    process.kill(pid, 0);
    return pid;
  } catch {
    return undefined;
  }
}

function resetHost(kubeProxy: string): void {
  const result = spawnSync('bash', [join(ROOT, 'test/cluster/reset-host.sh'), kubeProxy], {
    env: { ...process.env, CLUSTER_BASE: BASE },
    encoding: 'utf8',
  });
  if (result.status !== 0) throw new Error(`reset-host.sh failed: ${result.stderr}`);
}

function sysctl(key: string, value: string): void {
  writeFileSync(`/proc/sys/${key.replaceAll('.', '/')}`, value);
}

export async function startNodeCluster(parts: ClusterParts): Promise<NodeCluster> {
  const other = holder();
  if (other !== undefined)
    throw new Error(`a test cluster of process ${other} runs on this machine; only one fits (${BASE})`);
  const bin = (name: string) => join(parts.kubeBins, name);
  resetHost(bin('kube-proxy'));
  mkdirSync(BASE, { recursive: true });
  writeFileSync(LOCK, String(process.pid));
  const janitor = new Janitor(BASE, true);
  const procs: Proc[] = [];
  const started = Date.now();
  const step = (what: string) =>
    process.stderr.write(`cluster: ${what} (${((Date.now() - started) / 1000).toFixed(1)} s)\n`);
  const stopAll = async () => {
    for (const proc of procs.splice(0).reverse()) await janitor.stop(proc, 10_000);
    janitor.dispose();
    if (process.env.AGENTKOURIER_CLUSTER_KEEP !== '1') resetHost(bin('kube-proxy'));
    rmSync(LOCK, { force: true });
  };

  try {
    const nodeIp = nodeAddress();
    const p = paths(BASE);
    const registryPort = await freePort();
    const registry = `127.0.0.1:${registryPort}`;
    const cacheDir =
      process.env.AGENTKOURIER_CACHE ?? join(process.env.HOME ?? '/root', '.cache/agentkourier');
    const layout: NodeLayout = {
      base: BASE,
      nodeName: NODE_NAME,
      nodeIp,
      registry,
      sandboxImage: `${registry}/kourier/pause:1`,
      mirrored: ['ghcr.io'],
      cniBinDir: '/usr/lib/cni',
      registryStorage: join(cacheDir, 'cluster-registry'),
    };
    for (const dir of [
      p.cniConfDir,
      p.cniIpamDir,
      p.kubeletRoot,
      p.podLogs,
      p.volumes,
      join(BASE, 'containerd'),
      join(BASE, 'kubelet'),
    ])
      mkdirSync(dir, { recursive: true });
    writeFileSync(p.containerdConfig, containerdToml(layout));
    writeFileSync(join(p.cniConfDir, '10-kourier.conflist'), cniConflist(layout));
    writeFileSync(p.registryConfig, registryConfigYaml(layout));
    sysctl('net.ipv4.ip_forward', '1');
    if (existsSync('/proc/sys/net/bridge/bridge-nf-call-iptables'))
      sysctl('net.bridge.bridge-nf-call-iptables', '1');

    // The registry, and the images in it.
    const registryProc = janitor.spawn('registry', parts.registryBin, ['serve', p.registryConfig]);
    procs.push(registryProc);
    await waitReady(
      registryProc,
      'the registry',
      READY_MS,
      async () => (await get(`http://${registry}/v2/`)).status === 200,
    );
    await Promise.all([
      parts.push(parts.pauseImage, layout.sandboxImage),
      parts.push(parts.projectImage, `${registry}/agentkourier/agentkourier:${parts.appVersion}`),
    ]);
    step('registry up, images pushed');

    const containerd = janitor.spawn('containerd', '/usr/bin/containerd', ['--config', p.containerdConfig]);
    procs.push(containerd);
    await waitReady(containerd, 'containerd', READY_MS, async () => {
      const r = spawnSync('ctr', ['--address', p.containerdSocket, 'version'], { stdio: 'ignore' });
      return r.status === 0;
    });
    step('containerd ready');

    // Certificates: one CA; each component's client certificate is its Kubernetes identity.
    const pki = new TestPki(BASE);
    const apiServing = pki.serving('kube-apiserver', [
      'IP:127.0.0.1',
      `IP:${nodeIp}`,
      `IP:${API_SERVICE_IP}`,
      'DNS:localhost',
      'DNS:kubernetes',
      'DNS:kubernetes.default',
      'DNS:kubernetes.default.svc',
      `DNS:kubernetes.default.svc.${CLUSTER_DOMAIN}`,
    ]);
    const sa = pki.serviceAccountKeys();
    const server = `https://${nodeIp}:${API_PORT}`;
    const kubeconfig = (name: string, user: string, groups: string[] = []) => {
      const path = join(BASE, `${name}.kubeconfig`);
      writeFileSync(path, stringify(kubeconfigFor(server, pki.caCert, pki.client(name, user, groups))), {
        mode: 0o600,
      });
      return path;
    };
    const admin = kubeconfig('admin', 'kourier-admin', ['system:masters']);
    const apiKubeletClient = pki.client('apiserver-kubelet-client', 'kube-apiserver-kubelet-client', [
      'system:masters',
    ]);

    const etcd = await startEtcd(bin('etcd'), BASE, janitor);
    procs.push(etcd.proc);
    const apiserver = janitor.spawn('kube-apiserver', bin('kube-apiserver'), [
      `--etcd-servers=${etcd.url}`,
      '--bind-address=0.0.0.0',
      `--advertise-address=${nodeIp}`,
      `--secure-port=${API_PORT}`,
      `--tls-cert-file=${apiServing.certPath}`,
      `--tls-private-key-file=${apiServing.keyPath}`,
      `--client-ca-file=${pki.caCertPath}`,
      '--authorization-mode=Node,RBAC',
      '--anonymous-auth=false',
      '--enable-admission-plugins=NodeRestriction',
      `--service-account-issuer=https://kubernetes.default.svc.${CLUSTER_DOMAIN}`,
      `--service-account-key-file=${sa.publicKeyPath}`,
      `--service-account-signing-key-file=${sa.privateKeyPath}`,
      `--service-cluster-ip-range=${SERVICE_CIDR}`,
      `--kubelet-client-certificate=${apiKubeletClient.certPath}`,
      `--kubelet-client-key=${apiKubeletClient.keyPath}`,
      // The node's name resolves nowhere here: logs, exec and the kubelet's metrics go by its IP.
      '--kubelet-preferred-address-types=InternalIP',
      '--allow-privileged=true',
      '--profiling=false',
    ]);
    procs.push(apiserver);
    const adminTls = { ca: pki.caCert, ...readClient(pki.dir, 'admin') };
    await waitReady(apiserver, 'kube-apiserver', READY_MS, async () => {
      return (await get(`https://127.0.0.1:${API_PORT}/readyz`, adminTls)).status === 200;
    });
    step('kube-apiserver ready');

    procs.push(
      janitor.spawn('kube-controller-manager', bin('kube-controller-manager'), [
        `--kubeconfig=${kubeconfig('kube-controller-manager', 'system:kube-controller-manager')}`,
        `--service-account-private-key-file=${sa.privateKeyPath}`,
        `--root-ca-file=${pki.caCertPath}`,
        '--use-service-account-credentials=true',
        `--cluster-cidr=${CLUSTER_CIDR}`,
        `--service-cluster-ip-range=${SERVICE_CIDR}`,
        '--leader-elect=false',
        '--secure-port=0',
        '--profiling=false',
      ]),
      janitor.spawn('kube-scheduler', bin('kube-scheduler'), [
        `--kubeconfig=${kubeconfig('kube-scheduler', 'system:kube-scheduler')}`,
        '--leader-elect=false',
        '--secure-port=0',
        '--profiling=false',
      ]),
    );

    const kubeletServing = pki.serving('kubelet', [`IP:${nodeIp}`, `DNS:${NODE_NAME}`]);
    writeFileSync(
      p.kubeletConfig,
      kubeletConfigYaml(layout, {
        caPath: pki.caCertPath,
        certPath: kubeletServing.certPath,
        keyPath: kubeletServing.keyPath,
      }),
    );
    const kubelet = janitor.spawn('kubelet', bin('kubelet'), [
      `--config=${p.kubeletConfig}`,
      `--kubeconfig=${kubeconfig('kubelet', `system:node:${NODE_NAME}`, ['system:nodes'])}`,
      `--root-dir=${p.kubeletRoot}`,
      `--hostname-override=${NODE_NAME}`,
      `--node-ip=${nodeIp}`,
      '--v=1',
    ]);
    procs.push(kubelet);
    writeFileSync(
      p.kubeProxyConfig,
      kubeProxyConfigYaml(layout, kubeconfig('kube-proxy', 'system:kube-proxy')),
    );
    const kubeProxy = janitor.spawn('kube-proxy', bin('kube-proxy'), [
      `--config=${p.kubeProxyConfig}`,
      '--v=1',
    ]);
    procs.push(kubeProxy);
    writeFileSync(p.corefile, corefile(layout, admin));
    procs.push(janitor.spawn('coredns', parts.corednsBin, ['-conf', p.corefile]));

    await waitReady(kubelet, 'the node', READY_MS, () => nodeReady(admin, bin('kubectl')));
    step('node Ready');
    // Without kube-proxy no pod reaches a Service, the API server's included.
    await waitReady(kubeProxy, 'kube-proxy', READY_MS, async () => {
      const res = await fetch(`http://127.0.0.1:${KUBE_PROXY_HEALTHZ_PORT}/healthz`).catch(() => undefined);
      return res?.status === 200;
    });
    step('kube-proxy ready');
    // Pods need their namespace's `default` ServiceAccount and `kube-root-ca.crt` (the
    // controller-manager makes both).
    await waitReady(kubelet, 'the default ServiceAccount', READY_MS, async () => {
      const sa = await run(bin('kubectl'), [
        '--kubeconfig',
        admin,
        'get',
        'serviceaccount',
        'default',
        '-o',
        'name',
      ]).catch(() => '');
      const ca = await run(bin('kubectl'), [
        '--kubeconfig',
        admin,
        'get',
        'configmap',
        'kube-root-ca.crt',
        '-o',
        'name',
      ]).catch(() => '');
      return sa.trim() !== '' && ca.trim() !== '';
    });
    step('default ServiceAccount and root CA ready');

    let stopped = false;
    return {
      server,
      kubeconfigPath: admin,
      nodeIp,
      nodeName: NODE_NAME,
      registry,
      volumesDir: p.volumes,
      async stop() {
        if (stopped) return;
        stopped = true;
        await drainPods(admin, bin('kubectl'));
        await stopAll();
      },
    };
  } catch (error) {
    await stopAll().catch(() => undefined);
    throw error;
  }
}

function readClient(pkiDir: string, name: string): { cert: string; key: string } {
  return {
    cert: readFileSync(join(pkiDir, `${name}.crt`), 'utf8'),
    key: readFileSync(join(pkiDir, `${name}.key`), 'utf8'),
  };
}

async function nodeReady(kubeconfigPath: string, kubectl: string): Promise<boolean> {
  const out = await run(kubectl, [
    '--kubeconfig',
    kubeconfigPath,
    'get',
    'node',
    NODE_NAME,
    '-o',
    'jsonpath={.status.conditions[?(@.type=="Ready")].status}',
  ]).catch(() => '');
  return out.trim() === 'True';
}

/**
 * Removes every workload the tests left, through the API, so the kubelet stops their
 * containers and tears their networks down itself; what a failed run leaves is the reset's.
 */
async function drainPods(kubeconfigPath: string, kubectl: string): Promise<void> {
  const k = (...args: string[]) => run(kubectl, ['--kubeconfig', kubeconfigPath, ...args]).catch(() => '');
  const namespaces = (await k('get', 'namespaces', '-o', 'jsonpath={.items[*].metadata.name}'))
    .split(' ')
    .filter((ns) => ns !== '' && !['default', 'kube-system', 'kube-public', 'kube-node-lease'].includes(ns));
  if (namespaces.length > 0) await k('delete', 'namespace', '--wait=false', ...namespaces);
  await k('delete', 'pods', '--all', '--all-namespaces', '--grace-period=1', '--wait=false');
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    const left = (await k('get', 'pods', '--all-namespaces', '-o', 'name')).trim();
    if (left === '') return;
    await sleep(500);
  }
}
