/**
 * The real peers the test suite starts, and whether this machine has them. `npm test` runs this
 * first: a machine that lacks one hears so at the start, with the command that installs them,
 * rather than from a suite failing deep inside. scripts/setup-test-peers.sh asks it which Debian
 * packages to install (`--debian-packages`), so the list lives here once.
 *
 *   node scripts/test-peers.ts                    # exit 1, naming what is missing
 *   node scripts/test-peers.ts --debian-packages  # the missing Debian packages, one line
 */
import { spawnSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';

export interface Peer {
  /** What it is and which tests need it. */
  what: string;
  /** Present when one of these paths is executable, or the command runs (`--version`). */
  paths?: string[];
  command?: string;
  /** The process must run as root. */
  root?: true;
  /** The Debian package that brings it; none: installed another way (said in `what`). */
  debian?: string;
}

export const PEERS: readonly Peer[] = [
  {
    what: 'PostgreSQL 15, for the store tests (they start their own cluster)',
    paths: ['/usr/lib/postgresql/15/bin/initdb'],
    debian: 'postgresql',
  },
  { what: "Chromium, for the web chat's browser test", paths: ['/usr/bin/chromium'], debian: 'chromium' },
  {
    what: 'Prometheus, for the metrics and alert-rule tests',
    paths: ['/usr/bin/prometheus'],
    debian: 'prometheus',
  },
  {
    what: 'promtool, which checks the metrics and the alert rules',
    paths: ['/usr/bin/promtool'],
    debian: 'prometheus',
  },
  {
    what: 'Alertmanager, for the trigger tests',
    paths: ['/usr/bin/prometheus-alertmanager'],
    debian: 'prometheus-alertmanager',
  },
  {
    what: "shellcheck, which actionlint runs over the workflows' scripts",
    paths: ['/usr/bin/shellcheck'],
    debian: 'shellcheck',
  },
  {
    what: 'containerd, for the real cluster of test/cluster/',
    paths: ['/usr/bin/containerd'],
    debian: 'containerd',
  },
  { what: 'runc, for the real cluster', paths: ['/usr/sbin/runc', '/usr/bin/runc'], debian: 'runc' },
  {
    what: 'the CNI plugins, for the real cluster',
    paths: ['/usr/lib/cni/bridge'],
    debian: 'containernetworking-plugins',
  },
  {
    what: 'buildah, to build the image from the Dockerfile without Docker',
    paths: ['/usr/bin/buildah'],
    debian: 'buildah',
  },
  { what: "mmdebstrap, for the image's base", paths: ['/usr/bin/mmdebstrap'], debian: 'mmdebstrap' },
  { what: 'iptables, for kube-proxy', paths: ['/usr/sbin/iptables'], debian: 'iptables' },
  { what: 'ip (iproute2), for the pod network', paths: ['/usr/sbin/ip', '/usr/bin/ip'], debian: 'iproute2' },
  {
    what: "fusermount3 (fuse3), for the power-loss test's file system",
    paths: ['/usr/bin/fusermount3'],
    debian: 'fuse3',
  },
  { what: 'Python 3 with venv, for the official a2a-sdk peers', command: 'python3', debian: 'python3-venv' },
  {
    what: 'Go, which builds kube-apiserver, etcd, the kubelet, helm and the cluster tools from their modules (go.dev/dl, or Debian\u2019s golang-go when recent enough)',
    command: 'go',
  },
  { what: 'root, for the real cluster (a kubelet, containerd and iptables need it)', root: true },
];

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function present(peer: Peer): boolean {
  if (peer.root === true) return process.getuid?.() === 0;
  if (peer.paths !== undefined) return peer.paths.some(executable);
  if (peer.command !== undefined)
    return (
      spawnSync(peer.command, [peer.command === 'go' ? 'version' : '--version'], { stdio: 'ignore' })
        .status === 0
    );
  return true;
}

export function missingPeers(): Peer[] {
  return PEERS.filter((peer) => !present(peer));
}

if (import.meta.main) {
  const missing = missingPeers();
  if (process.argv.includes('--debian-packages')) {
    process.stdout.write(
      `${[...new Set(missing.flatMap((p) => (p.debian === undefined ? [] : [p.debian])))].join(' ')}\n`,
    );
  } else if (missing.length > 0) {
    process.stderr.write(
      [
        'npm test starts real peers, and this machine lacks some:',
        ...missing.map((p) => `  - ${p.what}`),
        '',
        'On Debian, as root: bash scripts/setup-test-peers.sh (what CI runs; it installs the packages,',
        'the Python peers and the Go tools, cached outside the clone). Then npm test again.',
        '',
      ].join('\n'),
    );
    process.exitCode = 1;
  }
}
