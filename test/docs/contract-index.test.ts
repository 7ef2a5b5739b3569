import { describe, expect, it } from 'vitest';
import {
  DOC,
  describeProblems,
  evaluate,
  INDEX_END,
  INDEX_START,
  problems,
  REGENERATE,
  readRows,
  renderIndex,
  scanSource,
  withIndex,
} from '../../scripts/contract-index.js';
import {
  BARE_MESSAGE_LINE,
  EXPECTED_PROBLEM_LINES,
  OTHER_FILE_SOURCE,
  SAMPLE_DOC,
  SAMPLE_MISPLACED,
  SAMPLE_ROWS,
  SAMPLE_TEST_SOURCE,
  SAMPLE_TITLES,
  TICKED_LINE,
  TICKED_SOURCE,
  UNKNOWN_ID,
  UNKNOWN_SOURCE,
} from './contract-index-samples.js';

/**
 * docs/agent-contract.md lists every contract row and, in a generated block, the tests that
 * prove each one. These checks keep the two in step in `npm test`.
 */
describe('the agent contract and its proofs', () => {
  const repo = evaluate();

  it('lists the rows of every section of the contract', () => {
    const sections = new Set(repo.rows.map((r) => r.section));
    expect([...sections]).toEqual([
      'Discovery and transport (DT)',
      'Methods (M)',
      'What the broker sends (S)',
      'Replies (R)',
      'Task states (T)',
      'Questions and approvals (Q)',
      'Errors (E)',
      'Agents that do not stream: polling (P)',
    ]);
    // Ids run 1..n within each prefix, so a row cannot go missing without a gap showing.
    const byPrefix = new Map<string, number[]>();
    for (const { id } of repo.rows) {
      const [prefix = '', n = ''] = id.split('-');
      byPrefix.set(prefix, [...(byPrefix.get(prefix) ?? []), Number(n)]);
    }
    for (const [prefix, numbers] of byPrefix) expect(numbers, prefix).toEqual(numbers.map((_, i) => i + 1));
    expect(repo.rows).toHaveLength(62);
  });

  it('has a test for every row, cites no id that is not a row, and puts ids first in titles', () => {
    expect(repo.problems, repo.problems.join('\n')).toEqual([]);
  });

  it(`holds the index that \`${REGENERATE}\` writes (run it and commit ${DOC} when this fails)`, () => {
    expect(repo.wanted, `${DOC} has no generated block`).toBeDefined();
    expect(repo.doc, `${DOC}: the proof index is stale; run \`${REGENERATE}\``).toBe(repo.wanted);
  });
});

describe('reading test titles', () => {
  const scan = scanSource('test/sample.test.ts', SAMPLE_TEST_SOURCE);

  it('takes every literal that starts with row ids: it() titles, table names, it.each rows', () => {
    expect(scan.proofs.map(({ title, ids }) => ({ title, ids }))).toEqual(SAMPLE_TITLES);
    expect(new Set(scan.proofs.map((p) => p.file))).toEqual(new Set(['test/sample.test.ts']));
  });

  it('reports an id that is not at the start of a title, and skips comments', () => {
    expect(scan.misplaced.map(({ line, id }) => ({ line, id }))).toEqual(SAMPLE_MISPLACED);
    expect(scan.proofs.flatMap((p) => p.ids)).not.toContain('Q-9');
  });
});

describe('reading the rows of the page', () => {
  it('takes table lines whose first cell is an id, outside the generated block, in order', () => {
    expect(readRows(SAMPLE_DOC)).toEqual(SAMPLE_ROWS);
  });
});

describe('the generated index', () => {
  const proofs = scanSource('test/b.test.ts', SAMPLE_TEST_SOURCE).proofs;
  const block = renderIndex(SAMPLE_ROWS, proofs);

  it('is the same whatever order the proofs come in', () => {
    expect(renderIndex(SAMPLE_ROWS, [...proofs].reverse())).toBe(block);
    const other = scanSource('test/a.test.ts', OTHER_FILE_SOURCE).proofs;
    const twice = renderIndex(SAMPLE_ROWS, [...other, ...proofs, ...proofs]);
    expect(renderIndex(SAMPLE_ROWS, [...proofs, ...other])).toBe(twice);
    // Sorted by file, then title; a proof seen twice is listed once.
    const e3 = twice.slice(twice.indexOf('**E-3**'), twice.indexOf('**E-1**'));
    expect(e3.indexOf('test/a.test.ts')).toBeLessThan(e3.indexOf('test/b.test.ts'));
    expect(e3.match(/test\/b\.test\.ts/g)).toHaveLength(1);
    expect(e3).toContain('**E-3** (2 tests)');
  });

  it('lists each row with its count and its tests, between the markers', () => {
    expect(block.startsWith(INDEX_START)).toBe(true);
    expect(block.endsWith(INDEX_END)).toBe(true);
    expect(block).toContain('| E-3 |     1 | E-1 |     1 | R-1 |     1 |');
    expect(block).toContain(BARE_MESSAGE_LINE);
    // A title with backticks in it stays one code span.
    const ticked = scanSource('t.test.ts', TICKED_SOURCE).proofs;
    expect(renderIndex(SAMPLE_ROWS, ticked)).toContain(TICKED_LINE);
  });

  it('says "none yet" for a row without a test, which the check then refuses', () => {
    expect(renderIndex(SAMPLE_ROWS, [])).toContain('**R-1** (0 tests)\n\n- none yet');
  });

  it('replaces only what lies between the markers', () => {
    const page = withIndex(SAMPLE_DOC, renderIndex(SAMPLE_ROWS, proofs));
    expect(page?.startsWith(SAMPLE_DOC.slice(0, SAMPLE_DOC.indexOf(INDEX_START)))).toBe(true);
    expect(page?.endsWith(SAMPLE_DOC.slice(SAMPLE_DOC.indexOf(INDEX_END) + INDEX_END.length))).toBe(true);
    expect(page).not.toContain('| E-9 | 3 |');
    expect(withIndex('# no markers', block)).toBeUndefined();
  });
});

describe('what the check refuses', () => {
  it('names a row without a proof, an unknown id, a misplaced id and a row listed twice', () => {
    const scan = scanSource('test/sample.test.ts', SAMPLE_TEST_SOURCE);
    const extra = scanSource('test/x.test.ts', UNKNOWN_SOURCE);
    const rows = [...SAMPLE_ROWS, { id: 'E-2', section: 'Errors (E)' }, SAMPLE_ROWS[0] ?? SAMPLE_ROWS[1]];
    const found = problems(rows as typeof SAMPLE_ROWS, {
      proofs: [...scan.proofs, ...extra.proofs],
      misplaced: scan.misplaced,
    });
    expect(found.duplicateRows).toEqual(['E-3']);
    expect(found.unproven.map((r) => r.id)).toEqual(['E-2']);
    expect(found.unknown.map((u) => u.id)).toContain(UNKNOWN_ID);
    const lines = describeProblems(found, DOC);
    for (const line of EXPECTED_PROBLEM_LINES) expect(lines).toContain(line);
  });
});
