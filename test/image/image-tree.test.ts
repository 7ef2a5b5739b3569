import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  checkRuntimeImports,
  ImageTreeError,
  imageEnvironment,
  packageOf,
  parseDockerfile,
} from '../../scripts/image-tree.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A tiny app tree: package.json, node_modules, and modules with the given sources. */
function tree(
  dependencies: Record<string, string>,
  installed: string[],
  files: Record<string, string>,
): string {
  const dir = mkdtempSync(join(tmpdir(), 'ak-imports-'));
  dirs.push(dir);
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'app', type: 'module', dependencies }));
  for (const name of installed) {
    mkdirSync(join(dir, 'node_modules', name), { recursive: true });
    writeFileSync(
      join(dir, 'node_modules', name, 'package.json'),
      JSON.stringify({ name, main: 'index.js' }),
    );
    writeFileSync(join(dir, 'node_modules', name, 'index.js'), 'export default 1;\n');
  }
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(dir, path, '..'), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  return dir;
}

describe('the image-tree check', () => {
  it('names a dev-only package that a module imports at run time, even by a dynamic import', async () => {
    const dir = tree({ pino: '^10', '@slack/bolt': '^5' }, ['pino', '@slack/bolt'], {
      'dist/main.js':
        "import pino from 'pino';\nimport { b } from './b.js';\nimport 'node:fs';\nexport const x = [pino, b];\n",
      // What the web chat did before its bundle moved to `npm run build`.
      'dist/b.js':
        "import '@slack/bolt/dist/App.js';\nexport async function b() { return import('esbuild'); }\n",
    });
    const problems = await checkRuntimeImports(dir, join(dir, 'dist/main.js'));
    expect(problems).toEqual([expect.objectContaining({ specifier: 'esbuild', importer: 'dist/b.js' })]);
    expect(problems[0]?.problem).toContain('not in package.json "dependencies"');
  });

  it('names a declared dependency that is not installed in the tree', async () => {
    const dir = tree({ pino: '^10' }, [], {
      'dist/main.js': "import pino from 'pino';\nexport default pino;\n",
    });
    const problems = await checkRuntimeImports(dir, join(dir, 'dist/main.js'));
    expect(problems.map((p) => [p.specifier, p.problem])).toEqual([
      ['pino', "pino is not installed in the tree's node_modules"],
    ]);
  });

  it('reads package names from specifiers', () => {
    expect(packageOf('@slack/bolt/dist/App.js')).toBe('@slack/bolt');
    expect(packageOf('yaml')).toBe('yaml');
    expect(packageOf('node:fs')).toBeUndefined();
    expect(packageOf('./x.js')).toBeUndefined();
  });

  it("reads the project's Dockerfile: three stages, a numeric user, node as the entry point", () => {
    const stages = parseDockerfile(readFileSync(new URL('../../Dockerfile', import.meta.url), 'utf8'));
    expect(stages.map((s) => s.name)).toEqual(['build', 'production-dependencies', undefined]);
    expect(stages.every((s) => s.base === 'docker.io/library/node:24-bookworm-slim')).toBe(true);
    const last = stages.at(-1)?.instructions ?? [];
    expect(last.find((i) => i.op === 'USER')?.args).toMatch(/^\d+:\d+$/);
    expect(last.find((i) => i.op === 'ENTRYPOINT')?.args).toBe('["node", "/app/dist/main.js"]');
    expect(last.some((i) => i.op === 'RUN')).toBe(false);
  });

  it("reads the final stage's environment: production, at most two malloc arenas", () => {
    // What the image runs with, and what the benchmarks' children run with (bench/engine-children.ts).
    expect(
      imageEnvironment(readFileSync(new URL('../../Dockerfile', import.meta.url), 'utf8')),
    ).toStrictEqual({
      NODE_ENV: 'production',
      MALLOC_ARENA_MAX: '2',
    });
    // Only the final stage's, in order, a later value winning; quoted values kept whole.
    expect(
      imageEnvironment('FROM a AS one\nENV STAGE=build\nFROM b\nENV A=1 B="two words"\nENV A=3\n'),
    ).toStrictEqual({ A: '3', B: 'two words' });
  });

  it('lets every path the Dockerfile copies from the context through .dockerignore', () => {
    const stages = parseDockerfile(readFileSync(new URL('../../Dockerfile', import.meta.url), 'utf8'));
    const ignore = readFileSync(new URL('../../.dockerignore', import.meta.url), 'utf8').split('\n');
    expect(ignore).toContain('*');
    const sources = stages
      .flatMap((s) => s.instructions)
      .filter((i) => i.op === 'COPY' && !i.args.startsWith('--from'))
      .flatMap((i) => i.args.split(/\s+/).slice(0, -1));
    expect(sources.length).toBeGreaterThan(0);
    for (const source of sources) expect(ignore).toContain(`!${source}`);
  });

  it('refuses what it cannot carry out, naming the line', () => {
    expect(() => parseDockerfile('FROM x\nHEALTHCHECK CMD true\n')).toThrow(ImageTreeError);
    expect(() => parseDockerfile('FROM x\nHEALTHCHECK CMD true\n')).toThrow(
      /line 2: image-tree does not know HEALTHCHECK/,
    );
    expect(() => parseDockerfile('# nothing\n')).toThrow(/no FROM/);
  });
});
