/**
 * Durations as Kubernetes writes them ("10m", "1h30m", "90s", "1.5h"): the subset of Go's
 * time.ParseDuration that CEL's duration() also reads, so the CRD's rules and ours agree.
 * Units below a millisecond are left out: nothing here is that precise.
 */

export const DURATION_PATTERN = /^([0-9]+(\.[0-9]+)?(ms|h|m|s))+$/;

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Milliseconds, or undefined when `text` is not such a duration. */
export function parseDuration(text: string): number | undefined {
  if (!DURATION_PATTERN.test(text)) return undefined;
  let total = 0;
  for (const [, amount, , unit] of text.matchAll(/([0-9]+(\.[0-9]+)?)(ms|h|m|s)/g)) {
    total += Number(amount) * (UNIT_MS[unit ?? ''] ?? Number.NaN);
  }
  return Number.isFinite(total) ? Math.round(total) : undefined;
}
