import { afterEach, describe, expect, it } from 'vitest';
import { StoreError } from '../../src/core/errors.js';
import type { EngineEvent } from '../../src/core/events.js';
import {
  type NewSession,
  type NewTurn,
  type SessionRecord,
  type SessionStore,
  sessionIdOf,
} from '../../src/core/store.js';
import { newSessionRecord } from '../../src/store/rows.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { type Harness, startHarness } from '../helpers/engine-harness.js';

/**
 * A new thread's first message: stored with its session in one write, already marked `sending`
 * (the mark the driver would otherwise write before the send), and sent once. The mark still
 * comes before the send it guards: a process that dies after storing it leaves a turn whose
 * outcome recovery reads as unknown, and sends again with the same messageId.
 */

/** The store, counting the calls the engine makes to it. */
function counting(store: SessionStore, calls: Map<string, number>): SessionStore {
  return new Proxy(store, {
    get(target, prop) {
      const value: unknown = Reflect.get(target, prop, target);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        calls.set(String(prop), (calls.get(String(prop)) ?? 0) + 1);
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

/**
 * The store, except that receive() never gets past the write that stores a message: a process
 * that dies right after the write is durable, before it did anything else (its driver, which
 * would start from what the write returned, never starts). `stored` resolves with that write.
 */
function dyingAfterReceive(store: SessionStore): {
  store: SessionStore;
  stored: Promise<{ turnId: string }>;
  release: () => void;
} {
  let release: () => void = () => undefined;
  const stuck = new Promise<never>((_, reject) => {
    release = () => reject(new Error('the process died here'));
  });
  stuck.catch(() => undefined);
  let written: (value: { turnId: string }) => void = () => undefined;
  const stored = new Promise<{ turnId: string }>((resolve) => {
    written = resolve;
  });
  const wrapped = new Proxy(store, {
    get(target, prop) {
      if (prop === 'openSessionAndAddTurn')
        return async (...args: Parameters<SessionStore['openSessionAndAddTurn']>) => {
          const result = await target.openSessionAndAddTurn(...args);
          written({ turnId: result.turn.id });
          return stuck;
        };
      const value: unknown = Reflect.get(target, prop, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return { store: wrapped, stored, release };
}

/**
 * The store as PostgreSQL's is when another replica opens a new thread between its read and its
 * write: `build` is told the session is new, the turn goes in `queued` after all. And the
 * driver's write of the `sending` mark lands but reports a failure (a connection lost after the
 * commit), so the driver meets the turn again `sending`, and cannot know whether it was sent.
 */
function openedElsewhereThenBlip(store: SessionStore): SessionStore {
  let failed = false;
  return new Proxy(store, {
    get(target, prop) {
      if (prop === 'openSessionAndAddTurn') {
        return async (
          init: NewSession,
          build: (s: SessionRecord, opened: boolean) => NewTurn,
          options?: object,
        ) => {
          const fresh = newSessionRecord(sessionIdOf(init.key), init);
          const turn = build(fresh, true);
          const session = await target.openSession(init);
          const added = await target.addTurn(
            { ...turn, state: 'queued', attempts: 0, firstSentAt: null },
            options,
          );
          return { session, ...added };
        };
      }
      if (prop === 'commit') {
        return async (commit: Parameters<SessionStore['commit']>[0]) => {
          const written = await target.commit(commit);
          if (!failed && commit.turns?.some((t) => t.state === 'sending')) {
            failed = true;
            throw new StoreError('the store blinked after writing');
          }
          return written;
        };
      }
      const value: unknown = Reflect.get(target, prop, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

async function settled(h: Pick<Harness, 'events'>, turnId: string, ms = 10_000): Promise<EngineEvent> {
  const deadline = Date.now() + ms;
  for (;;) {
    const event = h.events.find((e) => e.type === 'turn.settled' && e.turnId === turnId);
    if (event !== undefined) return event;
    if (Date.now() > deadline) throw new Error(`turn ${turnId} did not settle`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe("a new thread's first message", () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  it('[R-7] is stored marked sending in the write that opens its session, and sent once, without a lookup', async () => {
    const calls = new Map<string, number>();
    const real = new SqliteStore(':memory:');
    const h = await startHarness({ version: '1.0', store: counting(real, calls) });
    cleanups.push(() => h.close());
    calls.clear();

    const first = await h.say('t1', '1.0', 'hello');
    // Before the engine answered receive(), the turn was on disk as about to be sent.
    const stored = await real.getTurn(first.turnId);
    expect(stored).toMatchObject({ state: 'sending', attempts: 1 });
    expect(stored?.firstSentAt).not.toBeNull();
    expect(calls.get('openSessionAndAddTurn')).toBe(1);
    expect(calls.get('openSession')).toBeUndefined();
    expect(calls.get('addTurn')).toBeUndefined();

    expect(await settled(h, first.turnId)).toMatchObject({ outcome: 'completed' });
    const mine = h.events.filter((e) => 'turnId' in e && e.turnId === first.turnId).map((e) => e.type);
    expect(mine).not.toContain('turn.unknown');
    expect(mine).not.toContain('turn.resent');
    expect(h.events.filter((e) => e.type === 'turn.sending' && e.turnId === first.turnId)).toMatchObject([
      { attempt: 1 },
    ]);
    expect(h.agent.runs.get(first.turnId)).toBe(1);
    // Stored with its mark, accepted, settled: no write of the mark of its own.
    expect(calls.get('commit')).toBe(2);
    expect((await real.getTurn(first.turnId))?.attempts).toBe(1);

    // A thread's later message is queued behind whatever the thread has, as before.
    const second = await h.say('t1', '2.0', 'and then');
    expect((await real.getTurn(second.turnId))?.state).toBe('queued');
    expect(await settled(h, second.turnId)).toMatchObject({ outcome: 'completed' });
    expect(h.agent.runs.get(second.turnId)).toBe(1);
  });

  it('[R-8] stored queued because another replica opened its thread first, its mark then left unknown, is looked up, not sent blind', async () => {
    const real = new SqliteStore(':memory:');
    const h = await startHarness({ version: '1.0', store: openedElsewhereThenBlip(real) });
    cleanups.push(() => h.close());
    const first = await h.say('t1', '1.0', 'hello');
    expect(await real.getTurn(first.turnId)).toMatchObject({ state: 'queued', attempts: 0 });
    expect(await settled(h, first.turnId)).toMatchObject({ outcome: 'completed' });
    const mine = h.events.filter((e) => 'turnId' in e && e.turnId === first.turnId).map((e) => e.type);
    // Marked `sending` by the driver, sent, then met again `sending`: its outcome is unknown.
    expect(mine).toContain('turn.unknown');
    expect(h.agent.runs.get(first.turnId)).toBe(1);
  });

  it('[R-8] stored by a process that died before sending it, is sent by the next one with the same messageId, once', async () => {
    const file = new SqliteStore(':memory:');
    const dying = dyingAfterReceive(file);
    const a = await startHarness({ version: '1.0', store: dying.store });
    const receiving = a.say('t1', '1.0', 'hello').catch((error: unknown) => error);
    const first = await dying.stored;
    expect((await file.getTurn(first.turnId))?.state).toBe('sending');
    // The "process" dies: it never got past the write, nothing was sent.
    dying.release();
    expect(await receiving).toBeInstanceOf(Error);
    await a.engine.stop();
    expect(a.agent.rpc('SendMessage').length + a.agent.rpc('SendStreamingMessage').length).toBe(0);

    // The next process, on the same store (and the same agent), knows nothing of the turn
    // but what the store says: `sending`, so its outcome is unknown.
    const b = await startHarness({ version: '1.0', store: file });
    cleanups.push(async () => {
      await b.close();
      await a.agent.close();
    });
    // The agent b talks to is its own contract agent: the turn reaches it once.
    expect(await settled(b, first.turnId)).toMatchObject({ outcome: 'completed' });
    const mine = b.events.filter((e) => 'turnId' in e && e.turnId === first.turnId).map((e) => e.type);
    expect(mine).toContain('turn.unknown');
    expect(mine).toContain('turn.resent');
    expect(b.agent.runs.get(first.turnId)).toBe(1);
    expect((await file.getTurn(first.turnId))?.attempts).toBe(2);
  });
});
