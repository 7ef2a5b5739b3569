import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CRD_DEFINITIONS, crdFileName, crdYaml } from './manifest.js';

/**
 * Writes crds/*.yaml from the zod schemas; with --check, only compares and exits 1 on drift.
 *
 *   npx tsx src/k8s/crds/generate.ts          # regenerate
 *   npx tsx src/k8s/crds/generate.ts --check  # CI: fail when crds/ is stale
 */

const CRD_DIR = new URL('../../../crds/', import.meta.url);

export async function generate(check: boolean): Promise<string[]> {
  const stale: string[] = [];
  for (const def of CRD_DEFINITIONS) {
    const file = join(CRD_DIR.pathname, crdFileName(def));
    const wanted = crdYaml(def);
    const current = await readFile(file, 'utf8').catch(() => '');
    if (current === wanted) continue;
    stale.push(file);
    if (!check) await writeFile(file, wanted);
  }
  return stale;
}

if (import.meta.main) {
  const check = process.argv.includes('--check');
  const stale = await generate(check);
  for (const file of stale) process.stdout.write(`${check ? 'stale' : 'wrote'}: ${file}\n`);
  if (check && stale.length > 0) {
    process.stderr.write('crds/ is out of date: run `npx tsx src/k8s/crds/generate.ts`\n');
    process.exitCode = 1;
  }
}
