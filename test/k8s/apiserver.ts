import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { KubeConfig } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { type CertPair, kubeconfigFor, TestPki } from './pki.js';
import { freePort, get, Janitor, type Proc, portTaken, tail, waitReady } from './processes.js';

/**
 * A real control plane for integration tests: etcd and kube-apiserver, built from pinned Go
 * modules by scripts/kube-bins.sh (cached outside the clone), started on free loopback ports
 * with certificates made for this run in a temp dir. No scheduler, controller-manager or
 * kubelet: CRDs (with CEL validation), Leases, Secrets, RBAC, watches and finalizers behave as
 * in a real cluster; garbage collection, namespace deletion and workload controllers do not
 * exist (a deleted namespace stays Terminating, so give each test its own namespace).
 *
 * The admin identity is a client certificate in group system:masters.
 */

/** Thrown when the binaries are not built yet and `go` is not on PATH to build them. */
export class NoGoError extends Error {
  constructor(
    message = 'go is not on PATH: it is needed to build kube-apiserver and etcd (scripts/kube-bins.sh)',
  ) {
    super(message);
    this.name = 'NoGoError';
  }
}

export interface TestCluster {
  /** https://127.0.0.1:PORT */
  server: string;
  /** A kubeconfig (admin client certificate, data inline) in the cluster's temp dir. */
  kubeconfigPath: string;
  /** Loaded from kubeconfigPath. */
  kubeConfig: KubeConfig;
  /** Kills kube-apiserver, then etcd, and removes the temp dir. Idempotent. */
  stop(): Promise<void>;
  /** Stops kube-apiserver and starts it again on the same port, etcd untouched; resolves when ready. */
  restartApiServer(): Promise<void>;
}

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const KUBE_BINS_SCRIPT = join(ROOT, 'scripts/kube-bins.sh');
const LOOPBACK = '127.0.0.1';
const ETCD_READY_MS = 60_000;
const APISERVER_READY_MS = 120_000;

export function goAvailable(): boolean {
  const result = spawnSync('go', ['version'], { stdio: 'ignore' });
  return result.error === undefined && result.status === 0;
}

/**
 * Builds (once, cached outside the clone) kube-apiserver and etcd with scripts/kube-bins.sh and
 * returns the directory that holds both. A cold build takes many minutes; its progress lines
 * go to our stderr. Asynchronous, so a test worker stays responsive meanwhile.
 */
export async function kubeBinaries(): Promise<string> {
  const child = spawn('bash', [KUBE_BINS_SCRIPT], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr = tail(stderr + chunk);
    process.stderr.write(chunk);
  });
  const outcome = await new Promise<string>((resolve) => {
    child.once('error', (error) => resolve(error.message));
    child.once('close', (code, signal) => resolve(signal !== null ? `killed by ${signal}` : `exit ${code}`));
  });
  if (outcome === 'exit 0') {
    const dir = stdout.trim().split('\n').at(-1) ?? '';
    if (existsSync(join(dir, 'kube-apiserver')) && existsSync(join(dir, 'etcd'))) return dir;
  }
  if (!goAvailable()) throw new NoGoError();
  throw new Error(`scripts/kube-bins.sh failed (${outcome}):\n${tail(`${stdout}\n${stderr}`)}`);
}

export async function startCluster(): Promise<TestCluster> {
  const bins = await kubeBinaries();
  const dir = mkdtempSync(join(tmpdir(), 'kourier-kube-'));
  const janitor = new Janitor(dir);
  try {
    const pki = makePki(dir);
    const etcd = await startEtcd(join(bins, 'etcd'), dir, janitor);
    const apiserver = await startApiServer(join(bins, 'kube-apiserver'), pki, etcd.url, janitor);
    const server = `https://${LOOPBACK}:${apiserver.port}`;
    const kubeconfigPath = join(dir, 'kubeconfig');
    writeFileSync(kubeconfigPath, stringify(kubeconfigFor(server, pki.caCert, pki.admin)), { mode: 0o600 });
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromFile(kubeconfigPath);

    let current = apiserver;
    let stopped = false;
    return {
      server,
      kubeconfigPath,
      kubeConfig,
      async stop() {
        if (stopped) return;
        stopped = true;
        await janitor.stop(current.proc);
        await janitor.stop(etcd.proc);
        janitor.dispose();
      },
      async restartApiServer() {
        if (stopped) throw new Error('the test cluster is stopped');
        await janitor.stop(current.proc);
        current = await startApiServer(join(bins, 'kube-apiserver'), pki, etcd.url, janitor, current.port);
      },
    };
  } catch (error) {
    janitor.killAllNow();
    janitor.dispose();
    throw error;
  }
}

