import { readFileSync, writeFileSync } from 'node:fs';
import { isMap, isScalar, parseDocument } from 'yaml';

/**
 * Sets string values in a Helm values file, in place, as YAML: the file is parsed into a
 * document and written back, so its comments, order and quoting elsewhere survive, and a value
 * with characters YAML treats specially is quoted as YAML requires. scripts/package-chart.sh
 * uses it to point the packaged chart's `image.repository` at the published image.
 *
 *   node scripts/chart-values.ts <values.yaml> <dotted.key>=<value> [...]   (Node 24 runs it as is)
 *
 * Only keys the file already has, holding a scalar, can be set: a key the chart renamed or
 * moved fails here, naming it, instead of adding a stray key that helm would refuse (the
 * schema allows no unknown keys) or, worse, that nothing reads.
 */
export function setValues(text: string, values: Record<string, string>): string {
  const doc = parseDocument(text);
  if (doc.errors.length > 0) throw new Error(`the values file is not valid YAML: ${doc.errors[0]?.message}`);
  for (const [key, value] of Object.entries(values)) {
    const path = key.split('.');
    if (path.some((p) => p === '')) throw new Error(`"${key}" is not a dotted key`);
    const parent = path.length > 1 ? doc.getIn(path.slice(0, -1), true) : doc.contents;
    const node = isMap(parent) ? parent.get(path.at(-1), true) : undefined;
    if (node === undefined) throw new Error(`the values file has no key ${key}`);
    if (!isScalar(node)) throw new Error(`${key} holds a map or a list, not a value`);
    doc.setIn(path, value);
  }
  return doc.toString();
}

/** `key=value` arguments as a record; the value may itself contain `=`. */
export function parseAssignments(args: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const arg of args) {
    const at = arg.indexOf('=');
    if (at <= 0) throw new Error(`expected <dotted.key>=<value>, got "${arg}"`);
    out[arg.slice(0, at)] = arg.slice(at + 1);
  }
  return out;
}

if (import.meta.main) {
  const [file, ...assignments] = process.argv.slice(2);
  try {
    if (file === undefined || assignments.length === 0)
      throw new Error('usage: node scripts/chart-values.ts <values.yaml> <dotted.key>=<value> [...]');
    writeFileSync(file, setValues(readFileSync(file, 'utf8'), parseAssignments(assignments)));
  } catch (error) {
    process.stderr.write(`chart-values: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  }
}
