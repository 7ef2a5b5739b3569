/**
 * The bounds of what a trigger takes and keeps. A delivery larger than these is cut with a
 * visible "and N more", never dropped silently; only a body over `bodyBytes` is refused (413),
 * because it cannot be read without holding it all.
 */
export const TRIGGER_LIMITS = {
  /** A request body. Alertmanager sends every alert of the group: set `max_alerts` on its receiver. */
  bodyBytes: 1024 * 1024,
  /** Alerts of one delivery whose identity is claimed (so a repeat is recognised). */
  alertsPerDelivery: 1000,
  /** Alerts of one delivery whose labels and annotations are kept and shown. */
  alertsDetailed: 20,
  /** Labels plus annotations kept per alert. */
  fieldsPerAlert: 24,
  /** Characters of one label or annotation value (longer ones are cut with a mark). */
  valueChars: 500,
  keyChars: 128,
  /** Alertmanager's groupKey, a webhook's dedupeKey. */
  groupKeyChars: 8192,
  /** Characters of the fields one turn sends the agent, all alerts together. */
  turnFieldChars: 24_000,
  /** Alerts listed in a thread's root summary. */
  alertsInSummary: 5,
} as const;

/** Cuts text with a visible mark, so a reader knows there was more. */
export function cut(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}
