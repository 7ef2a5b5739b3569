import { execFileSync } from 'node:child_process';

/** Makes sure .venv-peers exists with the pinned a2a-sdk, so `npm test` works on a fresh machine. */
export default function setup(): void {
  execFileSync('bash', ['scripts/python-peers.sh'], { stdio: 'inherit' });
}
