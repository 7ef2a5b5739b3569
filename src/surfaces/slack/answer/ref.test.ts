import { describe, expect, it } from 'vitest';
import { decodeAnswerRef, encodeAnswerRef } from './ref.js';

describe('answer refs', () => {
  it('round-trips the channel and every page, with open streams marked', () => {
    const ref = {
      channel: 'C0123',
      pages: [
        { ts: '1700000000.000100', streaming: false },
        { ts: '1700000000.000200', streaming: true },
      ],
    };
    const text = encodeAnswerRef(ref);
    expect(text).toBe('slack1|C0123|1700000000.000100,1700000000.000200~');
    expect(decodeAnswerRef(text)).toEqual(ref);
  });

  it('refuses anything it did not write', () => {
    for (const bad of [
      '',
      'answer-1',
      'slack1|C1|',
      'slack1|c1|1.1',
      'slack1|C1|abc',
      'slack2|C1|1.1',
      'slack1|C1|1.1|x',
    ]) {
      expect(decodeAnswerRef(bad)).toBeUndefined();
    }
  });
});
