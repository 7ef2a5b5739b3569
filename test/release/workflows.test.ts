import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

/**
 * The GitHub workflows read as data, for what actionlint (test/integration/release.test.ts)
 * cannot know: it checks that a workflow is well formed, not that the release signs what it
 * pushes or that only the signing jobs may mint an OIDC token. Neither workflow can run here
 * (no GitHub, no registry); these checks are what can be held to before a tag is pushed.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

interface Step {
  id?: string;
  name?: string;
  uses?: string;
  run?: string;
  if?: string;
  with?: Record<string, unknown>;
  env?: Record<string, string>;
}
interface Job {
  'runs-on'?: string;
  container?: { image?: string; options?: string };
  'timeout-minutes'?: number;
  needs?: string | string[];
  permissions?: Record<string, string> | string;
  env?: Record<string, string>;
  outputs?: Record<string, string>;
  steps: Step[];
}
interface Workflow {
  on: Record<string, unknown>;
  permissions?: Record<string, string> | string;
  defaults?: { run?: { shell?: string } };
  jobs: Record<string, Job>;
}

function workflow(name: string): Workflow {
  return parse(readFileSync(join(ROOT, '.github/workflows', name), 'utf8')) as Workflow;
}

/** A GitHub expression as the workflow writes it: `${{ <e> }}`. */
const expr = (e: string) => `\${{ ${e} }}`;
const uses = (step: Step, action: string) => step.uses?.split('@')[0] === action;
const needsOf = (job: Job) => (job.needs === undefined ? [] : [job.needs].flat());

/** The jobs `name` waits for, directly or through others. */
function upstream(wf: Workflow, name: string, seen = new Set<string>()): Set<string> {
  for (const need of needsOf(wf.jobs[name] as Job)) {
    if (!seen.has(need)) {
      seen.add(need);
      upstream(wf, need, seen);
    }
  }
  return seen;
}

/** `${{ steps.<id>.outputs.<output> }}` → [id, output]. */
function stepOutput(expression: string | undefined): [string, string] | undefined {
  const m = /^\$\{\{\s*steps\.([\w-]+)\.outputs\.([\w-]+)\s*\}\}$/.exec(expression ?? '');
  return m?.[1] !== undefined && m[2] !== undefined ? [m[1], m[2]] : undefined;
}

interface Signing {
  job: string;
  /** The shell variable naming what is signed, and the one holding its digest. */
  refVar: string;
  digestVar: string;
  /** Where each variable comes from: the step's env, else the job's. */
  ref: string | undefined;
  digest: string | undefined;
}

/** Every `cosign sign` and `cosign attest` in the workflow, with the reference it signs taken apart. */
function signings(wf: Workflow): Signing[] {
  const found: Signing[] = [];
  for (const [name, job] of Object.entries(wf.jobs)) {
    for (const step of job.steps) {
      for (const line of (step.run ?? '').split('\n')) {
        if (!/\bcosign\s+(sign|attest)\b/.test(line)) continue;
        const target = line.trim().split(/\s+/).at(-1)?.replace(/^"|"$/g, '') ?? '';
        // "${REF}@${DIGEST}": both shell variables, so the data below can say where they come from.
        const m = /^\$\{?(\w+)\}?@\$\{?(\w+)\}?$/.exec(target);
        const refVar = m?.[1] ?? `(not a variable: ${target})`;
        const digestVar = m?.[2] ?? `(not a variable: ${target})`;
        const from = (v: string) => step.env?.[v] ?? job.env?.[v];
        found.push({ job: name, refVar, digestVar, ref: from(refVar), digest: from(digestVar) });
      }
    }
  }
  return found;
}

/** The jobs that sign something: cosign sign or attest, or an attestation action (all need an OIDC token). */
function signingJobs(wf: Workflow): string[] {
  return Object.entries(wf.jobs)
    .filter(([, job]) =>
      job.steps.some(
        (s) => /\bcosign\s+(sign|attest)\b/.test(s.run ?? '') || (s.uses ?? '').startsWith('actions/attest'),
      ),
    )
    .map(([name]) => name)
    .sort();
}

