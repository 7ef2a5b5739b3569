import { describe, expect, it } from 'vitest';
import { Batcher } from './batches.js';

/** A batch runner that records each batch and answers each call after `release()`. */
function recorder<I>(answer: (item: I) => unknown = (item) => item) {
  const batches: I[][] = [];
  const gates: Array<() => void> = [];
  let fail: ((items: I[]) => unknown) | undefined;
  const run = async (items: I[]) => {
    batches.push(items);
    await new Promise<void>((resolve) => gates.push(resolve));
    const error = fail?.(items);
    if (error !== undefined) throw error;
    return items.map(answer);
  };
  const release = async () => {
    while (gates.length === 0) await new Promise((resolve) => setImmediate(resolve));
    gates.shift()?.();
  };
  return {
    run,
    batches,
    release,
    failWhen: (f: (items: I[]) => unknown) => {
      fail = f;
    },
  };
}

describe('Batcher', () => {
  it('sends a call alone at once, and the calls made while it runs together in the next batch', async () => {
    const r = recorder<string>();
    const batcher = new Batcher(r.run, { max: 10, keysOf: (s) => [s] });
    const first = batcher.submit('a');
    await r.release();
    expect(await first).toBe('a');
    const second = batcher.submit('b');
    await new Promise((resolve) => setImmediate(resolve));
    const more = ['c', 'd', 'e'].map((s) => batcher.submit(s));
    await r.release();
    await r.release();
    expect(await second).toBe('b');
    expect(await Promise.all(more)).toStrictEqual(['c', 'd', 'e']);
    expect(r.batches).toStrictEqual([['a'], ['b'], ['c', 'd', 'e']]);
  });

  it('never puts two calls with a key in common in one batch, and keeps their order', async () => {
    const r = recorder<{ id: string; keys: string[] }>((item) => item.id);
    const batcher = new Batcher(r.run, { max: 10, keysOf: (item) => item.keys });
    const calls = [
      batcher.submit({ id: '1', keys: ['s1'] }),
      batcher.submit({ id: '2', keys: ['s2', 's1'] }),
      batcher.submit({ id: '3', keys: ['s3'] }),
      // Waits behind 2, which holds s2 and waits itself.
      batcher.submit({ id: '4', keys: ['s2'] }),
    ];
    for (let i = 0; i < 3; i++) await r.release();
    expect(await Promise.all(calls)).toStrictEqual(['1', '2', '3', '4']);
    expect(r.batches.map((b) => b.map((item) => item.id))).toStrictEqual([['1', '3'], ['2'], ['4']]);
  });

  it('carries at most `max` calls in one batch', async () => {
    const r = recorder<number>();
    const batcher = new Batcher(r.run, { max: 2, keysOf: (n) => [String(n)] });
    const calls = [1, 2, 3, 4, 5].map((n) => batcher.submit(n));
    for (let i = 0; i < 3; i++) await r.release();
    expect(await Promise.all(calls)).toStrictEqual([1, 2, 3, 4, 5]);
    expect(r.batches).toStrictEqual([[1, 2], [3, 4], [5]]);
  });

  it('gives a shared read of a key already waiting the same answer, but not one already sent', async () => {
    const r = recorder<string>();
    const batcher = new Batcher(r.run, { max: 10, keysOf: (s) => [s], shared: true });
    const sent = batcher.submit('a');
    await new Promise((resolve) => setImmediate(resolve));
    // 'a' is in flight: a new read of it must see writes made since, so it waits for a batch.
    const again = batcher.submit('a');
    const twice = batcher.submit('a');
    expect(twice).toBe(again);
    await r.release();
    await r.release();
    expect([await sent, await again]).toStrictEqual(['a', 'a']);
    expect(r.batches).toStrictEqual([['a'], ['a']]);
  });

  it('fails every call of a failed batch, unless the failure allows each to be run again alone', async () => {
    const refused = new Error('refused');
    const lost = new Error('connection lost');
    const r = recorder<string>();
    r.failWhen((items) => (items.includes('bad') ? (items.length > 1 ? refused : lost) : undefined));
    const batcher = new Batcher(r.run, {
      max: 10,
      keysOf: (s) => [s],
      retryAlone: (error) => error === refused,
    });
    const blocker = batcher.submit('first');
    await new Promise((resolve) => setImmediate(resolve));
    const calls = ['good', 'bad', 'fine'].map((s) => batcher.submit(s).catch((e: unknown) => e));
    for (let i = 0; i < 5; i++) await r.release();
    expect(await blocker).toBe('first');
    // The batch was refused: each call ran alone, and only the bad one failed.
    expect(await Promise.all(calls)).toStrictEqual(['good', lost, 'fine']);

    const strict = recorder<string>();
    strict.failWhen(() => lost);
    const noRetry = new Batcher(strict.run, { max: 10, keysOf: (s) => [s], retryAlone: () => false });
    const both = ['x', 'y'].map((s) => noRetry.submit(s).catch((e: unknown) => e));
    await strict.release();
    expect(await Promise.all(both)).toStrictEqual([lost, lost]);
    expect(strict.batches).toStrictEqual([['x', 'y']]);
  });
});
