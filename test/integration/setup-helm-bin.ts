import { execFileSync, spawnSync } from 'node:child_process';

/**
 * Builds the Helm CLI from its Go module once, before the chart tests need it (cached outside
 * the clone; a rebuild only when the pin changes). Without Go the chart tests skip and say so.
 */
export default function setup(): void {
  if (spawnSync('go', ['version'], { stdio: 'ignore' }).status !== 0) return;
  execFileSync('bash', ['scripts/helm-bin.sh'], { stdio: ['ignore', 'ignore', 'inherit'] });
}
