/**
 * The benchmarks' children run what ships: the sources compiled by `tsc`, as production runs
 * `dist/` (the Dockerfile, `npm start` after `npm run build`), not the sources through `tsx`.
 * `tsx` compiles with esbuild's `keepNames`, which gives every named function and closure a
 * `__name` call and a property when it is made (about 8 µs of a turn's CPU and 1.9 KiB of a
 * held session's heap in the engine figures), and source-maps every error's stack.
 *
 * Built once per bench run, incrementally (tsconfig.bench.json: src, testkit and bench into
 * .agentkourier/bench/build/, tests left out; a few seconds when nothing changed).
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BUILD = join(ROOT, '.agentkourier', 'bench', 'build');

let built = false;

/**
 * The node arguments and script that run bench/<name> (a `.ts` path under bench/) as the
 * benchmarks run it: compiled.
 */
export function childScript(name: string): { loader: string[]; script: string } {
  if (!built) {
    // The package's own bin (its exports map leaves bin/ out, so it is found from package.json).
    const tsc = join(
      dirname(createRequire(import.meta.url).resolve('typescript/package.json')),
      'bin',
      'tsc',
    );
    execFileSync(process.execPath, [tsc, '-p', join(ROOT, 'tsconfig.bench.json')], {
      cwd: ROOT,
      stdio: 'inherit',
    });
    // What the compiled sources read beside them, at the place they look for it (the broker's
    // version: ../../package.json from src/observability/).
    mkdirSync(BUILD, { recursive: true });
    copyFileSync(join(ROOT, 'package.json'), join(BUILD, 'package.json'));
    built = true;
  }
  return { loader: [], script: join(BUILD, 'bench', name.replace(/\.ts$/, '.js')) };
}

/** How the children run, for the bench's first line. */
export function childrenRunFrom(): string {
  return 'the sources compiled by tsc (tsconfig.bench.json), as production runs dist/';
}
