import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The proof index of docs/agent-contract.md: for every contract row, the tests that name its id
 * in their title. The rows are the ones the page's tables list (a table line whose first cell is
 * an id such as `DT-1`); the proofs are the string literals in src/ and test/ `*.test.ts` files
 * that start with one or more `[ID]` tags: `it('[E-3] …')`, a table row's `name: '[E-3] …'`
 * that an `it.each` title prints, or the first column of an `it.each` row.
 *
 *   npm run contract:index            # rewrite the index between the markers
 *   npm run contract:index -- --check # exit 1 when it is stale or a rule below is broken
 *
 * A unit test (test/docs/contract-index.test.ts) runs the same checks in `npm test`: every row
 * has a proof, every cited id is a row, ids sit only at the start of a title, and the checked-in
 * index is exactly what this script writes. The scan is textual on purpose (no test is run or
 * imported): it is fast, needs no peers, and its output is sorted, so it is the same everywhere.
 */

export const INDEX_START = '<!-- contract-index:start -->';
export const INDEX_END = '<!-- contract-index:end -->';
export const REGENERATE = 'npm run contract:index';

/** A row id as the contract writes it: a prefix of capitals, a dash, a number. */
const ID = '[A-Z]{1,3}-\\d+';
const TAG = new RegExp(`\\[(${ID})\\]`, 'g');
/** A quoted literal ('…', "…" or `…`) whose text starts with one or more tags (spaces between allowed). */
const TAGGED_LITERAL = new RegExp(`(['"\`])((?:\\[${ID}\\] *)+)((?:\\\\.|(?!\\1)[^\\\\])*)\\1`, 'g');
const ROW_LINE = new RegExp(`^\\|\\s*(${ID})\\s*\\|`);

export interface Row {
  id: string;
  /** The section heading the row's table sits under, for messages. */
  section: string;
}

export interface Proof {
  /** Repository-relative, with forward slashes. */
  file: string;
  /** The title as written in the source, tags included. */
  title: string;
  ids: string[];
}

export interface Misplaced {
  file: string;
  line: number;
  id: string;
}

export interface Scan {
  proofs: Proof[];
  misplaced: Misplaced[];
}

function isComment(line: string): boolean {
  const t = line.trimStart();
  return t.startsWith('//') || t.startsWith('*') || t.startsWith('/*');
}

/** The tagged titles of one test file, and any tag that is not at the start of a title. */
export function scanSource(file: string, source: string): Scan {
  const proofs: Proof[] = [];
  const misplaced: Misplaced[] = [];
  source.split('\n').forEach((line, index) => {
    if (isComment(line)) return;
    let rest = line;
    for (const match of line.matchAll(TAGGED_LITERAL)) {
      const tags = match[2] ?? '';
      const after = match[3] ?? '';
      proofs.push({ file, title: `${tags}${after}`, ids: [...tags.matchAll(TAG)].map((m) => m[1] ?? '') });
      for (const m of after.matchAll(TAG)) misplaced.push({ file, line: index + 1, id: m[1] ?? '' });
      rest = rest.replace(match[0], '');
    }
    for (const m of rest.matchAll(TAG)) misplaced.push({ file, line: index + 1, id: m[1] ?? '' });
  });
  return { proofs, misplaced };
}

