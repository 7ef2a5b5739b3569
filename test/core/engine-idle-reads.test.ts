import { afterEach, describe, expect, it } from 'vitest';
import type { EngineEvent } from '../../src/core/events.js';
import type { SessionStore } from '../../src/core/store.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { queuedTurn } from '../../testkit/turns.js';
import { sentMessages, startHarness, untilEvent } from '../helpers/engine-harness.js';
import { quietWindow } from '../helpers/quiet-window.js';
import { answer } from '../peers/contract-agent/behaviours.js';

/**
 * What a driver does not read back. On a store only this process writes, a new thread's first
 * turn starts from what the write that stored it returned (on a shared store too, when the
 * lease take is the session's first: nobody else can have driven it), and a step whose own writes settled
 * every open turn and left no task goes idle without reading the session and its turns again:
 * anything that arrives meanwhile comes through the engine, which drives the session again. On a
 * store shared by replicas another process may have added a turn while the driver held the
 * lease: the lease's release says so, and the engine drives the session again from fresh reads.
 */

/**
 * The store, counting the calls the engine makes to it; `shared` plays a store of several
 * replicas, and `released` collects what each lease release answered.
 */
function counting(
  store: SessionStore,
  calls: Map<string, number>,
  shared = false,
  released: boolean[] = [],
): SessionStore {
  return new Proxy(store, {
    get(target, prop) {
      if (prop === 'sharedByReplicas') return shared;
      const value: unknown = Reflect.get(target, prop, target);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        calls.set(String(prop), (calls.get(String(prop)) ?? 0) + 1);
        const result = (value as (...a: unknown[]) => unknown).apply(target, args);
        if (prop === 'releaseLease')
          void (result as Promise<boolean>).then(
            (w) => released.push(w),
            () => {},
          );
        return result;
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

  /** An engine on a store played as shared by replicas, its calls counted; the scan a minute away. */
  async function sharedRig(store: SessionStore = new SqliteStore(':memory:')) {
    const calls = new Map<string, number>();
    const released: boolean[] = [];
    const h = await startHarness({
      version: '1.0',
      store: counting(store, calls, true, released),
      timings: { scanIntervalMs: 60_000 },
    });
    cleanups.push(() => h.close());
    return { h, calls, released };
  }

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
    const { h, calls, released } = await sharedRig();
    calls.clear();

    const first = await h.say('t1', '1.0', 'hello');
    expect(await untilEvent(h, settledEvent(first.turnId))).toMatchObject({ outcome: 'completed' });
    await h.engine.idle();
    // None at the start (the thread's first lease take: nobody drove it since it was opened)
    // and none after: the release found nothing newer than the turn the driver started from.
    expect(calls.get('acquireLease')).toBe(1);
    expect(calls.get('getSession')).toBeUndefined();
    expect(calls.get('openTurns')).toBeUndefined();
    expect(released).toStrictEqual([false]);
  });

  it('[R-7][R-8] on a shared store, a new thread another replica drove before this one took its lease is read, not sent again', async () => {
    const played: string[] = [];
    const real = new SqliteStore(':memory:');
    // Between this engine storing the thread's first turn and taking its lease, another replica
    // takes the lease, settles the turn (as if it had sent it and heard the answer) and lets go.
    const store = new Proxy(real, {
      get(target, prop) {
        if (prop === 'acquireLease')
          return async (id: string, owner: string, now: number, ttl: number) => {
            if (!played.includes(id)) {
              played.push(id);
              expect(await target.acquireLease(id, 'replica-b', now, ttl)).toBe('first');
              const open = await target.openTurns(id);
              await target.commit({
                turns: open.map((t) => ({ ...t, state: 'settled' as const, outcome: 'completed' })),
                fence: { owner: 'replica-b' },
                now,
              });
              await target.releaseLease(id, 'replica-b', open.at(-1)?.seq ?? 0);
            }
            return target.acquireLease(id, owner, now, ttl);
          };
        const value: unknown = Reflect.get(target, prop, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const { h, calls } = await sharedRig(store);
    const first = await h.say('t1', '1.0', 'hello');
    await h.engine.idle();
    expect(played).toStrictEqual([first.sessionId]);
    // Its take was not the first: the driver read the session and found the turn settled.
    expect(calls.get('getSession')).toBe(1);
    expect(sentMessages(h, 'SendStreamingMessage')).toStrictEqual([]);
    expect((await real.getTurn(first.turnId))?.state).toBe('settled');
  });

  it('[T-6] on a shared store, a message left waiting behind a paused task does not start its session over and over', async () => {
    const { h, calls, released } = await sharedRig();
    // The task waits for an authorisation the broker cannot give; a typed message makes the
    // driver read the task once, and then waits behind it, open.
    h.agent.enqueue(answer({ state: 'auth-required', statusText: 'Sign in first' }));
    const first = await h.say('t1', '1.0', 'restart it');
    await h.engine.idle();
    await h.say('t1', '2.0', 'done, I signed in');
    await quietWindow(
      300,
      'longer than a scan (200 ms): a session started over and over would have started again',
    );
    await h.engine.idle();
    expect((await h.store.openTurns(first.sessionId)).map((t) => t.state)).toStrictEqual(['queued']);
    // That open turn was read: its release finds nothing newer. Passed as unread, every
    // release would start the session again, and every start read the task again.
    expect(released.at(-1)).toBe(false);
    expect(calls.get('acquireLease')).toBeLessThanOrEqual(3);
  });

  it('after a store failure the driver lets the session go until the scan, even with work waiting', async () => {
    const { h, calls } = await sharedRig(
      new Proxy(new SqliteStore(':memory:'), {
        get(target, prop) {
          // The store answers leases (as held before: the driver reads the session) but fails
          // every read of a session.
          if (prop === 'acquireLease')
            return async (...args: Parameters<SessionStore['acquireLease']>) =>
              (await target.acquireLease(...args)) && 'taken';
          if (prop === 'getSession') return () => Promise.reject(new Error('store unreachable'));
          const value: unknown = Reflect.get(target, prop, target);
          return typeof value === 'function' ? value.bind(target) : value;
        },
      }),
    );
    await h.say('t1', '1.0', 'hello');
    await quietWindow(
      300,
      'scans are a minute apart here: a failed run started again at its lease release would have in this',
    );
    await h.engine.idle();
    // One try: the release says the turn waits, but a run that failed is not started over (it
    // would fail again at once, against a store that is down).
    expect(calls.get('getSession')).toBe(1);
    expect(calls.get('acquireLease')).toBe(1);
  });
});
