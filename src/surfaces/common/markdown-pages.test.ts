import { describe, expect, it } from 'vitest';
import { fenceAfter } from './markdown-fences.js';
import { paginate, utf8Cost } from './markdown-pages.js';

/** Whether every code block a page opens is closed on it. */
function balanced(page: string): boolean {
  let fence: string | null = null;
  for (const line of page.split('\n')) fence = fenceAfter(fence, line);
  return fence === null;
}

describe('pages measured in UTF-8 bytes (Teams)', () => {
  it('keeps each page within the bytes, whatever the characters, and loses none of them', () => {
    const text = Array.from(
      { length: 400 },
      (_, i) => `Zeile ${i}: Grüße, 日本語, 🚀🚀 and a little more.\n\n`,
    ).join('');
    const pages = paginate(text, { soft: 1_500, hard: 2_000, cost: utf8Cost });
    expect(pages.length).toBeGreaterThan(5);
    for (const page of pages) {
      expect(Buffer.byteLength(page)).toBeLessThanOrEqual(2_000);
      expect(page.isWellFormed()).toBe(true);
    }
    // Only the whitespace at a boundary is dropped.
    expect(pages.join('').replace(/\s+/g, '')).toBe(text.replace(/\s+/g, ''));
  });

  it('closes a code block cut in two and opens it again, with its info string, on the next page', () => {
    const code = `Here:\n\n\`\`\`ts\n${Array.from({ length: 300 }, (_, i) => `const v${i} = '${'ü'.repeat(10)}';`).join('\n')}\n\`\`\`\nDone.`;
    const pages = paginate(code, { soft: 1_500, hard: 2_000, cost: utf8Cost });
    expect(pages.length).toBeGreaterThan(2);
    for (const page of pages) {
      expect(balanced(page)).toBe(true);
      expect(Buffer.byteLength(page)).toBeLessThanOrEqual(2_000);
    }
    expect(pages[1]?.startsWith('```ts\n')).toBe(true);
  });

  it('counts a character by its UTF-8 bytes', () => {
    const bytes = (s: string) => {
      let n = 0;
      for (let i = 0; i < s.length; i++) n += utf8Cost(s.charCodeAt(i));
      return n;
    };
    for (const s of ['a', 'ü', '日', '🚀', 'a ü 日 🚀']) expect(bytes(s)).toBe(Buffer.byteLength(s));
  });
});
