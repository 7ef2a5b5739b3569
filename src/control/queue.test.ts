import { describe, expect, it } from 'vitest';
import { KeyedQueue } from './queue.js';

const tick = (ms = 5) => new Promise((r) => setTimeout(r, ms));

function recorder() {
  const log: string[] = [];
  let active = 0;
  let maxActivePerKey = new Map<string, number>();
  const running = new Map<string, number>();
  return {
    log,
    maxActivePerKey: () => maxActivePerKey,
    get active() {
      return active;
    },
    reconcile: async (key: string) => {
      active++;
      running.set(key, (running.get(key) ?? 0) + 1);
      maxActivePerKey.set(key, Math.max(maxActivePerKey.get(key) ?? 0, running.get(key) ?? 0));
      log.push(`start ${key}`);
      await tick(20);
      log.push(`end ${key}`);
      running.set(key, (running.get(key) ?? 1) - 1);
      active--;
    },
    reset: () => {
      maxActivePerKey = new Map();
    },
  };
}

const options = { concurrency: 4, retryBaseMs: 10, retryMaxMs: 40, onError: () => undefined };

describe('KeyedQueue', () => {
  it('runs one reconcile per key at a time and keys in parallel', async () => {
    const r = recorder();
    const q = new KeyedQueue(r.reconcile, options);
    q.add('a');
    q.add('b');
    await tick();
    q.add('a'); // while a runs: once more afterwards
    q.add('a'); // coalesced with the previous add
    await q.idle();
    expect(r.log.filter((l) => l === 'start a')).toHaveLength(2);
    expect(r.log.filter((l) => l === 'start b')).toHaveLength(1);
    expect(r.maxActivePerKey().get('a')).toBe(1);
    expect(r.log.slice(0, 2).sort()).toEqual(['start a', 'start b']);
    await q.stop();
  });

  it('retries a failed key with growing, capped delays and forgets failures after success', async () => {
    const times: number[] = [];
    const errors: number[] = [];
    let calls = 0;
    const q = new KeyedQueue(
      async () => {
        times.push(Date.now());
        calls++;
        if (calls <= 3) throw new Error('api down');
      },
      { ...options, onError: (_k, _e, delay) => errors.push(delay) },
    );
    q.add('a');
    while (calls < 4) await tick();
    expect(errors).toEqual([10, 20, 40]);
    await q.stop();
  });

  it('addAfter keeps the earliest timer', async () => {
    const r = recorder();
    const q = new KeyedQueue(r.reconcile, options);
    q.addAfter('a', 1000);
    q.addAfter('a', 10);
    await tick(50);
    await q.idle();
    expect(r.log).toEqual(['start a', 'end a']);
    await q.stop();
  });

  it('stop aborts running reconciles and takes no more work', async () => {
    let aborted = false;
    const q = new KeyedQueue(
      (_key, signal) =>
        new Promise<void>((resolve) => {
          signal.addEventListener('abort', () => {
            aborted = true;
            resolve();
          });
        }),
      options,
    );
    q.add('a');
    await tick();
    await q.stop();
    expect(aborted).toBe(true);
    q.add('b');
    expect(q.size).toBe(0);
  });
});
