import { describe, expect, it } from 'vitest';
import { type Clock, systemClock } from '../../src/core/clock.js';
import { SessionEngine } from '../../src/core/session/engine.js';
import type { SessionStore } from '../../src/core/store.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { queuedTurn } from '../../testkit/turns.js';
import { MapRegistry } from '../helpers/engine-harness.js';
import { FakeSurface } from '../helpers/fake-surface.js';

describe('SessionEngine scan', () => {
  it('starts the sessions it finds in slices of 500, pausing between slices (no burst of 1,200 first calls)', async () => {
    const store = new SqliteStore(':memory:');
    await store.migrate();
    const now = Date.now();
    for (let i = 0; i < 1_200; i++) {
      const session = await store.openSession({
        key: { surface: 'test', workspaceId: 'T1', channelId: 'C1', threadId: `t${i}` },
        binding: 'gone/agent',
        now,
      });
      await store.addTurn(
        queuedTurn({ id: `turn-${i}`, sessionId: session.id, chatMessageId: `m${i}`, text: 'hi', now }),
      );
    }
    // How many sessions were being driven whenever the scan paused.
    const drivenAtPause: number[] = [];
    let engine: SessionEngine | undefined;
    const clock: Clock = {
      now: () => systemClock.now(),
      sleep: async (ms, signal) => {
        if (ms === 50 && engine !== undefined) drivenAtPause.push(engine.activeSessions);
        await systemClock.sleep(0, signal);
      },
    };
    engine = new SessionEngine({ store, registry: new MapRegistry(), surface: new FakeSurface(), clock });
    try {
      await engine.start();
      expect(drivenAtPause.length).toBe(2);
      // The first pause comes right after the first 500 were started, none more.
      expect(drivenAtPause[0]).toBe(500);
      await engine.idle();
    } finally {
      await engine.stop();
      await store.close();
    }
  });

  it('asks for no lease of a session under another replica’s live lease, and takes over an expired one', async () => {
    const sqlite = new SqliteStore(':memory:');
    await sqlite.migrate();
    const asked: string[] = [];
    // The SQLite store keeps leases like a shared one; this says it is shared, so the engine
    // drives through leases as on PostgreSQL, and records which leases it asks for.
    const store = new Proxy(sqlite, {
      get(target, prop, receiver) {
        if (prop === 'sharedByReplicas') return true;
        if (prop === 'acquireLease')
          return (id: string, owner: string, now: number, ttl: number) => {
            asked.push(id);
            return target.acquireLease(id, owner, now, ttl);
          };
        const value = Reflect.get(target, prop, receiver);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    }) as SessionStore;
    const now = Date.now();
    const ids: string[] = [];
    for (const thread of ['live', 'expired', 'free']) {
      const session = await store.openSession({
        key: { surface: 'test', workspaceId: 'T1', channelId: 'C1', threadId: thread },
        binding: 'gone/agent',
        now,
      });
      await store.addTurn(
        queuedTurn({ id: `turn-${thread}`, sessionId: session.id, chatMessageId: thread, text: 'hi', now }),
      );
      ids.push(session.id);
    }
    const [live, expired, free] = ids as [string, string, string];
    expect(await store.acquireLease(live, 'replica-b', now, 60_000)).toBe('first');
    expect(await store.acquireLease(expired, 'replica-b', now - 60_000, 1_000)).toBe('first');
    asked.length = 0;
    const engine = new SessionEngine({
      store,
      registry: new MapRegistry(),
      surface: new FakeSurface(),
      owner: 'replica-a',
    });
    try {
      await engine.start();
      await engine.idle();
      expect(asked.sort()).toStrictEqual([expired, free].sort());
      // The live one is left to its driver: its turn is still open.
      expect((await store.openTurns(live)).map((t) => t.id)).toStrictEqual(['turn-live']);
    } finally {
      await engine.stop();
      await store.close();
    }
  });
});
