import { describe, expect, it } from 'vitest';
import type { TaskStatus } from './agent/model.js';
import { failureCategory } from './failure.js';

function failed(texts: string[], metadata?: Record<string, unknown>): TaskStatus {
  return {
    state: 'failed',
    message: {
      messageId: 'm',
      role: 'agent',
      parts: texts.map((text) => ({ kind: 'text', text })),
      ...(metadata ? { metadata } : {}),
    },
  };
}

describe('failure categories', () => {
  it('[E-10] reads a category from the status text', () => {
    expect(failureCategory(failed(['Error: context_length_exceeded for model']))).toBe('context limit');
    expect(failureCategory(failed(['rate limit exceeded']))).toBe('rate limit');
    expect(failureCategory(failed(['401 Unauthorized from upstream']))).toBe('authentication');
    expect(failureCategory(failed(['the tool call timed out']))).toBe('timeout');
    expect(failureCategory(failed(['permission denied on namespace prod']))).toBe('permission');
    expect(failureCategory(failed(['something odd']))).toBeUndefined();
    expect(failureCategory({ state: 'failed' })).toBeUndefined();
  });

  it('[E-10] prefers the metadata codes code, error_code and kagent_error_code', () => {
    expect(failureCategory(failed(['timed out'], { code: 'RATE_LIMIT' }))).toBe('rate limit');
    expect(failureCategory(failed([], { error_code: 'DEADLINE_EXCEEDED' }))).toBe('timeout');
    expect(failureCategory(failed([], { kagent_error_code: 'PERMISSION_DENIED' }))).toBe('permission');
  });

  it('[E-10] reads at most 32 parts and 4096 characters', () => {
    const padding = Array.from({ length: 32 }, () => 'nothing to see');
    expect(failureCategory(failed([...padding, 'rate limit']))).toBeUndefined();
    expect(failureCategory(failed([`${'x'.repeat(5000)} rate limit`]))).toBeUndefined();
  });
});
