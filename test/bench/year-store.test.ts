import { describe, expect, it } from 'vitest';
import { updatedAt, wordsOf } from '../../bench/year-store.js';

const DAY = 24 * 3600 * 1000;
const NOW = Date.UTC(2026, 11, 6);

describe('the year store', () => {
  it('puts the first `old` threads past a 90-day cut, oldest first, and the rest within it', () => {
    const n = 1000;
    const old = 900;
    const times = Array.from({ length: n }, (_, i) => updatedAt(i, n, old, NOW));
    for (let i = 1; i < n; i++) expect(times[i]).toBeGreaterThanOrEqual(times[i - 1] as number);
    expect(times.slice(0, old).every((t) => t < NOW - 90 * DAY && t >= NOW - 365 * DAY)).toBe(true);
    expect(times.slice(old).every((t) => t > NOW - 90 * DAY && t < NOW)).toBe(true);
  });

  it('gives each turn a few hundred bytes of words', () => {
    for (const [i, seq] of [
      [0, 1],
      [7, 2],
      [999_999, 1],
    ] as const) {
      const words = wordsOf(i, seq);
      expect(words.length).toBeGreaterThanOrEqual(260);
      expect(words.length).toBeLessThan(340);
    }
  });
});
