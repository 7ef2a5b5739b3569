import { describe, expect, it } from 'vitest';
import { titleOf } from '../../../src/surfaces/webchat/title.js';

describe('thread titles (title.ts)', () => {
  it('keeps a short first message whole, on one line', () => {
    expect(titleOf('  How are\n the pods?  ')).toBe('How are the pods?');
  });

  it('cuts a long one at a word, within the limit with its mark', () => {
    const text = 'Why does the checkout deployment restart every few minutes since yesterday evening';
    const title = titleOf(text, 40);
    expect(title).toBe('Why does the checkout deployment…');
    expect(title.length).toBeLessThanOrEqual(40);
    // The cut falling right before a space keeps the whole word.
    expect(titleOf('aaaa bbbb cccc', 10)).toBe('aaaa bbbb…');
  });

  it('cuts inside a word only when the first word alone is too long', () => {
    expect(titleOf('a https://example.com/a/very/long/address/indeed', 20)).toBe('a https://example.c…');
    expect(titleOf('x'.repeat(30), 10)).toBe(`${'x'.repeat(9)}…`);
  });

  it('never splits a surrogate pair (lengths are UTF-16 code units)', () => {
    const title = titleOf(`${'😀'.repeat(10)}`, 8);
    expect(title).toBe('😀😀😀…');
    expect(title.length).toBeLessThanOrEqual(8);
  });
});
