import { execFileSync, spawnSync } from 'node:child_process';

/**
 * Builds kube-apiserver and etcd from the Kubernetes Go modules once, before any test needs
 * them (cached outside the clone; a rebuild only when the pins change). Without Go the
 * Kubernetes tests skip and say so; the build is not tried.
 */
export default function setup(): void {
  if (spawnSync('go', ['version'], { stdio: 'ignore' }).status !== 0) return;
  execFileSync('bash', ['scripts/kube-bins.sh'], { stdio: ['ignore', 'ignore', 'inherit'] });
}
