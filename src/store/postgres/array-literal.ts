/**
 * PostgreSQL array literals for the batched statements' parameters, built here rather than by
 * `pg`. Its builder quotes every element through two regular-expression replacements; a batch
 * of commits carries thousands of elements, and a CPU profile of two replicas put 2.7 % of the
 * broker's busy samples there. Most elements hold neither `\` nor `"`, so they are only quoted.
 *
 * Only flat arrays of strings, numbers, bigints, booleans and nulls are built here; anything
 * else (a nested array, a Buffer, an object) goes to `pg` as it is. The text is what `pg` would
 * send: `{"a","b",NULL}`, each element quoted, `\` and `"` escaped with a backslash.
 */
export function arrayLiteral(values: readonly unknown[]): string | undefined {
  let out = '{';
  for (let i = 0; i < values.length; i++) {
    if (i > 0) out += ',';
    const value = values[i];
    if (value === null || value === undefined) {
      out += 'NULL';
      continue;
    }
    let text: string;
    switch (typeof value) {
      case 'string':
        text = value;
        break;
      case 'number':
      case 'bigint':
      case 'boolean':
        text = String(value);
        break;
      default:
        return undefined;
    }
    out += text.includes('\\') || text.includes('"') ? `"${escapeElement(text)}"` : `"${text}"`;
  }
  return `${out}}`;
}

function escapeElement(text: string): string {
  return text.replaceAll('\\', '\\\\').replaceAll('"', '\\"');
}

/** The parameters of one statement, each flat array as its literal. */
export function withArrayLiterals(values: readonly unknown[]): unknown[] {
  return values.map((value) => (Array.isArray(value) ? (arrayLiteral(value) ?? value) : value));
}
