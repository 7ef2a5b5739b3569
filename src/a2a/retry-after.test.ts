import { describe, expect, it } from 'vitest';
import { MAX_RETRY_AFTER_MS, parseRetryAfter } from './retry-after.js';

describe('parseRetryAfter', () => {
  const now = Date.parse('2026-11-30T10:00:00Z');

  it('[E-8] reads delay-seconds', () => {
    expect(parseRetryAfter('120', now)).toBe(120_000);
    expect(parseRetryAfter(' 0 ', now)).toBe(0);
  });

  it('[E-8] reads an HTTP date relative to now, never negative', () => {
    expect(parseRetryAfter('Mon, 30 Nov 2026 10:01:30 GMT', now)).toBe(90_000);
    expect(parseRetryAfter('Mon, 30 Nov 2026 09:00:00 GMT', now)).toBe(0);
  });

  it('[E-8] caps the wait at a day, for seconds and for dates', () => {
    expect(parseRetryAfter('999999', now)).toBe(MAX_RETRY_AFTER_MS);
    expect(parseRetryAfter('Fri, 01 Jan 2027 00:00:00 GMT', now)).toBe(MAX_RETRY_AFTER_MS);
  });

  it('ignores absent and unreadable values', () => {
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
    expect(parseRetryAfter('', now)).toBeUndefined();
    expect(parseRetryAfter('1.5', now)).toBeUndefined();
    expect(parseRetryAfter('-3', now)).toBeUndefined();
    expect(parseRetryAfter('soon', now)).toBeUndefined();
  });
});
