import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { systemClock } from './clock.js';

describe('systemClock.sleep', () => {
  it('resolves after the time given', async () => {
    const started = performance.now();
    await systemClock.sleep(20);
    expect(performance.now() - started).toBeGreaterThanOrEqual(15);
  });

  it("rejects with the signal's own reason when it aborts, at once when it already has", async () => {
    const reason = new RangeError('stopping');
    const controller = new AbortController();
    const waiting = systemClock.sleep(60_000, controller.signal);
    controller.abort(reason);
    await expect(waiting).rejects.toBe(reason);
    await expect(systemClock.sleep(60_000, AbortSignal.abort(reason))).rejects.toBe(reason);
  });

  it('leaves no listener on a signal, whether the sleep ran out or was cut', async () => {
    const controller = new AbortController();
    await systemClock.sleep(5, controller.signal);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    const cut = new AbortController();
    const waiting = systemClock.sleep(60_000, cut.signal);
    expect(getEventListeners(cut.signal, 'abort')).toHaveLength(1);
    cut.abort(new Error('done'));
    await expect(waiting).rejects.toThrow('done');
    expect(getEventListeners(cut.signal, 'abort')).toHaveLength(0);
  });
});
