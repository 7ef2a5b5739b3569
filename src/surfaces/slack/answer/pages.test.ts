import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { settledPart } from '../../common/markdown-pages.js';
import { markdownToMrkdwn } from './mrkdwn.js';
import { DEFAULT_PAGE_LIMITS, slackPages as paginate } from './pages.js';

const squash = (s: string): string => s.replace(/```\w*/g, '').replace(/\s+/g, '');
const fences = (s: string): number => (s.match(/^ {0,3}```/gm) ?? []).length;

function prose(paragraphs: number, words = 60): string {
  return Array.from(
    { length: paragraphs },
    (_, i) => `Paragraph ${i}: ${'word '.repeat(words).trim()}.`,
  ).join('\n\n');
}

describe('paginate', () => {
  it('keeps a short answer on one page', () => {
    expect(paginate('Just this.')).toEqual(['Just this.']);
    expect(paginate('')).toEqual([]);
  });

  it('splits long prose at paragraph breaks, every page within the limit once rendered', () => {
    const text = prose(80);
    const pages = paginate(text);
    expect(pages.length).toBeGreaterThan(4);
    for (const page of pages) {
      expect(markdownToMrkdwn(page).length).toBeLessThanOrEqual(DEFAULT_PAGE_LIMITS.hard);
      expect(page.trimEnd().endsWith('.')).toBe(true);
    }
    expect(squash(pages.join(''))).toBe(squash(text));
  });

  it('prefers closing after a code block to cutting inside it', () => {
    const code = `\`\`\`sh\n${Array.from({ length: 20 }, (_, i) => `echo line ${i}`).join('\n')}\n\`\`\``;
    const text = `${prose(1, 360)}\n\n${code}\n\nAfter the code.`;
    const pages = paginate(text, { soft: 2_000, hard: 3_600 });
    expect(pages).toHaveLength(2);
    expect(pages[0]?.trimEnd().endsWith('```')).toBe(true);
    expect(fences(pages[0] ?? '')).toBe(2);
    expect(pages[1]?.trim()).toBe('After the code.');
  });

  it('cuts a code block longer than a page at a line, closing and reopening its fence with the language', () => {
    const code = `\`\`\`python\n${Array.from({ length: 400 }, (_, i) => `print("row ${i}")`).join('\n')}\n\`\`\``;
    const pages = paginate(code, { soft: 1_000, hard: 1_500 });
    expect(pages.length).toBeGreaterThan(3);
    for (const [i, page] of pages.entries()) {
      expect(fences(page)).toBe(2);
      expect(page.length).toBeLessThanOrEqual(1_500);
      if (i > 0) expect(page.startsWith('```python\n')).toBe(true);
      // Cut between lines, never inside one.
      expect(page).toMatch(/(print\("row \d+"\)|```python)\n```$|```$/);
    }
    expect(squash(pages.join('\n'))).toBe(squash(code));
  });

  it('cuts a single endless line at a space near the limit, or at the limit', () => {
    const text = 'word '.repeat(2_000);
    const pages = paginate(text, { soft: 500, hard: 1_000 });
    for (const page of pages) expect(page.length).toBeLessThanOrEqual(1_000);
    expect(pages.slice(0, -1).every((p) => p.endsWith(' '))).toBe(true);
    expect(pages.join('')).toBe(text);
    const solid = 'x'.repeat(2_500);
    expect(paginate(solid, { soft: 500, hard: 1_000 }).join('')).toBe(solid);
  });

  it('counts characters Slack escapes at their escaped length', () => {
    const text = '&'.repeat(1_000);
    for (const page of paginate(text, { soft: 500, hard: 1_000 })) {
      expect(markdownToMrkdwn(page).length).toBeLessThanOrEqual(1_000);
    }
  });

  it('never splits a surrogate pair', () => {
    const text = '😀'.repeat(1_000);
    for (const page of paginate(text, { soft: 100, hard: 301 })) expect(page.isWellFormed()).toBe(true);
  });

  it('only ever extends what a shorter text showed: closed pages never change, the open one grows (property)', () => {
    const unit = fc.constantFrom('a', 'b', ' ', '\n', '\n\n', '```', '```js\n', '&', '<', 'word ');
    fc.assert(
      fc.property(fc.array(unit, { maxLength: 200 }), fc.nat(), (units, cut) => {
        const text = units.join('');
        const prefix = text.slice(0, cut % (text.length + 1));
        const limits = { soft: 30, hard: 60 };
        const full = paginate(text, limits);
        const early = paginate(prefix, limits);
        early.forEach((page, i) => {
          const later = full[i] ?? '';
          if (i < early.length - 1) expect(later).toBe(page);
          else expect(later.startsWith(settledPart(page))).toBe(true);
        });
      }),
    );
  });
});

describe('settledPart', () => {
  it('holds back trailing whitespace and a line that may still become a code fence', () => {
    expect(settledPart('para one\n\n')).toBe('para one');
    expect(settledPart('text\n`')).toBe('text');
    expect(settledPart('text\n``')).toBe('text');
    expect(settledPart('text\n```')).toBe('text\n```');
    expect(settledPart('use `x')).toBe('use `x');
  });
});
