/**
 * Diagnosis: what a heap grew by between two V8 heap snapshots, by the kind of object (its
 * constructor, or V8's type for strings, closures, arrays and code), per unit of whatever was
 * added in between (sessions, say). With the memory benchmark's snapshots
 * (BENCH_HEAP_SNAPSHOT=<dir>, bench/engine-child.ts):
 *
 *   npx tsx bench/heap-diff.ts <dir>/engine-halfway.heapsnapshot <dir>/engine-during.heapsnapshot 500
 *
 * Prints the 40 kinds that grew most, with objects and bytes (V8's shallow size) per unit.
 */
import { readFileSync } from 'node:fs';

interface Snapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[], ...unknown[]] } };
  nodes: number[];
  strings: string[];
}

type Tally = Map<string, { count: number; bytes: number }>;

function tally(path: string): Tally {
  const s = JSON.parse(readFileSync(path, 'utf8')) as Snapshot;
  const fields = s.snapshot.meta.node_fields;
  const types = s.snapshot.meta.node_types[0];
  const width = fields.length;
  const typeAt = fields.indexOf('type');
  const nameAt = fields.indexOf('name');
  const sizeAt = fields.indexOf('self_size');
  const out: Tally = new Map();
  for (let i = 0; i < s.nodes.length; i += width) {
    const type = types[s.nodes[i + typeAt] as number] ?? '?';
    // Objects by constructor name; strings, closures and the rest by their type (a string's
    // "name" is its text, a closure's its function's name: both kept, shortened, for closures).
    const name = s.strings[s.nodes[i + nameAt] as number] ?? '';
    const key = type === 'object' ? name : type === 'closure' ? `closure ${name.slice(0, 40)}` : `(${type})`;
    const t = out.get(key) ?? { count: 0, bytes: 0 };
    t.count++;
    t.bytes += s.nodes[i + sizeAt] as number;
    out.set(key, t);
  }
  return out;
}

const [before, after, per = '1'] = process.argv.slice(2);
if (before === undefined || after === undefined) {
  console.error('usage: heap-diff.ts <before.heapsnapshot> <after.heapsnapshot> [units added]');
  process.exit(2);
}
const units = Number(per);
const a = tally(before);
const b = tally(after);
const rows = [...b].map(([k, t]) => {
  const was = a.get(k) ?? { count: 0, bytes: 0 };
  return { k, count: (t.count - was.count) / units, bytes: (t.bytes - was.bytes) / units };
});
rows.sort((x, y) => y.bytes - x.bytes);
const total = rows.reduce((sum, r) => sum + r.bytes, 0);
console.log(`grew by ${(total / 1024).toFixed(1)} KiB per unit (shallow sizes)`);
for (const r of rows.slice(0, 40)) {
  console.log(`${r.bytes.toFixed(0).padStart(8)} B ${r.count.toFixed(2).padStart(8)} ×  ${r.k}`);
}
