import { spawnSync } from 'node:child_process';
import { runGoToolBuild } from './quiet-go.js';

/**
 * Builds the tests' OpenID provider (tools/oidc-peer, zitadel/oidc's example provider) from its
 * Go module once, before the identity tests need it (cached outside the clone).
 */
export default async function setup(): Promise<void> {
  if (spawnSync('go', ['version'], { stdio: 'ignore' }).status !== 0) return;
  await runGoToolBuild('scripts/go-tool-bin.sh', 'tools/oidc-peer', '.', 'oidc-peer');
}
