import { afterEach, describe, expect, it } from 'vitest';
import type { EngineEvent } from '../../src/core/events.js';
import type { SessionStore } from '../../src/core/store.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { queuedTurn } from '../../testkit/turns.js';
import { answer } from '../agents/behaviours.js';
import { startHarness, untilEvent } from '../helpers/engine-harness.js';

/**
 * What a driver does not read back. On a store only this process writes, a new thread's first
 * turn starts from what the write that stored it returned, and a step whose own writes settled
 * every open turn and left no task goes idle without reading the session and its turns again:
 * anything that arrives meanwhile comes through the engine, which drives the session again. On a
 * store shared by replicas another process may have added a turn while the driver held the
 * lease: the lease's release says so, and the engine drives the session again from fresh reads.
 */

/** The store, counting the calls the engine makes to it; `shared` plays a store of several replicas. */
function counting(store: SessionStore, calls: Map<string, number>, shared = false): SessionStore {
  return new Proxy(store, {
    get(target, prop) {
      if (prop === 'sharedByReplicas') return shared;
      const value: unknown = Reflect.get(target, prop, target);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        calls.set(String(prop), (calls.get(String(prop)) ?? 0) + 1);
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

const settledEvent = (turnId: string) => (e: EngineEvent) => e.type === 'turn.settled' && e.turnId === turnId;

describe('reads a driver does without', () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  it("[R-7] a new thread's turn is sent and settled without a read of its session or turns, on a store of one process", async () => {
    const calls = new Map<string, number>();
    const h = await startHarness({ version: '1.0', store: counting(new SqliteStore(':memory:'), calls) });
    cleanups.push(() => h.close());
    calls.clear();

    const first = await h.say('t1', '1.0', 'hello');
    expect(await untilEvent(h, settledEvent(first.turnId))).toMatchObject({ outcome: 'completed' });
    await h.engine.idle();
    expect(calls.get('getSession')).toBeUndefined();
    expect(calls.get('openTurns')).toBeUndefined();
    expect(calls.get('getTurn')).toBeUndefined();
    expect((await h.store.getTurn(first.turnId))?.state).toBe('settled');
    expect((await h.store.openTurns(first.sessionId)).length).toBe(0);
  });

  it('[R-7] a message that arrives while a turn runs is sent after it by the same engine, on a store of one process', async () => {
    const h = await startHarness({ version: '1.0', timings: { scanIntervalMs: 60_000 } });
    cleanups.push(() => h.close());
    h.agent.enqueue(answer({ chunks: ['one ', 'two ', 'three'], chunkDelayMs: 80 }));

    const first = await h.say('t1', '1.0', 'hello');
    await untilEvent(h, (e) => e.type === 'turn.accepted' && e.turnId === first.turnId);
    const second = await h.say('t1', '2.0', 'and then');
    // The scan is a minute away: only the kick of the second message can get it sent.
    expect(await untilEvent(h, settledEvent(second.turnId), 5_000)).toMatchObject({ outcome: 'completed' });
    const settled = h.events.filter((e) => e.type === 'turn.settled').map((e) => e.turnId);
    expect(settled).toEqual([first.turnId, second.turnId]);
  });

  it('[R-7] a turn another replica stored while this driver ran is sent by it without waiting for a scan, on a shared store', async () => {
    const calls = new Map<string, number>();
    const real = new SqliteStore(':memory:');
    const h = await startHarness({
      version: '1.0',
      store: counting(real, calls, true),
      timings: { scanIntervalMs: 60_000 },
    });
    cleanups.push(() => h.close());
    h.agent.enqueue(answer({ chunks: ['one ', 'two ', 'three'], chunkDelayMs: 80 }));

    const first = await h.say('t1', '1.0', 'hello');
    await untilEvent(h, (e) => e.type === 'turn.accepted' && e.turnId === first.turnId);
    // Another replica takes the thread's next message: it writes the store, and this engine is
    // not told. The driver holding the session's lease finds it when it looks again.
    const { turn } = await real.addTurn(
      queuedTurn({
        id: 'ak-other-replica',
        sessionId: first.sessionId,
        chatMessageId: '2.0',
        text: 'and then',
        now: Date.now(),
      }),
    );
    expect(await untilEvent(h, settledEvent(turn.id), 5_000)).toMatchObject({ outcome: 'completed' });
    expect(calls.get('getSession')).toBeGreaterThan(0);
  });

  it('[R-7] on a shared store, a step that settles every open turn goes idle without reading them again', async () => {
    const calls = new Map<string, number>();
    const released: boolean[] = [];
    const real = new SqliteStore(':memory:');
    const store = counting(real, calls, true);
    const h = await startHarness({
      version: '1.0',
      store: new Proxy(store, {
        get(target, prop) {
          if (prop !== 'releaseLease') return Reflect.get(target, prop, target);
          return async (...args: Parameters<SessionStore['releaseLease']>) => {
            const waiting = await target.releaseLease(...args);
            released.push(waiting);
            return waiting;
          };
        },
      }),
      timings: { scanIntervalMs: 60_000 },
    });
    cleanups.push(() => h.close());
    calls.clear();

    const first = await h.say('t1', '1.0', 'hello');
    expect(await untilEvent(h, settledEvent(first.turnId))).toMatchObject({ outcome: 'completed' });
    await h.engine.idle();
    // One read of each at the start (another replica may have driven the thread between its
    // store and our lease), none after: the release found nothing newer than what was read.
    expect(calls.get('getSession')).toBe(1);
    expect(calls.get('openTurns')).toBe(1);
    expect(released).toStrictEqual([false]);
  });
});
