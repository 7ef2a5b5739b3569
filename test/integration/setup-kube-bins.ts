import { spawnSync } from 'node:child_process';
import { runGoToolBuild } from './quiet-go.js';

/**
 * Builds kube-apiserver and etcd from the Kubernetes Go modules once, before any test needs
 * them (cached outside the clone; a rebuild only when the pins change). Without Go the
 * Kubernetes tests skip and say so; the build is not tried.
 */
export default async function setup(): Promise<void> {
  if (spawnSync('go', ['version'], { stdio: 'ignore' }).status !== 0) return;
  await runGoToolBuild('scripts/kube-bins.sh');
}
