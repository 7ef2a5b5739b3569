import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { PEERS } from '../../scripts/test-peers.js';

/**
 * `npm test` on a machine that lacks a peer says so at the start, naming each one and the one
 * command that installs them, instead of a suite failing deep inside.
 */
describe('the test peers check (scripts/test-peers.ts)', () => {
  it('names what is missing and the command that installs it, and fails', () => {
    // No PATH: the commands it looks for (go, python3) are not found.
    const run = spawnSync(process.execPath, ['scripts/test-peers.ts'], {
      env: { PATH: '/nonexistent' },
      encoding: 'utf8',
    });
    expect(run.status).toBe(1);
    expect(run.stderr).toContain('this machine lacks some');
    expect(run.stderr).toContain('  - Go, which builds kube-apiserver');
    expect(run.stderr).toContain('  - Python 3 with venv');
    expect(run.stderr).toContain('bash scripts/setup-test-peers.sh');
  });

  it('lists the Debian packages of what is missing, for the setup script', () => {
    const run = spawnSync(process.execPath, ['scripts/test-peers.ts', '--debian-packages'], {
      env: { PATH: '/nonexistent' },
      encoding: 'utf8',
    });
    expect(run.status).toBe(0);
    expect(run.stdout.trim().split(' ')).toContain('python3-venv');
  });

  it('names a Debian package, or says how else, for every peer', () => {
    for (const peer of PEERS) {
      const how = peer.debian !== undefined || peer.root === true || peer.what.includes('go.dev');
      expect([peer.what, how]).toEqual([peer.what, true]);
    }
  });
});
