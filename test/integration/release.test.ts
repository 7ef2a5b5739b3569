import { execFile, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { goAvailable } from '../k8s/apiserver.js';
import { CHART, deploymentShape, helmBinary, only, parseObjects, runHelm } from '../k8s/helm.js';

/**
 * The release machinery with the real tools: actionlint (built from tools/actionlint) over
 * .github/workflows/, and scripts/package-chart.sh with the helm built from tools/helm, the
 * packaged chart read back with helm. What the workflows do on GitHub (push, sign, attest)
 * cannot run here; test/release/workflows.test.ts checks those steps as data.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const HAS_GO = goAvailable();
const WORKFLOWS = join(ROOT, '.github/workflows');

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function run(cmd: string, args: string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((done) => {
    execFile(
      cmd,
      args,
      { cwd: ROOT, env: { ...process.env, ...env }, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === 'number' ? error.code : 1;
        done({ code, stdout, stderr });
      },
    );
  });
}

const lastLine = (text: string) => text.trim().split('\n').at(-1) ?? '';

/** Builds actionlint once (cached outside the clone) and returns its path. */
async function actionlintBinary(): Promise<string> {
  const built = await run('bash', [
    'scripts/go-tool-bin.sh',
    'tools/actionlint',
    'github.com/rhysd/actionlint/cmd/actionlint',
  ]);
  if (built.code !== 0)
    throw new Error(`scripts/go-tool-bin.sh failed (exit ${built.code}):\n${built.stderr}`);
  return lastLine(built.stdout);
}

const hasShellcheck = spawnSync('shellcheck', ['--version'], { stdio: 'ignore' }).status === 0;

describe.skipIf(!HAS_GO)(
  'actionlint over .github/workflows/ (skipped only without Go, which builds it)',
  () => {
    let actionlint = '';
    let scratch = '';
    beforeAll(async () => {
      actionlint = await actionlintBinary();
      scratch = mkdtempSync(join(tmpdir(), 'ak-actionlint-'));
    }, 600_000);
    afterAll(() => {
      if (scratch !== '') rmSync(scratch, { recursive: true, force: true });
    });

    /** actionlint's arguments: shellcheck over `run:` scripts when it is here (CI installs it). */
    function lintArgs(files: string[]): string[] {
      return ['-no-color', ...(hasShellcheck ? [] : ['-shellcheck=']), ...files];
    }

    it('finds nothing in any workflow', async () => {
      // .ci/run installs shellcheck; without it there, a CI run would lint less than it says.
      if (process.env.CI !== undefined && process.env.CI !== '' && process.env.CI !== 'false')
        expect(hasShellcheck, 'CI lints the run: scripts with shellcheck (.ci/run installs it)').toBe(true);
      if (!hasShellcheck)
        console.warn('actionlint: shellcheck is not on PATH, so run: scripts are not checked');
      const files = readdirSync(WORKFLOWS)
        .filter((f) => /\.ya?ml$/.test(f))
        .map((f) => join(WORKFLOWS, f));
      expect(files.map((f) => f.slice(WORKFLOWS.length + 1)).sort()).toEqual(['ci.yml', 'release.yml']);
      const result = await run(actionlint, lintArgs(files));
      const findings = `${result.stdout}${result.stderr}`.trim();
      expect(findings, `actionlint's findings:\n${findings}`).toBe('');
      expect(result.code).toBe(0);
    });

    it('reports what is wrong in a broken workflow (so a clean run above means something)', async () => {
      const broken = join(scratch, 'broken.yml');
      writeFileSync(
        broken,
        [
          'on: push',
          'permissions:',
          '  id-token: read', // id-token is write or none
          'jobs:',
          '  build:',
          '    runs-on: ubuntu-latest',
          '    steps:',
          '      - uses: docker/build-push-action@v7',
          '        with:',
          '          platform: linux/arm64', // the input is `platforms`
          `      - run: echo "\${{ steps.nope.outputs.digest }}"`,
          '',
        ].join('\n'),
      );
      const result = await run(actionlint, lintArgs([broken]));
      expect(result.code).toBe(1);
      expect(result.stdout).toContain('"read" is invalid as permission of scope "id-token"');
      expect(result.stdout).toContain('input "platform" is not defined');
      expect(result.stdout).toMatch(/property "nope" is not defined/);
    });
  },
);

describe.skipIf(!HAS_GO)(
  'scripts/package-chart.sh with the real helm (skipped only without Go, which builds helm)',
  () => {
    let helm = '';
    let scratch = '';
    beforeAll(async () => {
      helm = await helmBinary();
      scratch = mkdtempSync(join(tmpdir(), 'ak-package-chart-'));
    }, 600_000);
    afterAll(() => {
      if (scratch !== '') rmSync(scratch, { recursive: true, force: true });
    });

    const packageChart = (args: string[], env: Record<string, string> = {}) =>
      run('bash', ['scripts/package-chart.sh', ...args], { HELM: helm, NODE: process.execPath, ...env });

    it('packages the version and appVersion given, with the image repository in values.yaml, and leaves the clone alone', async () => {
      const valuesBefore = readFileSync(join(CHART, 'values.yaml'), 'utf8');
      const chartBefore = readFileSync(join(CHART, 'Chart.yaml'), 'utf8');
      const out = join(scratch, 'out');
      const digest = `sha256:${'ab'.repeat(32)}`;
      const packaged = await packageChart(['1.2.3-rc.1', 'ghcr.io/acme/agentkourier', out], {
        IMAGE_DIGEST: digest,
      });
      expect(packaged.code, packaged.stderr).toBe(0);
      const tgz = lastLine(packaged.stdout);
      expect(tgz).toBe(join(out, 'agentkourier-1.2.3-rc.1.tgz'));
      expect(readdirSync(out)).toEqual(['agentkourier-1.2.3-rc.1.tgz']);

      const chart = await runHelm(helm, ['show', 'chart', tgz]);
      expect(chart.code, chart.stderr).toBe(0);
      expect(parse(chart.stdout)).toMatchObject({
        name: 'agentkourier',
        version: '1.2.3-rc.1',
        appVersion: '1.2.3-rc.1',
      });
      // Artifact Hub's image list: the published image, by version and digest.
      const annotations = (parse(chart.stdout) as { annotations: Record<string, string> }).annotations;
      expect(parse(annotations['artifacthub.io/images'] ?? '')).toEqual([
        { name: 'agentkourier', image: `ghcr.io/acme/agentkourier:1.2.3-rc.1@${digest}` },
      ]);

      const values = await runHelm(helm, ['show', 'values', tgz]);
      expect(values.code, values.stderr).toBe(0);
      const image = (parse(values.stdout) as { image: Record<string, unknown> }).image;
      expect(image.repository).toBe('ghcr.io/acme/agentkourier');
      // The tag stays the chart's default (empty: appVersion), so the version names the image.
      expect(image.tag).toBe('');
      expect(values.stdout, 'the comments of values.yaml survive the edit').toContain(
        valuesBefore.split('\n')[0],
      );

      const rendered = await runHelm(helm, ['template', 'ak', tgz, '--namespace', 'agentkourier']);
      expect(rendered.code, rendered.stderr).toBe(0);
      const deployment = deploymentShape.parse(only(parseObjects(rendered.stdout), 'Deployment'));
      expect(deployment.spec.template.spec.containers.map((c) => c.image)).toEqual([
        'ghcr.io/acme/agentkourier:1.2.3-rc.1',
      ]);

      expect(readFileSync(join(CHART, 'values.yaml'), 'utf8')).toBe(valuesBefore);
      expect(readFileSync(join(CHART, 'Chart.yaml'), 'utf8')).toBe(chartBefore);
    });

    it('without an out-dir, writes into a new temporary directory and prints the path; a registry port is fine', async () => {
      const packaged = await packageChart(['0.0.1', 'localhost:5000/agentkourier']);
      expect(packaged.code, packaged.stderr).toBe(0);
      const tgz = lastLine(packaged.stdout);
      try {
        expect(tgz).toMatch(/\/agentkourier-chart\.[^/]+\/agentkourier-0\.0\.1\.tgz$/);
        const values = await runHelm(helm, ['show', 'values', tgz]);
        expect((parse(values.stdout) as { image: { repository: string } }).image.repository).toBe(
          'localhost:5000/agentkourier',
        );
      } finally {
        rmSync(join(tgz, '..'), { recursive: true, force: true });
      }
    });

    it.each([
      ['a leading v', ['v1.2.3', 'ghcr.io/acme/agentkourier'], 'is not MAJOR.MINOR.PATCH'],
      ['build metadata', ['1.2.3+5', 'ghcr.io/acme/agentkourier'], 'is not MAJOR.MINOR.PATCH'],
      ['an upper-case repository', ['1.2.3', 'ghcr.io/Acme/agentkourier'], 'must be lower case'],
      ['a repository with a tag', ['1.2.3', 'ghcr.io/acme/agentkourier:1.2.3'], 'no tag or digest'],
      [
        'a repository with a digest',
        ['1.2.3', `ghcr.io/acme/agentkourier@sha256:${'0'.repeat(64)}`],
        'no tag',
      ],
    ])('refuses %s with exit 2, writing nothing', async (_what, args, message) => {
      const out = mkdtempSync(join(scratch, 'refused-'));
      const refused = await packageChart([...args, out]);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toContain(message);
      expect(refused.stdout).toBe('');
      expect(readdirSync(out)).toEqual([]);
    });

    it('refuses a call without the image repository with exit 2 and its usage', async () => {
      const refused = await packageChart(['1.2.3']);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toContain('usage:');
    });
  },
);
