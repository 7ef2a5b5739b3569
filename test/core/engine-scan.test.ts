import { describe, expect, it } from 'vitest';
import { type Clock, systemClock } from '../../src/core/clock.js';
import { SessionEngine } from '../../src/core/session/engine.js';
import type { SessionStore } from '../../src/core/store.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { queuedTurn } from '../../testkit/turns.js';
import { MapRegistry, startHarness } from '../helpers/engine-harness.js';
import { FakeSurface } from '../helpers/fake-surface.js';
import { answer } from '../peers/contract-agent/contract-agent.js';

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

describe('SessionEngine scan, sessions at rest', () => {
  /** A store that counts the reads and lease takes of each session (a replica's cost per scan). */
  function counting(shared: boolean) {
    const sqlite = new SqliteStore(':memory:');
    const reads = new Map<string, number>();
    const count = (id: string) => reads.set(id, (reads.get(id) ?? 0) + 1);
    const store = new Proxy(sqlite, {
      get(target, prop, receiver) {
        if (prop === 'sharedByReplicas') return shared;
        if (prop === 'getSession' || prop === 'openTurns' || prop === 'acquireLease')
          return (id: string, ...rest: unknown[]) => {
            count(id);
            return (target[prop] as (...a: unknown[]) => unknown).call(target, id, ...rest);
          };
        const value = Reflect.get(target, prop, receiver);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    }) as SessionStore;
    return { store, reads, total: () => [...reads.values()].reduce((a, b) => a + b, 0) };
  }

  for (const shared of [false, true]) {
    it(`leaves a question waiting for its person alone in later scans until something is written to it (${shared ? 'shared store, leases' : 'one process'})`, async () => {
      const c = counting(shared);
      const h = await startHarness({
        version: '1.0',
        store: c.store,
        timings: { scanIntervalMs: 3_600_000 },
        settings: { questionTimeoutMs: 60_000 },
        agent: { defaultAnswer: { state: 'input-required', statusText: 'which environment?' } },
      });
      try {
        const turns = [];
        for (let i = 0; i < 20; i++) turns.push(await h.say(`q${i}`, '1', `deploy ${i}`));
        await h.surface.waitFor(
          () => h.events.filter((e) => e.type === 'question.asked').length === 20,
          8_000,
          'twenty questions',
        );
        await h.engine.idle();
        // The first scan looks at each once (this engine has not seen them at rest), then none.
        await h.engine.scan();
        await h.engine.idle();
        c.reads.clear();
        await h.engine.scan();
        await h.engine.scan();
        await h.engine.idle();
        expect(c.total()).toBe(0);

        // Another replica stores a reply in one thread and dies before driving it: the turn
        // changes the session's mark, so the next scan drives it, and the reply is sent.
        const [first, second] = turns as [(typeof turns)[0], (typeof turns)[0]];
        const answered = h.agent.rpc('SendStreamingMessage').length;
        h.agent.enqueue(answer({ chunks: ['staging it is'] }));
        await c.store.addTurn(
          queuedTurn({
            id: 'reply-elsewhere',
            sessionId: first.sessionId,
            chatMessageId: 'reply.1',
            text: 'staging',
            now: Date.now(),
          }),
        );
        await h.engine.scan();
        await h.surface.waitFor(
          () => h.agent.rpc('SendStreamingMessage').length === answered + 1,
          8_000,
          'the reply sent',
        );
        // A session write elsewhere (its question closed by a stop another replica took) moves
        // the version: driven again too.
        const paused = await c.store.getSession(second.sessionId);
        if (paused?.question == null) throw new Error('the second thread is not paused');
        await c.store.commit({
          session: { ...paused, question: { ...paused.question, expiresAt: Date.now() } },
          now: Date.now(),
        });
        c.reads.clear();
        await h.engine.scan();
        await h.surface.waitFor(
          () => h.events.some((e) => e.type === 'question.timeout' && e.sessionId === second.sessionId),
          8_000,
          'the second question closed',
        );
        await h.engine.idle();
        expect(c.reads.get(second.sessionId)).toBeGreaterThan(0);
        // The other eighteen were not read.
        expect([...c.reads.keys()].filter((id) => id !== first.sessionId && id !== second.sessionId)).toEqual(
          [],
        );
      } finally {
        await h.close();
      }
    });
  }

  it('a question at rest still times out on its own wake-up', async () => {
    const h = await startHarness({
      version: '1.0',
      timings: { scanIntervalMs: 100 },
      settings: { questionTimeoutMs: 1_000 },
      agent: { defaultAnswer: { state: 'input-required', statusText: 'which environment?' } },
    });
    try {
      const turn = await h.say('q', '1', 'deploy');
      await h.surface.waitFor(() => h.events.some((e) => e.type === 'question.asked'), 8_000, 'the question');
      await h.surface.waitFor(
        () => h.events.some((e) => e.type === 'question.timeout' && e.sessionId === turn.sessionId),
        8_000,
        'the question to time out',
      );
    } finally {
      await h.close();
    }
  });
});
