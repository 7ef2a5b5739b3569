import { describe, expect, it } from 'vitest';
import { documentedVerifyCommands, shellCommands } from './documented.js';

/**
 * One way to verify and install a release, wherever it is written: the chart's README gives
 * docs/releasing.md's commands for this repository (the cluster test runs releasing.md's).
 */

const OWNER = 'agentkourier';
const REPO = 'agentkourier';
const forThisRepository = (line: string) => line.replaceAll('<owner>', OWNER).replaceAll('<repo>', REPO);

describe('the verify and install lines of a release', () => {
  it('checks the image, the chart and the SBOM attestation, each by digest with the release identity', () => {
    const commands = documentedVerifyCommands();
    expect(commands.map((c) => c.split(' ').slice(0, 2).join(' '))).toEqual([
      'cosign verify',
      'cosign verify',
      'cosign verify-attestation',
    ]);
    for (const c of commands) {
      expect(c).toMatch(/@sha256:<(chart-)?digest>/);
      expect(c).toContain("--certificate-identity-regexp '^https://github\\.com/<owner>/<repo>/");
      expect(c).toContain('--certificate-oidc-issuer https://token.actions.githubusercontent.com');
    }
  });

  it("the chart README's verify and install lines are docs/releasing.md's, for this repository", () => {
    const chart = shellCommands('charts/agentkourier/README.md', '## From a release, verified');
    expect(chart.filter((l) => l.startsWith('cosign '))).toEqual(
      documentedVerifyCommands().map(forThisRepository),
    );
    const install = (lines: string[]) =>
      lines.find((l) => l.startsWith('helm install agentkourier oci://')) ?? '(none)';
    const released = forThisRepository(
      install(shellCommands('docs/releasing.md', '## Verifying what you install')),
    );
    // The README installs into a namespace it made in its first block; releasing.md creates it.
    expect(install(chart)).toBe(
      released.replace(' --namespace agentkourier --create-namespace', ' -n agentkourier'),
    );
    expect(released).toContain('@sha256:<chart-digest>');
    expect(released).toContain('--set image.digest=sha256:<digest>');
  });
});
