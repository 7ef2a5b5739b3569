import { describe, expect, it } from 'vitest';
import { type Clock, systemClock } from '../../src/core/ports.js';
import { SessionEngine } from '../../src/core/session/engine.js';
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
});
