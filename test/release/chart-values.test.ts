import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { parseAssignments, setValues } from '../../scripts/chart-values.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const VALUES = readFileSync(join(ROOT, 'charts/agentkourier/values.yaml'), 'utf8');

describe('scripts/chart-values.ts: values set as YAML', () => {
  it("sets the chart's image.repository and leaves every other value and comment as it was", () => {
    const out = setValues(VALUES, { 'image.repository': 'ghcr.io/acme/agentkourier' });
    const before = parse(VALUES) as { image: Record<string, unknown> };
    const after = parse(out) as { image: Record<string, unknown> };
    expect(after.image.repository).toBe('ghcr.io/acme/agentkourier');
    expect(after).toEqual({ ...before, image: { ...before.image, repository: 'ghcr.io/acme/agentkourier' } });
    const comments = (text: string) => text.split('\n').filter((l) => l.trimStart().startsWith('#'));
    expect(comments(out)).toEqual(comments(VALUES));
  });

  it('quotes a value that YAML would otherwise read as something else', () => {
    const out = setValues('a:\n  b: x\n', { 'a.b': 'yes: # no' });
    expect((parse(out) as { a: { b: unknown } }).a.b).toBe('yes: # no');
  });

  it('refuses a key the file lacks, a key holding a map, and a file that is not YAML', () => {
    expect(() => setValues(VALUES, { 'image.repo': 'x' })).toThrow('no key image.repo');
    expect(() => setValues(VALUES, { 'nope.repository': 'x' })).toThrow('no key nope.repository');
    expect(() => setValues(VALUES, { image: 'x' })).toThrow('image holds a map');
    expect(() => setValues(VALUES, { 'image..tag': 'x' })).toThrow('not a dotted key');
    expect(() => setValues('a: [1,\n', { a: 'x' })).toThrow('not valid YAML');
  });

  it('reads key=value arguments, the value free to hold "="', () => {
    expect(parseAssignments(['a.b=c=d', 'e='])).toEqual({ 'a.b': 'c=d', e: '' });
    expect(() => parseAssignments(['=x'])).toThrow('expected <dotted.key>=<value>');
    expect(() => parseAssignments(['x'])).toThrow('expected <dotted.key>=<value>');
  });
});
