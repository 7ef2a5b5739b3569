import { describe, expect, it } from 'vitest';
import {
  boundMessage,
  falseCondition,
  readyCondition,
  readyTransition,
  sameJson,
  stampConditions,
  trueCondition,
  unknownCondition,
} from './status.js';

describe('conditions', () => {
  it('Ready follows the first False, then the first Unknown', () => {
    const parts = [
      trueCondition('BackendResolved', 'Resolved', 'ok'),
      unknownCondition('CardAccepted', 'Pending', 'not yet'),
      falseCondition('ChannelsAssigned', 'ChannelConflict', 'shared'),
    ];
    expect(readyCondition(parts, 'ready')).toMatchObject({ status: 'False', reason: 'ChannelConflict' });
    expect(readyCondition(parts.slice(0, 2), 'ready')).toMatchObject({
      status: 'Unknown',
      reason: 'Pending',
    });
    expect(readyCondition(parts.slice(0, 1), 'ready')).toMatchObject({ status: 'True', reason: 'Ready' });
  });

  it('keeps lastTransitionTime while the status stays, and moves it when it changes', () => {
    const t1 = new Date('2026-11-30T10:00:00.123Z');
    const t2 = new Date('2026-11-30T11:00:00Z');
    const first = stampConditions(undefined, [trueCondition('Ready', 'Ready', 'ok')], 3, t1);
    expect(first[0]).toEqual({
      type: 'Ready',
      status: 'True',
      reason: 'Ready',
      message: 'ok',
      lastTransitionTime: '2026-11-30T10:00:00Z',
      observedGeneration: 3,
    });
    const same = stampConditions(first, [trueCondition('Ready', 'Ready', 'still ok')], 4, t2);
    expect(same[0]?.lastTransitionTime).toBe('2026-11-30T10:00:00Z');
    const moved = stampConditions(first, [falseCondition('Ready', 'CardFetchFailed', 'down')], 4, t2);
    expect(moved[0]?.lastTransitionTime).toBe('2026-11-30T11:00:00Z');
  });

  it('bounds messages to one line', () => {
    expect(boundMessage('a\n  b')).toBe('a b');
    expect(boundMessage('x'.repeat(2000)).length).toBe(1024);
  });

  it('raises an event only when Ready moved', () => {
    const at = new Date('2026-11-30T10:00:00Z');
    const ready = stampConditions(undefined, [trueCondition('Ready', 'Ready', 'ok')], 1, at);
    const down = stampConditions(ready, [falseCondition('Ready', 'SecretNotFound', 'gone')], 1, at);
    expect(readyTransition(undefined, ready)).toEqual({ type: 'Normal', reason: 'Ready', note: 'ok' });
    expect(readyTransition(ready, down)).toEqual({ type: 'Warning', reason: 'SecretNotFound', note: 'gone' });
    expect(readyTransition(down, down)).toBeUndefined();
  });

  it('compares statuses regardless of key order and undefined fields', () => {
    expect(sameJson({ a: 1, b: { c: [1, 2] }, d: undefined }, { b: { c: [1, 2] }, a: 1 })).toBe(true);
    expect(sameJson({ a: [1, 2] }, { a: [2, 1] })).toBe(false);
  });
});
