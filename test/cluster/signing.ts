import { chmodSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { z } from 'zod';
import { run } from './builds.js';

export { documentedVerifyCommands } from '../release/documented.js';

import { ROOT } from './harness.js';

/**
 * The release's signing, as the cluster test runs it: the workflow's own `run:` scripts and
 * docs/releasing.md's own verify commands, with only the registry and the identity replaced.
 * The keyless identity (GitHub's OIDC token, Fulcio, Rekor) cannot exist here; a key pair made
 * by the test stands in for it, and the transparency log is left out on both sides.
 */

export interface Signer {
  /** Where the key pair, the SBOM (RUNNER_TEMP) and the `cosign` that signs with the key live. */
  dir: string;
  publicKey: string;
  /** The environment the workflow's steps run in: PATH starts with the keyed `cosign`. */
  env: NodeJS.ProcessEnv;
}

/**
 * A key pair (no password) and a `cosign` first on PATH that signs and attests with it: the
 * workflow's `cosign sign --yes "${IMAGE}@${DIGEST}"` runs as written, the key standing in for
 * the keyless identity. Every other subcommand goes to cosign unchanged.
 */
export async function keyedSigner(cosign: string): Promise<Signer> {
  const dir = mkdtempSync(join(tmpdir(), 'ak-release-'));
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    COSIGN_PASSWORD: '',
    // cosign's trust material cache: the test's own, never the user's ~/.sigstore.
    TUF_ROOT: join(dir, 'tuf'),
    RUNNER_TEMP: dir,
  };
  await run(cosign, ['generate-key-pair', '--output-key-prefix', join(dir, 'release')], { env, cwd: dir });
  const bin = join(dir, 'bin');
  mkdirSync(bin);
  const key = join(dir, 'release.key');
  writeFileSync(
    join(bin, 'cosign'),
    `#!/usr/bin/env bash
# The release workflow's cosign, with the test's key in place of the keyless identity.
case "$1" in
  sign | attest)
    sub=$1
    shift
    exec ${JSON.stringify(cosign)} "$sub" --key ${JSON.stringify(key)} --use-signing-config=false --tlog-upload=false "$@"
    ;;
esac
exec ${JSON.stringify(cosign)} "$@"
`,
  );
  chmodSync(join(bin, 'cosign'), 0o755);
  return {
    dir,
    publicKey: join(dir, 'release.pub'),
    env: { ...env, PATH: `${bin}:${process.env.PATH ?? ''}` },
  };
}

const stepsSchema = z.object({
  jobs: z.record(
    z.string(),
    z
      .object({
        steps: z.array(z.object({ name: z.string().optional(), run: z.string().optional() }).loose()),
      })
      .loose(),
  ),
});

/** The `run:` script of the release workflow's step with this name (exactly one must exist). */
export function workflowStep(name: string): string {
  const wf = stepsSchema.parse(parse(readFileSync(join(ROOT, '.github/workflows/release.yml'), 'utf8')));
  const found = Object.values(wf.jobs).flatMap((job) => job.steps.filter((s) => s.name === name));
  const script = found[0]?.run;
  if (found.length !== 1 || script === undefined)
    throw new Error(`release.yml has ${found.length} run steps named "${name}"`);
  return script;
}

/** Runs a workflow step's script with bash, in the clone, with the step's variables. */
export async function runStep(signer: Signer, name: string, vars: Record<string, string>): Promise<string> {
  return run('bash', ['-euo', 'pipefail', '-c', workflowStep(name)], {
    env: { ...signer.env, ...vars },
    echo: true,
  });
}

/**
 * A documented command as the test runs it: `ghcr.io/<owner>` is the test registry's owner, the
 * digest placeholders are the real digests, and the keyless identity flags
 * (`--certificate-identity-regexp '…' --certificate-oidc-issuer …`) become the test's public
 * key with no transparency log. Nothing else is touched; a command with no identity flags, or
 * a placeholder left over, is an error rather than a silent pass.
 */
export function substituted(
  command: string,
  at: { owner: string; digest: string; chartDigest: string; publicKey: string },
): string {
  const identity = /--certificate-identity-regexp '[^']*' --certificate-oidc-issuer \S+/;
  if (!identity.test(command)) throw new Error(`no keyless identity flags to replace in: ${command}`);
  const out = command
    .replaceAll('ghcr.io/<owner>/', `${at.owner}/`)
    .replaceAll('sha256:<chart-digest>', at.chartDigest)
    .replaceAll('sha256:<digest>', at.digest)
    .replace(identity, `--key ${at.publicKey} --insecure-ignore-tlog=true`);
  if (/<[a-z-]+>/.test(out)) throw new Error(`a placeholder is left in: ${out}`);
  return out;
}

/** The digest a registry serves for a tag now (what `crane digest` prints), over plain HTTP. */
export async function tagDigest(registry: string, repository: string, tag: string): Promise<string> {
  const res = await fetch(`http://${registry}/v2/${repository}/manifests/${tag}`, {
    method: 'HEAD',
    headers: {
      accept: [
        'application/vnd.oci.image.index.v1+json',
        'application/vnd.oci.image.manifest.v1+json',
        'application/vnd.docker.distribution.manifest.v2+json',
        'application/vnd.docker.distribution.manifest.list.v2+json',
      ].join(', '),
    },
  });
  const digest = res.headers.get('docker-content-digest');
  if (res.status !== 200 || digest === null)
    throw new Error(`${registry}/${repository}:${tag}: HTTP ${res.status}, no digest`);
  return digest;
}
