/** The seeds of the randomised rows: FAULT_SEEDS="1,2,3" (default), or a count: FAULT_SEEDS=10. */
export function faultSeeds(fallback = [1, 2, 3]): number[] {
  const raw = process.env.FAULT_SEEDS;
  if (raw === undefined || raw.trim() === '') return fallback;
  if (/^\d+$/.test(raw.trim())) return Array.from({ length: Number(raw) }, (_, i) => i + 1);
  return raw.split(',').map((s) => Number(s.trim()));
}
