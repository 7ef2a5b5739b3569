import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import {
  closeSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { KubeConfig } from '@kubernetes/client-node';
import { stringify } from 'yaml';

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
const STOP_GRACE_MS = 5_000;
const LOG_TAIL = 4_000;

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
    writeFileSync(kubeconfigPath, kubeconfigYaml(server, pki), { mode: 0o600 });
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
// Processes

interface Proc {
  child: ChildProcess;
  pid: number;
  name: string;
  logPath: string;
}

// Reads `+pgid` / `-pgid` lines; at end of input (our end of the pipe closed: we exited, however)
// kills what is left and removes the temp dir ($1).
const WATCHDOG_SCRIPT = `declare -A groups=()
while IFS= read -r line; do
  case "$line" in
    +*) groups[\${line#+}]=1 ;;
    -*) unset "groups[\${line#-}]" ;;
  esac
done
for g in "\${!groups[@]}"; do kill -KILL -- "-$g" 2>/dev/null; done
rm -rf -- "$1"
`;

/**
 * Owns the processes of one cluster and its temp dir, and makes sure neither outlives the test
 * process: a process 'exit' handler kills them, and a detached watchdog (bash reading a pipe
 * from us) kills their process groups and removes the dir when that pipe closes, which also
 * covers a test process killed by a signal, where 'exit' handlers do not run.
 */
class Janitor {
  private readonly procs = new Set<Proc>();
  private readonly watchdog: ChildProcess;
  private readonly onExit = () => {
    this.killAllNow();
    this.dispose();
  };

  constructor(readonly dir: string) {
    this.watchdog = spawn('bash', ['-c', WATCHDOG_SCRIPT, 'kourier-kube-watchdog', dir], {
      stdio: ['pipe', 'ignore', 'ignore'],
      detached: true,
    });
    this.watchdog.on('error', () => undefined);
    this.watchdog.stdin?.on('error', () => undefined);
    this.watchdog.unref();
    (this.watchdog.stdin as Socket | null)?.unref();
    process.on('exit', this.onExit);
  }

  spawn(name: string, command: string, args: string[]): Proc {
    const logPath = join(this.dir, `${name}.log`);
    const fd = openSync(logPath, 'a');
    let child: ChildProcess;
    try {
      // Its own process group (detached), so a kill reaches everything it may start.
      child = spawn(command, args, { cwd: this.dir, stdio: ['ignore', fd, fd], detached: true });
    } finally {
      closeSync(fd);
    }
    if (child.pid === undefined) throw new Error(`could not start ${command}`);
    child.on('error', () => undefined);
    child.unref();
    const proc: Proc = { child, pid: child.pid, name, logPath };
    this.procs.add(proc);
    this.watchdog.stdin?.write(`+${proc.pid}\n`);
    return proc;
  }

  /** SIGTERM to the process group, SIGKILL after a grace period; resolves when it has exited. */
  async stop(proc: Proc): Promise<void> {
    if (this.procs.has(proc)) {
      if (running(proc)) {
        killGroup(proc.pid, 'SIGTERM');
        if (!(await exited(proc, STOP_GRACE_MS))) {
          killGroup(proc.pid, 'SIGKILL');
          await exited(proc, STOP_GRACE_MS);
        }
      }
      killGroup(proc.pid, 'SIGKILL'); // anything left in its group
      this.procs.delete(proc);
      this.watchdog.stdin?.write(`-${proc.pid}\n`);
    }
  }

  killAllNow(): void {
    for (const proc of this.procs) killGroup(proc.pid, 'SIGKILL');
    this.procs.clear();
  }

  /** Ends the watchdog (nothing left for it to kill) and removes the temp dir. */
  dispose(): void {
    process.removeListener('exit', this.onExit);
    try {
      this.watchdog.kill('SIGKILL');
    } catch {}
    rmSync(this.dir, { recursive: true, force: true, maxRetries: 3 });
  }
}

function running(proc: Proc): boolean {
  return proc.child.exitCode === null && proc.child.signalCode === null;
}

function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {}
}

/** Whether the process exits within `ms` (a ref'd timer keeps the event loop alive meanwhile). */
function exited(proc: Proc, ms: number): Promise<boolean> {
  if (!running(proc)) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      proc.child.removeListener('exit', onExit);
      resolve(false);
    }, ms);
    const onExit = () => {
      clearTimeout(timer);
      resolve(true);
    };
    proc.child.once('exit', onExit);
  });
}

function logTail(proc: Proc): string {
  try {
    return tail(readFileSync(proc.logPath, 'utf8'));
  } catch {
    return '(no log)';
  }
}

function tail(text: string): string {
  return text.length > LOG_TAIL ? `…${text.slice(-LOG_TAIL)}` : text;
}