// ---------------------------------------------------------------------------------------------
// etcd

/** etcd on free loopback ports, its data in `dir` (thrown away: no fsync). */
export async function startEtcd(
  binary: string,
  dir: string,
  janitor: Janitor,
): Promise<{ url: string; proc: Proc }> {
  for (let attempt = 1; ; attempt++) {
    const clientPort = await freePort();
    const peerPort = await freePort();
    const url = `http://${LOOPBACK}:${clientPort}`;
    const peer = `http://${LOOPBACK}:${peerPort}`;
    const dataDir = join(dir, 'etcd-data');
    rmSync(dataDir, { recursive: true, force: true });
    const proc = janitor.spawn('etcd', binary, [
      '--name=kourier-test',
      `--data-dir=${dataDir}`,
      `--listen-client-urls=${url}`,
      `--advertise-client-urls=${url}`,
      `--listen-peer-urls=${peer}`,
      `--initial-advertise-peer-urls=${peer}`,
      `--initial-cluster=kourier-test=${peer}`,
      '--unsafe-no-fsync=true', // the data is thrown away
      '--log-level=warn',
    ]);
    try {
      await waitReady(proc, 'etcd', ETCD_READY_MS, async () => {
        const { status, body } = await get(`${url}/health`, {});
        return status === 200 && /"health"\s*:\s*"true"/.test(body);
      });
      return { url, proc };
    } catch (error) {
      await janitor.stop(proc);
      if (attempt < 3 && portTaken(error)) continue;
      throw error;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// kube-apiserver

async function startApiServer(
  binary: string,
  pki: Pki,
  etcdUrl: string,
  janitor: Janitor,
  fixedPort?: number,
): Promise<{ port: number; proc: Proc }> {
  for (let attempt = 1; ; attempt++) {
    const port = fixedPort ?? (await freePort());
    const proc = janitor.spawn('kube-apiserver', binary, apiServerArgs(pki, etcdUrl, port));
    const tls = { ca: pki.caCert, cert: pki.admin.cert, key: pki.admin.key };
    try {
      await waitReady(proc, 'kube-apiserver', APISERVER_READY_MS, async () => {
        const { status } = await get(`https://${LOOPBACK}:${port}/readyz`, tls);
        return status === 200;
      });
      return { port, proc };
    } catch (error) {
      await janitor.stop(proc);
      if (attempt < 3 && portTaken(error) && fixedPort === undefined) continue;
      throw error;
    }
  }
}

function apiServerArgs(pki: Pki, etcdUrl: string, port: number): string[] {
  return [
    `--etcd-servers=${etcdUrl}`,
    `--bind-address=${LOOPBACK}`,
    `--advertise-address=${LOOPBACK}`,
    `--secure-port=${port}`,
    `--tls-cert-file=${pki.servingCertPath}`,
    `--tls-private-key-file=${pki.servingKeyPath}`,
    `--client-ca-file=${pki.caCertPath}`,
    '--authorization-mode=RBAC',
    '--anonymous-auth=false',
    `--service-account-issuer=https://${LOOPBACK}:${port}`,
    `--service-account-key-file=${pki.saPublicKeyPath}`,
    `--service-account-signing-key-file=${pki.saPrivateKeyPath}`,
    '--service-cluster-ip-range=10.0.0.0/24',
    // No ServiceAccount controller runs, so Pods would be refused for want of a `default` SA.
    '--disable-admission-plugins=ServiceAccount',
    '--allow-privileged=true',
    // The `kubernetes` Endpoints would point at 127.0.0.1, which Endpoints validation refuses.
    '--endpoint-reconciler-type=none',
    '--profiling=false',
  ];
}

// ---------------------------------------------------------------------------------------------
// Certificates: one CA signs the serving certificate (127.0.0.1, localhost) and the admin client
// certificate (O=system:masters); the service-account signing key is a separate RSA key.

interface Pki {
  caCertPath: string;
  caCert: string;
  servingCertPath: string;
  servingKeyPath: string;
  admin: CertPair;
  saPublicKeyPath: string;
  saPrivateKeyPath: string;
}

function makePki(dir: string): Pki {
  const pki = new TestPki(dir);
  const serving = pki.serving('serving', [`IP:${LOOPBACK}`, 'DNS:localhost']);
  const sa = pki.serviceAccountKeys();
  return {
    caCertPath: pki.caCertPath,
    caCert: pki.caCert,
    servingCertPath: serving.certPath,
    servingKeyPath: serving.keyPath,
    admin: pki.client('admin', 'kourier-admin', ['system:masters']),
    saPublicKeyPath: sa.publicKeyPath,
    saPrivateKeyPath: sa.privateKeyPath,
  };
}
