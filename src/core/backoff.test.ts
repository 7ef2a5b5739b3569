import { describe, expect, it } from 'vitest';
import { backoffDelay } from './backoff.js';

describe('backoffDelay', () => {
  const policy = { baseMs: 1_000, maxMs: 60_000 };

  it('doubles from the base per retry, up to the cap', () => {
    expect([0, 1, 2, 3, 4, 5, 6, 7].map((n) => backoffDelay(n, policy))).toEqual([
      1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 60_000, 60_000,
    ]);
  });

  it('stays at the cap however many retries, and treats a negative retry as the first', () => {
    expect(backoffDelay(1_000_000, policy)).toBe(60_000);
    expect(backoffDelay(Number.MAX_SAFE_INTEGER, { baseMs: 0.001, maxMs: 5 })).toBe(5);
    expect(backoffDelay(-3, policy)).toBe(1_000);
  });

  it('spreads a wait evenly within ±jitter of it, from the random source given', () => {
    const jittered = { ...policy, jitter: 0.2 };
    expect(backoffDelay(2, jittered, () => 0)).toBeCloseTo(3_200);
    expect(backoffDelay(2, jittered, () => 0.5)).toBeCloseTo(4_000);
    expect(backoffDelay(2, jittered, () => 0.999_999)).toBeCloseTo(4_800, 0);
    for (let i = 0; i < 100; i++) {
      const wait = backoffDelay(10, jittered);
      expect(wait).toBeGreaterThanOrEqual(48_000);
      expect(wait).toBeLessThan(72_000);
    }
  });
});