function byCodePoint(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Every `*.test.ts` under the given folders of `root`, repository-relative and sorted. */
export function testFiles(root: string, folders: readonly string[] = ['src', 'test']): string[] {
  const files: string[] = [];
  for (const folder of folders) {
    for (const entry of readdirSync(join(root, folder), { recursive: true, withFileTypes: true })) {
      if (!entry.isFile() || !entry.name.endsWith('.test.ts')) continue;
      const path = relative(root, join(entry.parentPath, entry.name)).split(sep).join('/');
      if (!path.split('/').includes('node_modules')) files.push(path);
    }
  }
  return files.sort(byCodePoint);
}

export function scanFiles(root: string, files: readonly string[]): Scan {
  const proofs: Proof[] = [];
  const misplaced: Misplaced[] = [];
  for (const file of files) {
    const scan = scanSource(file, readFileSync(join(root, file), 'utf8'));
    proofs.push(...scan.proofs);
    misplaced.push(...scan.misplaced);
  }
  return { proofs, misplaced };
}

/** The page with its generated block left out, so rows are read from the hand-written part only. */
function handWritten(doc: string): string {
  const start = doc.indexOf(INDEX_START);
  const end = doc.indexOf(INDEX_END);
  if (start === -1 || end === -1 || end < start) return doc;
  return doc.slice(0, start) + doc.slice(end + INDEX_END.length);
}

/** The rows of the page's tables, in the page's order. */
export function readRows(doc: string): Row[] {
  const rows: Row[] = [];
  let section = '';
  for (const line of handWritten(doc).split('\n')) {
    if (line.startsWith('## ')) section = line.slice(3).trim();
    const match = ROW_LINE.exec(line);
    if (match?.[1] !== undefined) rows.push({ id: match[1], section });
  }
  return rows;
}

/** A code span that holds any text, backticks included (CommonMark: a longer fence, padded). */
function code(text: string): string {
  const longest = Math.max(0, ...[...text.matchAll(/`+/g)].map((m) => m[0].length));
  const fence = '`'.repeat(longest + 1);
  const pad = text.startsWith('`') || text.endsWith('`') ? ' ' : '';
  return `${fence}${pad}${text}${pad}${fence}`;
}

/** The proofs of each row, de-duplicated and sorted by file, then title. */
export function proofsByRow(rows: readonly Row[], proofs: readonly Proof[]): Map<string, Proof[]> {
  const out = new Map<string, Proof[]>(rows.map((r) => [r.id, []]));
  const seen = new Set<string>();
  for (const proof of proofs) {
    for (const id of new Set(proof.ids)) {
      const key = `${id}\n${proof.file}\n${proof.title}`;
      if (seen.has(key)) continue;
      seen.add(key);
      out.get(id)?.push(proof);
    }
  }
  for (const list of out.values())
    list.sort((a, b) => byCodePoint(a.file, b.file) || byCodePoint(a.title, b.title));
  return out;
}

/**
 * Rows and counts, three pairs to a line, padded the way the repository's formatter (Biome)
 * prints a Markdown table, so `npm run lint` and the generator agree on every byte.
 */
function summaryTable(pairs: ReadonlyArray<readonly [string, string]>): string[] {
  const PER_LINE = 3;
  const body: string[][] = [];
  for (let i = 0; i < pairs.length; i += PER_LINE) {
    const cells = pairs.slice(i, i + PER_LINE).flat();
    while (cells.length < PER_LINE * 2) cells.push('');
    body.push(cells);
  }
  const header = Array.from({ length: PER_LINE }, () => ['Row', 'Tests']).flat();
  const widths = header.map((h, c) => Math.max(h.length, 3, ...body.map((cells) => (cells[c] ?? '').length)));
  const numeric = (c: number) => c % 2 === 1;
  const line = (cells: readonly string[]) =>
    `| ${cells.map((cell, c) => (numeric(c) ? cell.padStart(widths[c] ?? 0) : cell.padEnd(widths[c] ?? 0))).join(' | ')} |`;
  const rule = `| ${widths.map((w, c) => (numeric(c) ? `${'-'.repeat(w - 1)}:` : '-'.repeat(w))).join(' | ')} |`;
  return [line(header), rule, ...body.map(line)];
}

/** The generated block, markers included. */
export function renderIndex(rows: readonly Row[], proofs: readonly Proof[]): string {
  const byRow = proofsByRow(rows, proofs);
  const lines = [
    INDEX_START,
    `<!-- Generated by \`${REGENERATE}\` from the titles of src/ and test/ *.test.ts; do not edit by hand. -->`,
    '',
    ...summaryTable(rows.map((r) => [r.id, String(byRow.get(r.id)?.length ?? 0)] as const)),
  ];
  for (const row of rows) {
    const list = byRow.get(row.id) ?? [];
    lines.push('', `**${row.id}** (${list.length === 1 ? '1 test' : `${list.length} tests`})`, '');
    if (list.length === 0) lines.push('- none yet');
    for (const p of list) lines.push(`- ${code(p.file)}: ${code(p.title)}`);
  }
  lines.push('', INDEX_END);
  return lines.join('\n');
}

/** The page with its block replaced by `block`; undefined when the markers are missing. */
export function withIndex(doc: string, block: string): string | undefined {
  const start = doc.indexOf(INDEX_START);
  const end = doc.indexOf(INDEX_END);
  if (start === -1 || end === -1 || end < start) return undefined;
  return doc.slice(0, start) + block + doc.slice(end + INDEX_END.length);
}

export interface Problems {
  duplicateRows: string[];
  unproven: Row[];
  unknown: Array<{ proof: Proof; id: string }>;
  misplaced: Misplaced[];
}

export function problems(rows: readonly Row[], scan: Scan): Problems {
  const ids = new Set<string>();
  const duplicateRows: string[] = [];
  for (const r of rows) {
    if (ids.has(r.id)) duplicateRows.push(r.id);
    ids.add(r.id);
  }
  const byRow = proofsByRow(rows, scan.proofs);
  return {
    duplicateRows,
    unproven: rows.filter((r) => (byRow.get(r.id)?.length ?? 0) === 0),
    unknown: scan.proofs.flatMap((proof) =>
      proof.ids.filter((id) => !ids.has(id)).map((id) => ({ proof, id })),
    ),
    misplaced: scan.misplaced,
  };
}

/** One line per problem, written for the person who has to fix it. */
export function describeProblems(p: Problems, docPath: string): string[] {
  return [
    ...p.duplicateRows.map((id) => `${docPath} lists row ${id} twice`),
    ...p.unproven.map((r) => `row ${r.id} (${r.section}) has no test naming [${r.id}] in its title`),
    ...p.unknown.map(
      ({ proof, id }) => `${proof.file}: "${proof.title}" cites [${id}], which is not a row of ${docPath}`,
    ),
    ...p.misplaced.map(
      (m) => `${m.file}:${m.line}: [${m.id}] is not at the start of a test title; put row ids first`,
    ),
  ];
}

export const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const DOC = 'docs/agent-contract.md';

/** What the checked-in page should be, and what is wrong besides staleness. */
export function evaluate(root = ROOT): {
  doc: string;
  wanted: string | undefined;
  problems: string[];
  rows: Row[];
  scan: Scan;
} {
  const doc = readFileSync(join(root, DOC), 'utf8');
  const rows = readRows(doc);
  const scan = scanFiles(root, testFiles(root));
  const wanted = withIndex(doc, renderIndex(rows, scan.proofs));
  const found = describeProblems(problems(rows, scan), DOC);
  if (wanted === undefined) found.unshift(`${DOC} has no ${INDEX_START} … ${INDEX_END} block`);
  return { doc, wanted, problems: found, rows, scan };
}

if (import.meta.main) {
  const check = process.argv.includes('--check');
  const { doc, wanted, problems: found } = evaluate();
  for (const line of found) process.stderr.write(`${line}\n`);
  if (wanted !== undefined && wanted !== doc) {
    if (check) process.stderr.write(`${DOC}: the proof index is stale; run \`${REGENERATE}\`\n`);
    else {
      writeFileSync(join(ROOT, DOC), wanted);
      process.stdout.write(`wrote the proof index of ${DOC}\n`);
    }
  }
  if (found.length > 0 || (check && wanted !== doc)) process.exitCode = 1;
}