describe('.github/workflows/release.yml', () => {
  const wf = workflow('release.yml');
  const jobs = Object.entries(wf.jobs);

  it('runs only for a pushed v* tag: no branch, pull request or manual trigger', () => {
    expect(Object.keys(wf.on)).toEqual(['push']);
    const push = wf.on.push as Record<string, unknown>;
    expect(Object.keys(push)).toEqual(['tags']);
    const tags = push.tags as string[];
    expect(tags.length).toBeGreaterThan(0);
    for (const tag of tags) expect(tag).toMatch(/^v/);
  });

  it('gates every job on a step that checks the tag against package.json, and tags the image with its output', () => {
    const gates = jobs.filter(([, job]) =>
      job.steps.some((s) => /\bnode scripts\/release-version\.ts "\$TAG"/.test(s.run ?? '')),
    );
    expect(gates.map(([name]) => name)).toEqual(['version']);
    const gate = wf.jobs.version as Job;
    const check = gate.steps.find((s) => (s.run ?? '').includes('release-version.ts'));
    expect(check?.env?.TAG).toBe(expr('github.ref_name'));
    expect(gate.outputs?.version).toBe(`\${{ steps.${check?.id}.outputs.version }}`);
    for (const [name] of jobs.filter(([n]) => n !== 'version')) {
      expect([...upstream(wf, name)], `${name} waits for the version check`).toContain('version');
    }
    expect((wf.jobs.image as Job).env?.VERSION).toBe(expr('needs.version.outputs.version'));
    expect((wf.jobs.chart as Job).env?.VERSION).toBe(expr('needs.version.outputs.version'));
  });

  it('builds the image for linux/amd64 and linux/arm64 with QEMU and buildx, with SBOM and provenance', () => {
    const builds = jobs.flatMap(([name, job]) =>
      job.steps.filter((s) => uses(s, 'docker/build-push-action')).map((s) => ({ name, job, step: s })),
    );
    expect(builds).toHaveLength(1);
    const { job, step } = builds[0] as (typeof builds)[number];
    const platforms = String(step.with?.platforms)
      .split(',')
      .map((p) => p.trim());
    expect(platforms.sort()).toEqual(['linux/amd64', 'linux/arm64']);
    const at = job.steps.indexOf(step);
    for (const setup of ['docker/setup-qemu-action', 'docker/setup-buildx-action', 'docker/login-action']) {
      const i = job.steps.findIndex((s) => uses(s, setup));
      expect(i, `${setup} before the build`).toBeGreaterThanOrEqual(0);
      expect(i).toBeLessThan(at);
    }
    expect(step.with?.push).toBe(true);
    expect(step.with?.sbom).toBe(true);
    expect(String(step.with?.provenance)).toMatch(/^(true|mode=(min|max))$/);
    // The OCI labels (source, revision, version) come from docker/metadata-action.
    const meta = job.steps.find((s) => uses(s, 'docker/metadata-action'));
    expect(step.with?.labels).toBe(`\${{ steps.${meta?.id}.outputs.labels }}`);
  });

  it('signs the image and the chart and attests the SBOM, each by the digest its push reported, never by a tag', () => {
    const all = signings(wf);
    expect(all.length).toBeGreaterThan(0);
    for (const s of all) {
      expect(s.refVar, `cosign sign in ${s.job} signs "\${REF}@\${DIGEST}"`).toMatch(/^\w+$/);
      expect(s.digestVar).toMatch(/^\w+$/);
      // The digest is a step's output in the same job, and that step is the push.
      const [id, output] = stepOutput(s.digest) ?? [];
      expect(output, `${s.job}: ${s.digestVar} is a push step's digest output (${s.digest})`).toBe('digest');
      const pusher = (wf.jobs[s.job] as Job).steps.find((step) => step.id === id);
      expect(pusher, `${s.job}: step ${id}`).toBeDefined();
    }
    const pusherOf = (s: Signing) => {
      const id = stepOutput(s.digest)?.[0];
      return (wf.jobs[s.job] as Job).steps.find((step) => step.id === id) as Step;
    };
    const image = all.filter((s) => uses(pusherOf(s), 'docker/build-push-action'));
    const chart = all.filter((s) => /\bhelm"? push\b/.test(pusherOf(s).run ?? ''));
    expect(image, 'the image is signed, and its SBOM attested').toHaveLength(2);
    expect(chart, 'the chart is signed').toHaveLength(1);
    expect(image[0]?.ref).toMatch(/^ghcr\.io\/\$\{\{ needs\.version\.outputs\.owner \}\}\/agentkourier$/);
    expect(stepOutput(chart[0]?.ref)).toEqual([pusherOf(chart[0] as Signing).id, 'chart']);
  });

  it("attests syft's SPDX SBOM of the pushed image (syft from tools/syft) by the same digest", () => {
    const job = wf.jobs.image as Job;
    const sbom = job.steps.find((s) => /\bscan "registry:\$\{IMAGE\}@\$\{DIGEST\}"/.test(s.run ?? ''));
    expect(sbom?.run).toContain(
      'bash scripts/go-tool-bin.sh tools/syft github.com/anchore/syft/cmd/syft syft',
    );
    const file = /spdx-json=([^"\s]+)/.exec(sbom?.run ?? '')?.[1];
    expect(file).toBe(`\${RUNNER_TEMP}/sbom.spdx.json`);
    const attest = job.steps.find((s) => /\bcosign attest\b/.test(s.run ?? ''));
    expect(attest?.run).toContain(`--type spdxjson --predicate "${file}"`);
    expect(job.steps.indexOf(attest as Step)).toBeGreaterThan(job.steps.indexOf(sbom as Step));
    expect(attest?.env?.DIGEST).toBe(sbom?.env?.DIGEST);
  });

  it('attests the image provenance by the same digest', () => {
    const job = wf.jobs.image as Job;
    const attest = job.steps.find((s) => uses(s, 'actions/attest-build-provenance'));
    const build = job.steps.find((s) => uses(s, 'docker/build-push-action'));
    expect(attest?.with?.['subject-digest']).toBe(`\${{ steps.${build?.id}.outputs.digest }}`);
    expect(attest?.with?.['push-to-registry']).toBe(true);
  });

  it('packages the chart with scripts/package-chart.sh and pushes it to oci://ghcr.io/<owner>/charts', () => {
    const job = wf.jobs.chart as Job;
    expect(
      job.steps.some((s) => /bash scripts\/package-chart\.sh "\$VERSION" "\$IMAGE"/.test(s.run ?? '')),
    ).toBe(true);
    expect(job.env?.CHARTS).toBe(`ghcr.io/${expr('needs.version.outputs.owner')}/charts`);
    expect(job.steps.some((s) => (s.run ?? '').includes('push "$TGZ" "oci://$CHARTS"'))).toBe(true);
    expect(needsOf(job), 'the chart is published only after the image it points at').toContain('image');
  });

  it('gives each job its own least permissions; id-token: write only to the jobs that sign', () => {
    expect(wf.permissions).toEqual({});
    for (const [name, job] of jobs) {
      expect(typeof job.permissions, `${name} declares its permissions`).toBe('object');
      for (const [scope, level] of Object.entries(job.permissions as Record<string, string>)) {
        expect(['read', 'write', 'none'], `${name}: ${scope}`).toContain(level);
      }
    }
    const minting = jobs.filter(
      ([, job]) => (job.permissions as Record<string, string>)['id-token'] === 'write',
    );
    expect(minting.map(([name]) => name).sort()).toEqual(signingJobs(wf));
    expect(signingJobs(wf)).toEqual(['chart', 'image']);
    const writes = Object.fromEntries(
      jobs.map(([name, job]) => [
        name,
        Object.entries(job.permissions as Record<string, string>)
          .filter(([, level]) => level === 'write')
          .map(([scope]) => scope)
          .sort(),
      ]),
    );
    expect(writes).toEqual({
      version: [],
      image: ['attestations', 'id-token', 'packages'],
      chart: ['id-token', 'packages'],
      release: ['contents'],
    });
  });

  it('runs every step under bash with pipefail and has a timeout on every job', () => {
    expect(wf.defaults?.run?.shell).toBe('bash');
    for (const [name, job] of jobs) expect(job['timeout-minutes'], name).toBeGreaterThan(0);
  });
});

describe('.github/workflows/ci.yml', () => {
  const wf = workflow('ci.yml');
  const job = wf.jobs.test as Job;
  // The Go tools CI builds are built by the setup script .ci/run runs (scripts/setup-test-peers.sh).
  const ciRun = readFileSync(join(ROOT, 'scripts/setup-test-peers.sh'), 'utf8');

  it('runs .ci/run on push and pull_request, in a privileged Debian 12 container (its packages, the cluster tests), as root', () => {
    expect(Object.keys(wf.on).sort()).toEqual(['pull_request', 'push']);
    expect(Object.keys(wf.jobs)).toEqual(['test']);
    expect(job['runs-on']).toBe('ubuntu-latest');
    expect(job.container?.image).toBe('debian:bookworm');
    expect(job.container?.options?.split(/\s+/)).toEqual(expect.arrayContaining(['--privileged']));
    expect(job['timeout-minutes']).toBeGreaterThanOrEqual(40);
    const runs = job.steps.filter((s) => (s.run ?? '').includes('.ci/run'));
    expect(runs.map((s) => s.run?.trim())).toEqual(['bash .ci/run']);
    // git before the checkout (else it downloads a tarball without .git), Python for the peers.
    const base = job.steps.find((s) => s.name === 'Base packages');
    for (const pkg of ['git', 'python3', 'python3-venv'])
      expect(base?.run).toMatch(new RegExp(`\\b${pkg}\\b`));
    const at = (s: Step | undefined) => job.steps.indexOf(s as Step);
    expect(at(base)).toBeLessThan(at(job.steps.find((s) => uses(s, 'actions/checkout'))));
    expect(wf.defaults?.run?.shell).toBe('bash');
  });

  it('may only read the repository', () => {
    expect(wf.permissions).toEqual({ contents: 'read' });
    expect(job.permissions).toBeUndefined();
  });

  it("caches Go's module and build caches, npm's cache and the built tools at locations that do not follow HOME", () => {
    const setEnv = job.steps.find((s) => (s.run ?? '').includes('GITHUB_ENV'))?.run ?? '';
    const cached = job.steps
      .filter((s) => (s.uses ?? '').startsWith('actions/cache'))
      .flatMap((s) => String(s.with?.path).split('\n'))
      .map((p) => p.trim())
      .filter((p) => p !== '');
    for (const variable of ['GOMODCACHE', 'GOCACHE', 'npm_config_cache', 'AGENTKOURIER_CACHE']) {
      // Set once, and cached by that name.
      expect(setEnv).toMatch(new RegExp(`echo "${variable}=\\$HOME/`));
      expect(cached).toContain(`\${{ env.${variable} }}`);
    }
  });

  it('builds, before .ci/run, every Go tool its setup script builds, and keys their cache on what builds them', () => {
    const builds = [...ciRun.matchAll(/^bash (scripts\/[\w-]+-bins?\.sh.*)$/gm)].map((m) => m[1] as string);
    expect(builds.length).toBeGreaterThanOrEqual(3);
    const step = job.steps.find((s) => s.name === 'Build the Go tools');
    const restore = job.steps.find((s) => s.id === 'tools');
    const key = String(restore?.with?.key);
    for (const build of builds) {
      expect(step?.run, build).toContain(`bash ${build}`);
      const script = build.split(' ')[0] as string;
      expect(key, `the tools' cache key hashes ${script}`).toContain(`'${script}'`);
    }
    expect(key).toContain("'tools/*/go.sum'");
    const at = (s: Step | undefined) => job.steps.indexOf(s as Step);
    expect(at(step)).toBeLessThan(at(job.steps.find((s) => (s.run ?? '').includes('.ci/run'))));
  });
});
