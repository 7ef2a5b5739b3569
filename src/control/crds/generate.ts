import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CRD_DEFINITIONS, crdFileName, crdYaml } from './manifest.js';

/**
 * Writes the CRDs from the zod schemas into both places they are installed from: crds/ (for
 * `kubectl apply -f crds/`) and the Helm chart's crds/ (Helm installs those before the
 * templates). With --check, only compares and exits 1 on drift.
 *
 *   npx tsx src/control/crds/generate.ts          # regenerate
 *   npx tsx src/control/crds/generate.ts --check  # CI: fail when either copy is stale
 */

export const CRD_DIRS = [
  new URL('../../../crds/', import.meta.url),
  new URL('../../../charts/agentkourier/crds/', import.meta.url),
] as const;

export async function generate(check: boolean): Promise<string[]> {
  const stale: string[] = [];
  for (const dir of CRD_DIRS) {
    if (!check) await mkdir(dir, { recursive: true });
    for (const def of CRD_DEFINITIONS) {
      const file = join(fileURLToPath(dir), crdFileName(def));
      const wanted = crdYaml(def);
      const current = await readFile(file, 'utf8').catch(() => '');
      if (current === wanted) continue;
      stale.push(file);
      if (!check) await writeFile(file, wanted);
    }
  }
  return stale;
}

if (import.meta.main) {
  const check = process.argv.includes('--check');
  const stale = await generate(check);
  for (const file of stale) process.stdout.write(`${check ? 'stale' : 'wrote'}: ${file}\n`);
  if (check && stale.length > 0) {
    process.stderr.write(
      'crds/ or charts/agentkourier/crds/ is out of date: run `npx tsx src/control/crds/generate.ts`\n',
    );
    process.exitCode = 1;
  }
}
