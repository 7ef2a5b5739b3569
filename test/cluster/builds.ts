import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * What the test cluster is made of, built once and cached outside the clone: the Go tools
 * (scripts/go-tool-bin.sh: the registry, CoreDNS, the sandbox's pause), the project's real
 * image from its Dockerfile (scripts/buildah-image.sh, keyed by a hash of what the Dockerfile
 * copies, so an unchanged tree is not built again) and the pause image. Each build's progress
 * goes to our stderr, without Go's "downloading" lines.
 */

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** Runs a command; resolves with its stdout, rejects with the tail of its stderr. */
export function run(
  command: string,
  args: string[],
  options: { env?: NodeJS.ProcessEnv; echo?: boolean; cwd?: string } = {},
): Promise<string> {
  return new Promise((done, fail) => {
    const child = spawn(command, args, {
      cwd: options.cwd ?? ROOT,
      env: options.env ?? process.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr = (stderr + chunk).slice(-8_000);
      if (options.echo === true)
        for (const line of chunk.split('\n'))
          if (line !== '' && !line.startsWith('go: downloading ')) process.stderr.write(`${line}\n`);
    });
    child.once('error', fail);
    child.once('close', (code, signal) => {
      if (code === 0) done(stdout);
      else fail(new Error(`${command} ${args.join(' ')} failed (${signal ?? `exit ${code}`}):\n${stderr}`));
    });
  });
}

const lastLine = (text: string) => text.trim().split('\n').at(-1) ?? '';

/** A command of a tools-only module under tools/, built by scripts/go-tool-bin.sh. */
export async function goTool(dir: string, pkg: string, name: string): Promise<string> {
  const bin = lastLine(await run('bash', ['scripts/go-tool-bin.sh', dir, pkg, name], { echo: true }));
  if (!existsSync(bin)) throw new Error(`scripts/go-tool-bin.sh ${dir} printed no binary (${bin})`);
  return bin;
}

/** The directory of etcd, kube-apiserver and the node's binaries (scripts/kube-bins.sh). */
export async function kubeBins(): Promise<string> {
  const dir = lastLine(await run('bash', ['scripts/kube-bins.sh'], { echo: true }));
  for (const b of [
    'etcd',
    'kube-apiserver',
    'kube-controller-manager',
    'kube-scheduler',
    'kubelet',
    'kube-proxy',
    'kubectl',
  ])
    if (!existsSync(join(dir, b))) throw new Error(`scripts/kube-bins.sh did not build ${b} in ${dir}`);
  return dir;
}

/** buildah as the image script runs it: vfs storage and chroot isolation work anywhere. */
export const buildahEnv = (): NodeJS.ProcessEnv => ({
  ...process.env,
  STORAGE_DRIVER: process.env.STORAGE_DRIVER ?? 'vfs',
  BUILDAH_ISOLATION: process.env.BUILDAH_ISOLATION ?? 'chroot',
});

async function imageExists(tag: string): Promise<boolean> {
  return run('buildah', ['inspect', '--type', 'image', tag], { env: buildahEnv() }).then(
    () => true,
    () => false,
  );
}

/** What the Dockerfile copies into the build, by path: the image's inputs. */
const IMAGE_INPUTS = [
  'Dockerfile',
  'package.json',
  'package-lock.json',
  'tsconfig.json',
  'tsconfig.build.json',
  'scripts/build-webchat.ts',
  'scripts/buildah-image.sh',
  'src',
];

function filesUnder(path: string): string[] {
  const full = join(ROOT, path);
  if (!statSync(full).isDirectory()) return [path];
  return readdirSync(full, { withFileTypes: true })
    .flatMap((entry) => filesUnder(relative(ROOT, join(full, entry.name))))
    .sort();
}

/** A hash of the image's inputs: their paths and contents (tests beside the sources included). */
export function imageSourceHash(): string {
  const hash = createHash('sha256');
  for (const file of IMAGE_INPUTS.flatMap(filesUnder)) {
    hash.update(`${file}\0`);
    hash.update(readFileSync(join(ROOT, file)));
  }
  return hash.digest('hex').slice(0, 16);
}

/**
 * The project's image built from its Dockerfile, tagged by its inputs' hash. The build's npm
 * trusts the host's CA bundle: a TLS-inspecting proxy between the machine and the npm registry
 * is trusted by the host, and the build must trust it too.
 */
export async function projectImage(): Promise<string> {
  const tag = `localhost/agentkourier:src-${imageSourceHash()}`;
  if (await imageExists(tag)) return tag;
  const started = Date.now();
  process.stderr.write(`cluster: building the image ${tag} from the Dockerfile with buildah\n`);
  const hostCa = '/etc/ssl/certs/ca-certificates.crt';
  await run('bash', ['scripts/buildah-image.sh', tag], {
    env: { ...buildahEnv(), ...(existsSync(hostCa) && { EXTRA_CA_FILE: hostCa }) },
    echo: true,
  });
  process.stderr.write(`cluster: image built in ${Math.round((Date.now() - started) / 1000)} s\n`);
  // Earlier trees' images: vfs keeps a full copy of every layer.
  const images = await run('buildah', ['images', '--format', '{{.Name}}:{{.Tag}}'], { env: buildahEnv() });
  for (const old of images.split('\n'))
    if (old.startsWith('localhost/agentkourier:src-') && old !== tag)
      await run('buildah', ['rmi', old], { env: buildahEnv() }).catch(() => undefined);
  return tag;
}

/** The pod sandbox image: tools/pause alone in a one-layer image, tagged by the binary's hash. */
export async function pauseImage(pauseBin: string): Promise<string> {
  const digest = createHash('sha256').update(readFileSync(pauseBin)).digest('hex').slice(0, 16);
  const tag = `localhost/kourier-pause:${digest}`;
  if (await imageExists(tag)) return tag;
  const env = buildahEnv();
  const container = (await run('buildah', ['from', 'scratch'], { env })).trim();
  try {
    await run('buildah', ['copy', '--chmod', '0755', container, pauseBin, '/pause'], { env });
    await run('buildah', ['config', '--entrypoint', '["/pause"]', '--user', '65535:65535', container], {
      env,
    });
    await run('buildah', ['commit', '--rm', container, tag], { env });
  } catch (error) {
    await run('buildah', ['rm', container], { env }).catch(() => undefined);
    throw error;
  }
  return tag;
}

/** Pushes a local image to the plain-HTTP registry on loopback (a no-op for blobs it has); its digest. */
export async function pushImage(local: string, remote: string): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'ak-push-'));
  try {
    const file = join(dir, 'digest');
    await run(
      'buildah',
      ['push', '--quiet', '--tls-verify=false', '--digestfile', file, local, `docker://${remote}`],
      { env: buildahEnv() },
    );
    return readFileSync(file, 'utf8').trim();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
