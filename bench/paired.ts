/**
 * Ratios of two variants measured in rounds that alternate their order: round i runs one set of
 * each back to back, rounds 2k and 2k+1 in opposite orders. Whatever running second costs (the
 * first set's garbage, its pages) then falls once on each side of a pair and cancels in the
 * pair's ratio, the geometric mean of its two rounds' ratios. A round left without its partner
 * (an odd count) is left out.
 */
export function pairRatios(without: readonly number[], withIt: readonly number[]): number[] {
  const ratios: number[] = [];
  for (let i = 0; i + 1 < without.length; i += 2) {
    const a = (without[i] as number) / (withIt[i] as number);
    const b = (without[i + 1] as number) / (withIt[i + 1] as number);
    ratios.push(Math.sqrt(a * b));
  }
  return ratios;
}
