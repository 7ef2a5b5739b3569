import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { cutText, cutWithMark, textLength } from './text.js';

describe('one text unit (UTF-16 code units), never a broken pair', () => {
  const text = fc.oneof(
    fc.string({ unit: fc.constantFrom('a', ' ', '😀', '👩‍👩‍👧', '\u{1F1EB}\u{1F1F7}') }),
    fc.string({ unit: 'binary' }),
  );

  it('cuts to at most max units, as a prefix, and keeps well-formed text well-formed (property)', () => {
    fc.assert(
      fc.property(text, fc.nat({ max: 60 }), (s, max) => {
        const cut = cutText(s, max);
        expect(textLength(cut)).toBeLessThanOrEqual(max);
        expect(s.startsWith(cut)).toBe(true);
        expect(cut.isWellFormed()).toBe(true);
        // At most the one unit of a pair is given up.
        expect(textLength(cut)).toBeGreaterThanOrEqual(Math.min(max, textLength(s)) - 1);
      }),
    );
  });

  it('adds the mark within the limit', () => {
    fc.assert(
      fc.property(text, fc.integer({ min: 1, max: 60 }), (s, max) => {
        const cut = cutWithMark(s, max);
        expect(textLength(cut)).toBeLessThanOrEqual(max);
        expect(cut.isWellFormed()).toBe(true);
      }),
    );
    expect(cutWithMark(`${'a'.repeat(9)}😀`, 10)).toBe(`${'a'.repeat(9)}…`);
    expect(cutText(`${'a'.repeat(9)}😀`, 10)).toBe('a'.repeat(9));
  });
});
