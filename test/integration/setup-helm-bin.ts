import { spawnSync } from 'node:child_process';
import { runGoToolBuild } from './quiet-go.js';

/**
 * Builds the Helm CLI from its Go module once, before the chart tests need it (cached outside
 * the clone; a rebuild only when the pin changes). Without Go the chart tests skip and say so.
 */
export default async function setup(): Promise<void> {
  if (spawnSync('go', ['version'], { stdio: 'ignore' }).status !== 0) return;
  await runGoToolBuild('scripts/helm-bin.sh');
}
