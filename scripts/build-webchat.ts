/**
 * Bundles the web chat page's script (src/surfaces/webchat/page/, TypeScript for the browser)
 * into one file with esbuild. `npm run build` runs it after tsc, writing
 * dist/surfaces/webchat/app.js, which the server reads at start: esbuild is a build tool (a
 * devDependency), so nothing in dist/ may import it (scripts/image-tree.ts checks that).
 * Tests import buildPageScript() to serve the page from the sources as they are.
 *
 *   node scripts/build-webchat.ts [out-file]   (Node 24 runs the TypeScript as is)
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const PAGE_ENTRY = resolve(ROOT, 'src/surfaces/webchat/page/main.ts');
export const PAGE_OUT = resolve(ROOT, 'dist/surfaces/webchat/app.js');

export async function buildPageScript(): Promise<string> {
  const result = await build({
    entryPoints: [PAGE_ENTRY],
    bundle: true,
    format: 'iife',
    platform: 'browser',
    target: 'es2022',
    minify: true,
    write: false,
    logLevel: 'silent',
    legalComments: 'none',
  });
  const output = result.outputFiles[0];
  if (output === undefined) throw new Error('esbuild produced no output for the web chat page');
  return output.text;
}

if (import.meta.main) {
  const out = resolve(process.argv[2] ?? PAGE_OUT);
  const script = await buildPageScript();
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, script);
}
