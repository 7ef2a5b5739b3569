/** Reading parsed JSON in tests without casts. */

/** Walks a path through parsed JSON; undefined when any step is missing. */
export function at(value: unknown, ...path: Array<string | number>): unknown {
  let cur: unknown = value;
  for (const key of path) {
    if (typeof cur !== 'object' || cur === null) return undefined;
    cur = (cur as Record<string | number, unknown>)[key];
  }
  return cur;
}

/** The value as a string, or a failure that shows what was there instead. */
export function str(value: unknown): string {
  if (typeof value !== 'string') throw new Error(`expected a string, got ${JSON.stringify(value)}`);
  return value;
}