function describeExit(proc: Proc): string {
  const { exitCode, signalCode } = proc.child;
  return signalCode !== null ? `killed by ${signalCode}` : `exited with code ${exitCode}`;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Polls `probe` until it returns true, the process dies, or `ms` passes; the error carries the
 * tail of the process's log. A port taken between our pick and the bind is reported as such.
 */
async function waitReady(proc: Proc, what: string, ms: number, probe: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + ms;
  let lastError = '';
  while (Date.now() < deadline) {
    if (!running(proc)) {
      const log = logTail(proc);
      const error = new Error(`${what} ${describeExit(proc)} before it was ready; ${proc.logPath}:\n${log}`);
      if (/address already in use/i.test(log)) (error as Error & { portTaken?: boolean }).portTaken = true;
      throw error;
    }
    try {
      if (await probe()) return;
      lastError = '';
    } catch (error) {
      lastError = String(error);
    }
    await sleep(200);
  }
  throw new Error(
    `${what} was not ready within ${ms / 1000} s${lastError ? ` (last probe: ${lastError})` : ''}; ${proc.logPath}:\n${logTail(proc)}`,
  );
}

const portTaken = (error: unknown) =>
  error instanceof Error && (error as Error & { portTaken?: boolean }).portTaken === true;

/** A port nobody listens on now (the OS picks it); the server binds it right after. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, LOOPBACK, () => {
      const address = probe.address();
      probe.close(() => {
        if (address !== null && typeof address === 'object') resolve(address.port);
        else reject(new Error('no port was assigned'));
      });
    });
  });
}

// ---------------------------------------------------------------------------------------------
// etcd

async function startEtcd(
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
    const tls = { ca: pki.caCert, cert: pki.adminCert, key: pki.adminKey };
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
  adminCert: string;
  adminKey: string;
  saPublicKeyPath: string;
  saPrivateKeyPath: string;
}

function makePki(dir: string): Pki {
  const pki = join(dir, 'pki');
  mkdirSync(pki, { mode: 0o700 });
  const path = (name: string) => join(pki, name);
  // Every name is relative to the pki dir (the cwd) and has no spaces, so a command line splits on ' '.
  const openssl = (command: string) => {
    const args = command.split(' ');
    try {
      execFileSync('openssl', args, { cwd: pki, stdio: ['ignore', 'ignore', 'pipe'] });
    } catch (error) {
      const stderr = (error as { stderr?: Buffer }).stderr?.toString() ?? '';
      throw new Error(`openssl ${command} failed: ${String(error)}\n${stderr}`, { cause: error });
    }
  };
  const ecKey = (name: string) => {
    const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    writeFileSync(path(name), privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
  };

  writeFileSync(
    path('openssl.cnf'),
    [
      '[req]',
      'distinguished_name = dn',
      'prompt = no',
      '[dn]',
      'CN = unused',
      '[ca]',
      'basicConstraints = critical, CA:TRUE',
      'keyUsage = critical, keyCertSign, cRLSign, digitalSignature',
      'subjectKeyIdentifier = hash',
      '[serving]',
      'basicConstraints = critical, CA:FALSE',
      'keyUsage = critical, digitalSignature',
      'extendedKeyUsage = serverAuth',
      `subjectAltName = IP:${LOOPBACK}, DNS:localhost`,
      'authorityKeyIdentifier = keyid',
      '[client]',
      'basicConstraints = critical, CA:FALSE',
      'keyUsage = critical, digitalSignature',
      'extendedKeyUsage = clientAuth',
      'authorityKeyIdentifier = keyid',
      '',
    ].join('\n'),
  );

  ecKey('ca.key');
  openssl(
    'req -x509 -new -config openssl.cnf -extensions ca -key ca.key -subj /CN=agentkourier-test-ca -days 3650 -sha256 -out ca.crt',
  );
  const leaf = (name: string, subject: string, extensions: string) => {
    ecKey(`${name}.key`);
    openssl(`req -new -config openssl.cnf -key ${name}.key -subj ${subject} -out ${name}.csr`);
    const serial = `0x${randomBytes(16).toString('hex')}`;
    openssl(
      `x509 -req -in ${name}.csr -CA ca.crt -CAkey ca.key -set_serial ${serial} -days 3650 -sha256 ` +
        `-extfile openssl.cnf -extensions ${extensions} -out ${name}.crt`,
    );
  };
  leaf('serving', '/CN=kube-apiserver', 'serving');
  leaf('admin', '/O=system:masters/CN=kourier-admin', 'client');

  const sa = generateKeyPairSync('rsa', { modulusLength: 2048 });
  writeFileSync(path('sa.pub'), sa.publicKey.export({ type: 'spki', format: 'pem' }));
  writeFileSync(path('sa.key'), sa.privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });

  return {
    caCertPath: path('ca.crt'),
    caCert: readFileSync(path('ca.crt'), 'utf8'),
    servingCertPath: path('serving.crt'),
    servingKeyPath: path('serving.key'),
    adminCert: readFileSync(path('admin.crt'), 'utf8'),
    adminKey: readFileSync(path('admin.key'), 'utf8'),
    saPublicKeyPath: path('sa.pub'),
    saPrivateKeyPath: path('sa.key'),
  };
}

function kubeconfigYaml(server: string, pki: Pki): string {
  const b64 = (pem: string) => Buffer.from(pem).toString('base64');
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'kourier-test', cluster: { server, 'certificate-authority-data': b64(pki.caCert) } }],
    users: [
      {
        name: 'kourier-admin',
        user: { 'client-certificate-data': b64(pki.adminCert), 'client-key-data': b64(pki.adminKey) },
      },
    ],
    contexts: [{ name: 'kourier-test', context: { cluster: 'kourier-test', user: 'kourier-admin' } }],
    'current-context': 'kourier-test',
  });
}

// ---------------------------------------------------------------------------------------------

function get(
  url: string,
  tls: { ca?: string; cert?: string; key?: string },
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const request = url.startsWith('https:') ? httpsRequest : httpRequest;
    const req = request(url, { method: 'GET', timeout: 5_000, ...tls }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        body += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', reject);
    req.end();
  });
}
