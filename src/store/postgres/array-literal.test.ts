import { createRequire } from 'node:module';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { arrayLiteral, withArrayLiterals } from './array-literal.js';

/** What `pg` itself sends for a parameter (its own converter; the package has no types for it). */
const pgUtils = createRequire(import.meta.url)('pg/lib/utils.js') as { prepareValue(v: unknown): unknown };
const pgSends = (value: unknown): unknown => pgUtils.prepareValue(value);

describe('arrayLiteral', () => {
  it('is what pg would send for a flat array of strings, numbers, booleans and nulls (property)', () => {
    const element = fc.oneof(
      fc.string(),
      fc.string({ unit: fc.constantFrom('\\', '"', ',', '{', '}', 'a', ' ', 'NULL', "'") }),
      fc.integer(),
      fc.double({ noNaN: true }),
      fc.boolean(),
      fc.constant(null),
      fc.constant(undefined),
    );
    fc.assert(
      fc.property(fc.array(element), (values) => {
        expect(arrayLiteral(values)).toBe(pgSends(values));
      }),
      { numRuns: 1_000 },
    );
  });

  it('escapes a backslash and a quote as pg does, and quotes the rest', () => {
    expect(arrayLiteral(['a"b', 'c\\d', 'plain', null, 7, true])).toBe(
      '{"a\\"b","c\\\\d","plain",NULL,"7","true"}',
    );
    expect(arrayLiteral([])).toBe('{}');
  });

  it('leaves to pg what it does not build: nested arrays, buffers, objects', () => {
    const nested = [['a'], ['b']];
    const buffers = [Buffer.from('x')];
    const objects = [{ a: 1 }];
    expect(arrayLiteral(nested)).toBeUndefined();
    expect(withArrayLiterals([nested, buffers, objects, 'one', 2])).toStrictEqual([
      nested,
      buffers,
      objects,
      'one',
      2,
    ]);
    expect(withArrayLiterals([['x', null], 'x'])).toStrictEqual(['{"x",NULL}', 'x']);
  });
});
