import { describe, expect, it } from 'vitest';
import { readSources, releaseVersion } from '../../scripts/release-version.js';

function sources(pkg: string, chart: string, app = chart) {
  return {
    packageJson: JSON.stringify({ name: 'agentkourier', version: pkg }),
    chartYaml: `apiVersion: v2\nname: agentkourier\nversion: ${chart}\nappVersion: "${app}"\n`,
  };
}

describe("scripts/release-version.ts: the release workflow's version gate", () => {
  it('passes a tag that matches package.json and Chart.yaml, and gives the version without v', () => {
    expect(releaseVersion('v1.2.3', sources('1.2.3', '1.2.3'))).toBe('1.2.3');
    expect(releaseVersion('v1.2.3-rc.1', sources('1.2.3-rc.1', '1.2.3-rc.1'))).toBe('1.2.3-rc.1');
  });

  it('refuses a tag whose version is not the one package.json says, naming both', () => {
    expect(() => releaseVersion('v1.2.4', sources('1.2.3', '1.2.4'))).toThrow(
      'tag v1.2.4 says 1.2.4, but package.json version is 1.2.3',
    );
  });

  it("refuses a tag that Chart.yaml's version or appVersion does not match", () => {
    expect(() => releaseVersion('v1.2.3', sources('1.2.3', '1.2.2'))).toThrow('Chart.yaml version is 1.2.2');
    expect(() => releaseVersion('v1.2.3', sources('1.2.3', '1.2.3', '1.2.0'))).toThrow(
      'Chart.yaml appVersion is 1.2.0',
    );
  });

  it('refuses tags that are not vMAJOR.MINOR.PATCH[-prerelease]', () => {
    for (const tag of [
      '1.2.3',
      'v1.2',
      'v1.2.3+build.5',
      'v01.2.3',
      'v1.2.3-',
      'v1.2.3-rc..1',
      'release-1',
    ]) {
      expect(() => releaseVersion(tag, sources('1.2.3', '1.2.3')), tag).toThrow('is not vMAJOR.MINOR.PATCH');
    }
  });

  it("passes this tree's own version (package.json and Chart.yaml agree now)", () => {
    const tree = readSources();
    const version = (JSON.parse(tree.packageJson) as { version: string }).version;
    expect(releaseVersion(`v${version}`, tree)).toBe(version);
  });
});
