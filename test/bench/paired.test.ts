import { describe, expect, it } from 'vitest';
import { pairRatios } from '../../bench/paired.js';

describe('ratios of rounds in alternating order', () => {
  it('cancels what running second costs: equal variants read 1 in every pair', () => {
    // Both variants cost 100; whichever runs second costs 10 % more. Round 0 runs 'without'
    // first, round 1 'with' first, and so on.
    const secondCosts = 1.1;
    const without = [100, 100 * secondCosts, 100, 100 * secondCosts];
    const withIt = [100 * secondCosts, 100, 100 * secondCosts, 100];
    const ratios = pairRatios(without, withIt);
    expect(ratios).toHaveLength(2);
    for (const r of ratios) expect(r).toBeCloseTo(1, 12);
  });

  it('keeps a real difference, and leaves out a round without its partner', () => {
    // 'with' costs 2 % more; running second 10 % more again; a fifth round has no partner.
    const without = [100, 110, 100, 110, 50];
    const withIt = [112.2, 102, 112.2, 102, 500];
    const ratios = pairRatios(without, withIt);
    expect(ratios).toHaveLength(2);
    for (const r of ratios) expect(r).toBeCloseTo(1 / 1.02, 12);
  });
});
