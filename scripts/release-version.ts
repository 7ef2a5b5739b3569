import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';

/**
 * The release workflow's gate (.github/workflows/release.yml, job `version`): a tag names the
 * version it publishes, and the tree it points at must say the same version, or the image, the
 * chart and `agentkourier --version` would disagree about what was released.
 *
 *   node scripts/release-version.ts <tag>     (Node 24 runs it as is; needs node_modules for yaml)
 *
 * Prints the version (the tag without its `v`) on the last line of stdout and exits 0, or says
 * what disagrees on stderr and exits 1. The tag must be `vMAJOR.MINOR.PATCH` with an optional
 * `-prerelease`; SemVer build metadata (`+…`) is refused because neither an image tag nor an
 * OCI chart tag can hold a `+`. package.json's `version`, and Chart.yaml's `version` and
 * `appVersion`, must all be that version (docs/releasing.md: bump them, then tag).
 */

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const NUMBER = '(?:0|[1-9]\\d*)';
const TAG = new RegExp(`^v(${NUMBER}\\.${NUMBER}\\.${NUMBER}(?:-[0-9A-Za-z-]+(?:\\.[0-9A-Za-z-]+)*)?)$`);

export interface Sources {
  packageJson: string;
  chartYaml: string;
}

export function releaseVersion(tag: string, sources: Sources): string {
  const match = TAG.exec(tag);
  if (match?.[1] === undefined)
    throw new Error(`tag "${tag}" is not vMAJOR.MINOR.PATCH (with an optional -prerelease, no +build)`);
  const version = match[1];
  const pkg = JSON.parse(sources.packageJson) as { version?: unknown };
  const chart = (parse(sources.chartYaml) ?? {}) as { version?: unknown; appVersion?: unknown };
  const found: Array<[string, unknown]> = [
    ['package.json version', pkg.version],
    ['charts/agentkourier/Chart.yaml version', chart.version],
    ['charts/agentkourier/Chart.yaml appVersion', chart.appVersion],
  ];
  const wrong = found.filter(([, v]) => String(v) !== version).map(([what, v]) => `${what} is ${String(v)}`);
  if (wrong.length > 0)
    throw new Error(`tag ${tag} says ${version}, but ${wrong.join(', ')}: bump them and tag again`);
  return version;
}

export function readSources(root = ROOT): Sources {
  return {
    packageJson: readFileSync(join(root, 'package.json'), 'utf8'),
    chartYaml: readFileSync(join(root, 'charts/agentkourier/Chart.yaml'), 'utf8'),
  };
}

if (import.meta.main) {
  try {
    const tag = process.argv[2];
    if (tag === undefined) throw new Error('usage: node scripts/release-version.ts <tag>');
    process.stdout.write(`${releaseVersion(tag, readSources())}\n`);
  } catch (error) {
    process.stderr.write(`release-version: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  }
}
