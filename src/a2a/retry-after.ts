/** E-8: Retry-After is honoured, but an agent cannot park a turn for longer than a day. */
export const MAX_RETRY_AFTER_MS = 24 * 60 * 60 * 1000;

/**
 * Parses a Retry-After value (RFC 9110 §10.2.3): delay-seconds or an HTTP date. Returns the wait
 * in milliseconds, capped at a day, or undefined when the header is absent or unreadable.
 */
export function parseRetryAfter(value: string | undefined, nowMs: number): number | undefined {
  if (value === undefined) return undefined;
  const trimmed = value.trim();
  if (trimmed === '') return undefined;
  if (/^\d+$/.test(trimmed)) return Math.min(Number(trimmed) * 1000, MAX_RETRY_AFTER_MS);
  // Only the date forms: Date.parse would otherwise read things like "1.5" as a date.
  if (!/[a-z]/i.test(trimmed)) return undefined;
  const at = Date.parse(trimmed);
  if (Number.isNaN(at)) return undefined;
  return Math.min(Math.max(0, at - nowMs), MAX_RETRY_AFTER_MS);
}
