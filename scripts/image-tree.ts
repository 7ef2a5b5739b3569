// Over our ~450-line rule as one piece: the Dockerfile's stages carried out and the checks of what
// they ship read as one script from top to bottom (parse, build, check imports, run read-only);
// split, the CLI (`npm run image-tree`) and its test would import the same steps from several files.
/**
 * The container image's file tree, built without Docker: this reads the Dockerfile and carries
 * out its stages in temp dirs (COPY from the clone, RUN with the project's Node 24 in place of
 * the base image's), so what it checks is what the Dockerfile ships, not a second recipe. Then:
 *
 *   1. every package the entry point's module graph imports, statically or with a literal
 *      `import('…')`, must be a declared dependency installed in the tree (a dev-only package
 *      imported at run time fails here, before any user meets it);
 *   2. the entry point runs `controller --help` and `version` as a non-root UID (the
 *      Dockerfile's USER) on the tree made read-only.
 *
 * The integration test (test/integration/image-tree.test.ts) also runs a short controller from
 * the tree against the test kube-apiserver. The base image's own files (Node, npm, Debian) are
 * not part of the tree: the run uses this project's Node 24.
 *
 *   npm run image-tree [-- --out DIR] [--context DIR]
 *
 * Prints the tree's root (the final stage's file system) on the last line of stdout.
 *
 * One file, past the 450 lines a module keeps to: `npm run image-tree` runs it under plain
 * `node` (type stripping), which resolves no `./x.js` import to a `.ts` sibling, so the parser,
 * the builder and the checks stay together.
 */
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
} from 'node:fs';
import { builtinModules } from 'node:module';
import { tmpdir } from 'node:os';
import { basename, dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { build } from 'esbuild';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

export class ImageTreeError extends Error {
  override readonly name = 'ImageTreeError';
}

// ---------------------------------------------------------------------------------------------
// The Dockerfile

export interface Instruction {
  op: string;
  args: string;
  line: number;
}

export interface Stage {
  name: string | undefined;
  base: string;
  instructions: Instruction[];
}

const KNOWN = new Set([
  'ARG',
  'WORKDIR',
  'COPY',
  'RUN',
  'ENV',
  'USER',
  'VOLUME',
  'EXPOSE',
  'LABEL',
  'ENTRYPOINT',
  'CMD',
]);

/** Stages, with ARG defaults substituted into FROM; line continuations joined, comments dropped. */
export function parseDockerfile(text: string): Stage[] {
  const lines = text.split('\n');
  const logical: Instruction[] = [];
  for (let i = 0; i < lines.length; i++) {
    const first = i + 1;
    let line = lines[i] ?? '';
    if (/^\s*(#|$)/.test(line)) continue;
    while (line.endsWith('\\') && i + 1 < lines.length) {
      line = `${line.slice(0, -1)} ${(lines[++i] ?? '').trim()}`;
    }
    const match = /^\s*([A-Za-z]+)\s+(.*)$/.exec(line);
    if (match === null) throw new ImageTreeError(`Dockerfile line ${first}: cannot read "${line.trim()}"`);
    logical.push({ op: (match[1] ?? '').toUpperCase(), args: (match[2] ?? '').trim(), line: first });
  }
  const args = new Map<string, string>();
  const stages: Stage[] = [];
  for (const instruction of logical) {
    if (instruction.op === 'FROM') {
      const m = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(instruction.args);
      if (m === null) throw new ImageTreeError(`Dockerfile line ${instruction.line}: cannot read FROM`);
      const base = (m[1] ?? '').replace(/\$\{(\w+)\}|\$(\w+)/g, (_, a, b) => args.get(a ?? b) ?? '');
      stages.push({ name: m[2], base, instructions: [] });
    } else if (!KNOWN.has(instruction.op)) {
      throw new ImageTreeError(
        `Dockerfile line ${instruction.line}: image-tree does not know ${instruction.op}; teach scripts/image-tree.ts or avoid it`,
      );
    } else if (stages.length === 0) {
      if (instruction.op !== 'ARG')
        throw new ImageTreeError(`Dockerfile line ${instruction.line}: ${instruction.op} before FROM`);
      const [name, value = ''] = instruction.args.split('=', 2);
      args.set(name ?? '', value);
    } else {
      stages.at(-1)?.instructions.push(instruction);
    }
  }
  if (stages.length === 0) throw new ImageTreeError('the Dockerfile has no FROM');
  return stages;
}

// ---------------------------------------------------------------------------------------------
// Building

export interface ImageTree {
  /** The final stage's file system (what the image adds to its base). */
  rootfs: string;
  workdir: string;
  /** uid:gid of USER, numeric. */
  user: { uid: number; gid: number };
  env: Record<string, string>;
  entrypoint: string[];
  cmd: string[];
  volumes: string[];
  ports: number[];
}

interface StageState {
  rootfs: string;
  workdir: string;
  env: Record<string, string>;
}

function jsonArray(instruction: Instruction): string[] {
  try {
    const value: unknown = JSON.parse(instruction.args);
    if (Array.isArray(value) && value.every((v) => typeof v === 'string')) return value;
  } catch {}
  throw new ImageTreeError(
    `Dockerfile line ${instruction.line}: ${instruction.op} must be a JSON array (exec form)`,
  );
}

/** A container path inside a stage's file system dir. */
function inStage(state: StageState, path: string): string {
  const absolute = isAbsolute(path) ? path : join(state.workdir, path);
  return join(state.rootfs, absolute);
}

function run(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv): void {
  const result = spawnSync(command, args, { cwd, env, stdio: ['ignore', 2, 2] });
  if (result.status !== 0) {
    throw new ImageTreeError(
      `${command} ${args.join(' ')} failed in ${cwd} (${result.error?.message ?? `exit ${result.status}`})`,
    );
  }
}

/** PATH with this project's Node 24 first: it stands in for the base image's node. */
function nodePath(): string {
  return `${dirname(process.execPath)}:${process.env.PATH ?? ''}`;
}

function copy(from: string, to: string, toIsDir: boolean): void {
  if (!existsSync(from)) throw new ImageTreeError(`COPY: ${from} does not exist`);
  if (lstatSync(from).isDirectory()) {
    mkdirSync(to, { recursive: true });
    cpSync(from, to, { recursive: true });
  } else {
    const target = toIsDir ? join(to, basename(from)) : to;
    mkdirSync(dirname(target), { recursive: true });
    cpSync(from, target);
  }
}

function doCopy(
  instruction: Instruction,
  state: StageState,
  context: string,
  done: Map<string, StageState>,
): void {
  const words = instruction.args.split(/\s+/);
  let fromStage: StageState | undefined;
  let chown: string | undefined;
  while (words[0]?.startsWith('--')) {
    const flag = words.shift() ?? '';
    const [name, value = ''] = flag.slice(2).split('=', 2);
    if (name === 'from') {
      fromStage = done.get(value);
      if (fromStage === undefined)
        throw new ImageTreeError(`Dockerfile line ${instruction.line}: no stage "${value}" before it`);
    } else if (name === 'chown') {
      chown = value;
    } else {
      throw new ImageTreeError(
        `Dockerfile line ${instruction.line}: image-tree does not know COPY --${name}`,
      );
    }
  }
  const dest = words.pop();
  if (dest === undefined || words.length === 0)
    throw new ImageTreeError(`Dockerfile line ${instruction.line}: COPY needs a source and a destination`);
  const toIsDir = dest.endsWith('/') || words.length > 1;
  const to = inStage(state, dest);
  for (const source of words) {
    if (/[*?[]/.test(source) || source === '.' || source === './') {
      throw new ImageTreeError(
        `Dockerfile line ${instruction.line}: COPY named paths only (not "${source}")`,
      );
    }
    const from = fromStage === undefined ? join(context, source) : inStage(fromStage, source);
    if (fromStage === undefined && relative(context, from).startsWith('..')) {
      throw new ImageTreeError(`Dockerfile line ${instruction.line}: ${source} is outside the build context`);
    }
    copy(from, to, toIsDir);
  }
  if (chown !== undefined && process.getuid?.() === 0)
    run('chown', ['-R', chown, to], state.rootfs, process.env);
}

/** The variables of one ENV instruction (`A=1 B="two words"`). */
export function parseEnv(args: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const match of args.matchAll(/(\w+)=("([^"]*)"|\S+)/g))
    out[match[1] ?? ''] = match[3] ?? match[2] ?? '';
  return out;
}

/** The environment the Dockerfile's final stage sets (its ENV instructions, in order). */
export function imageEnvironment(dockerfileText: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const instruction of parseDockerfile(dockerfileText).at(-1)?.instructions ?? [])
    if (instruction.op === 'ENV') Object.assign(env, parseEnv(instruction.args));
  return env;
}

/** Carries out every stage of the Dockerfile under `out`; returns the final stage's tree. */
export function buildImageTree(
  options: { context?: string; dockerfile?: string; out?: string } = {},
): ImageTree {
  const context = resolve(options.context ?? ROOT);
  const dockerfile = options.dockerfile ?? join(context, 'Dockerfile');
  const stages = parseDockerfile(readFileSync(dockerfile, 'utf8'));
  const out = options.out ?? mkdtempSync(join(tmpdir(), 'ak-image-tree-'));
  // Traversable by the image's user (mkdtemp makes 0700): the tree is run as that user.
  mkdirSync(out, { recursive: true });
  chmodSync(out, 0o755);
  const done = new Map<string, StageState>();
  let image: ImageTree | undefined;
  stages.forEach((stage, index) => {
    const last = index === stages.length - 1;
    const state: StageState = { rootfs: join(out, stage.name ?? `stage-${index}`), workdir: '/', env: {} };
    mkdirSync(state.rootfs, { recursive: true });
    const tree: ImageTree = {
      rootfs: state.rootfs,
      workdir: '/',
      user: { uid: 0, gid: 0 },
      env: state.env,
      entrypoint: [],
      cmd: [],
      volumes: [],
      ports: [],
    };
    for (const instruction of stage.instructions) {
      switch (instruction.op) {
        case 'WORKDIR':
          state.workdir = isAbsolute(instruction.args)
            ? instruction.args
            : join(state.workdir, instruction.args);
          tree.workdir = state.workdir;
          mkdirSync(inStage(state, '.'), { recursive: true });
          break;
        case 'COPY':
          doCopy(instruction, state, context, done);
          break;
        case 'RUN':
          // The final stage has no RUN: it would touch the image's root, which we do not have.
          if (last)
            throw new ImageTreeError(`Dockerfile line ${instruction.line}: no RUN in the final stage`);
          run('bash', ['-euo', 'pipefail', '-c', instruction.args], inStage(state, '.'), {
            ...process.env,
            ...state.env,
            PATH: nodePath(),
          });
          break;
        case 'ENV':
          Object.assign(state.env, parseEnv(instruction.args));
          break;
        case 'USER': {
          const m = /^(\d+)(?::(\d+))?$/.exec(instruction.args);
          if (m === null)
            throw new ImageTreeError(`Dockerfile line ${instruction.line}: USER must be numeric (uid:gid)`);
          tree.user = { uid: Number(m[1]), gid: Number(m[2] ?? m[1]) };
          break;
        }
        case 'VOLUME':
          tree.volumes.push(...jsonArray(instruction));
          break;
        case 'EXPOSE':
          tree.ports.push(...instruction.args.split(/\s+/).map((p) => Number.parseInt(p, 10)));
          break;
        case 'ENTRYPOINT':
          tree.entrypoint = jsonArray(instruction);
          break;
        case 'CMD':
          tree.cmd = jsonArray(instruction);
          break;
        default: // ARG, LABEL: nothing to build
      }
    }
    if (stage.name !== undefined) done.set(stage.name, state);
    done.set(String(index), state);
    if (last) image = tree;
  });
  if (image === undefined) throw new ImageTreeError('the Dockerfile has no final stage');
  return image;
}

// ---------------------------------------------------------------------------------------------
// Checking

/** The package a bare specifier names: `pino`, `@slack/bolt` (from `@slack/bolt/dist/x`). */
export function packageOf(specifier: string): string | undefined {
  if (specifier.startsWith('node:') || specifier.startsWith('.') || specifier.startsWith('/'))
    return undefined;
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

const BUILTINS = new Set(builtinModules);

export interface ImportProblem {
  specifier: string;
  /** The importing file, relative to the app dir. */
  importer: string;
  problem: string;
}

/**
 * Walks the module graph from `entry` (static imports, re-exports, literal dynamic imports)
 * and reports every package it imports that the tree's package.json does not declare in
 * `dependencies`, or that is not installed in the tree's node_modules.
 */
export async function checkRuntimeImports(appDir: string, entry: string): Promise<ImportProblem[]> {
  const pkg = JSON.parse(readFileSync(join(appDir, 'package.json'), 'utf8')) as {
    dependencies?: Record<string, string>;
  };
  const declared = new Set(Object.keys(pkg.dependencies ?? {}));
  const result = await build({
    entryPoints: [entry],
    absWorkingDir: appDir,
    bundle: true,
    platform: 'node',
    format: 'esm',
    packages: 'external',
    metafile: true,
    write: false,
    logLevel: 'silent',
  });
  const problems: ImportProblem[] = [];
  const seen = new Set<string>();
  for (const [importer, input] of Object.entries(result.metafile.inputs)) {
    for (const imported of input.imports) {
      if (!imported.external) continue;
      const name = packageOf(imported.path);
      if (name === undefined || BUILTINS.has(imported.path) || BUILTINS.has(name)) continue;
      const key = `${name} ${importer}`;
      if (seen.has(key)) continue;
      seen.add(key);
      if (!declared.has(name)) {
        problems.push({
          specifier: imported.path,
          importer,
          problem: `${name} is not in package.json "dependencies" (a devDependency, or only there by chance as another package's dependency)`,
        });
      } else if (!existsSync(join(appDir, 'node_modules', name, 'package.json'))) {
        problems.push({
          specifier: imported.path,
          importer,
          problem: `${name} is not installed in the tree's node_modules`,
        });
      }
    }
  }
  return problems;
}

/** Makes a tree read-only for everyone (root aside, who ignores modes: hence the non-root run). */
export function makeReadOnly(path: string): void {
  const stat = lstatSync(path);
  if (stat.isSymbolicLink()) return;
  if (stat.isDirectory()) for (const entry of readdirSync(path)) makeReadOnly(join(path, entry));
  chmodSync(path, stat.mode & 0o555);
}

/**
 * The command the image runs for `args` (ENTRYPOINT + args), mapped onto this machine: `node`
 * is this project's Node 24, container paths point into the tree, and the process runs as the
 * image's USER when we are root (setpriv), else as ourselves (also not root).
 */
export function imageCommand(image: ImageTree, args: string[]): { command: string; args: string[] } {
  const [program = '', ...rest] = image.entrypoint;
  const mapped = [...rest, ...args].map((a) =>
    a.startsWith('/') && existsSync(join(image.rootfs, a)) ? join(image.rootfs, a) : a,
  );
  const binary = program === 'node' ? process.execPath : program;
  if (process.getuid?.() !== 0) return { command: binary, args: mapped };
  return {
    command: 'setpriv',
    args: [
      `--reuid=${image.user.uid}`,
      `--regid=${image.user.gid}`,
      '--clear-groups',
      '--',
      binary,
      ...mapped,
    ],
  };
}

/** The entry point's script inside the tree (dist/main.js). */
export function entryScript(image: ImageTree): string {
  const script = image.entrypoint.find((a) => a.endsWith('.js'));
  if (script === undefined) throw new ImageTreeError('the ENTRYPOINT names no .js script');
  return join(image.rootfs, script);
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { out: { type: 'string' }, context: { type: 'string' } } });
  if (process.getuid?.() === 0 && spawnSync('setpriv', ['--version']).status !== 0) {
    throw new ImageTreeError('setpriv (util-linux) is needed to run the tree as a non-root user');
  }
  const image = buildImageTree({
    ...(values.context === undefined ? {} : { context: values.context }),
    ...(values.out === undefined ? {} : { out: values.out }),
  });
  const appDir = join(image.rootfs, image.workdir);
  const problems = await checkRuntimeImports(appDir, entryScript(image));
  if (problems.length > 0) {
    for (const p of problems)
      process.stderr.write(`image-tree: ${p.importer} imports ${p.specifier}: ${p.problem}\n`);
    throw new ImageTreeError(`${problems.length} import(s) the production tree cannot satisfy`);
  }
  makeReadOnly(image.rootfs);
  for (const args of [['controller', '--help'], ['version']]) {
    const { command, args: argv } = imageCommand(image, args);
    const result = spawnSync(command, argv, {
      cwd: appDir,
      env: { PATH: process.env.PATH ?? '', HOME: '/nonexistent', ...image.env },
      encoding: 'utf8',
    });
    if (result.status !== 0) {
      throw new ImageTreeError(
        `${args.join(' ')} failed as uid ${image.user.uid} (exit ${result.status}):\n${result.stderr}`,
      );
    }
    process.stderr.write(`image-tree: ${args.join(' ')} → ${result.stdout.split('\n')[0]}\n`);
  }
  process.stderr.write(
    `image-tree: dependencies, dist/ and package.json check out; runs as uid ${image.user.uid} read-only\n`,
  );
  process.stdout.write(`${image.rootfs}\n`);
}

if (import.meta.main) {
  main().catch((error: unknown) => {
    process.stderr.write(`image-tree: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  });
}
