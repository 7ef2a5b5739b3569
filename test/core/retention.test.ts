import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type Clock, systemClock } from '../../src/core/clock.js';
import { ACTOR_METADATA_KEY } from '../../src/core/compose.js';
import type { Erased } from '../../src/core/retention-store.js';
import { type RetentionObserver, RetentionSweeper } from '../../src/core/retention-sweeper.js';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { ThreadBook } from '../../src/surfaces/webchat/threads.js';
import { startPostgres, type TestPostgres } from '../../testkit/postgres.js';
import { queuedTurn } from '../../testkit/turns.js';
import { type Harness, startHarness } from '../helpers/engine-harness.js';

/**
 * Retention end to end on the engine: the sweep forgets an idle thread (in batches, counted),
 * and a message in that thread starts a new conversation, told so first; a person erased while
 * their thread is answering keeps the answer whole, and their words go once it ends (both stores).
 */

const DAY = 24 * 60 * 60 * 1000;

/** A clock `days` ahead of now: everything written now is that old to the sweep. */
const ahead = (days: number): Clock => ({ ...systemClock, now: () => Date.now() + days * DAY });

function recorder() {
  const swept: Record<string, number> = {};
  const measured: { threads: number; bytes: number }[] = [];
  const observer: RetentionObserver = {
    swept: (kind, rows) => {
      swept[kind] = (swept[kind] ?? 0) + rows;
    },
    measured: (size) => measured.push(size),
    failed: (error) => {
      throw error;
    },
  };
  return { swept, measured, observer };
}

describe('retention', () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  async function settled(turnId: string): Promise<void> {
    const harness = h as Harness;
    await harness.surface.waitFor(
      () => harness.events.some((e) => e.type === 'turn.settled' && e.turnId === turnId),
      8_000,
      `turn ${turnId} to settle`,
    );
  }

  it('forgets a thread idle past the setting; a message there starts a new conversation, told so first', async () => {
    const store = new SqliteStore(':memory:');
    h = await startHarness({
      version: '1.0',
      store,
      forgotten: store.retention(),
      agent: { defaultAnswer: { chunks: ['hello'] } },
    });
    const first = await h.say('t1', '1', 'first words');
    await settled(first.turnId);
    const { swept, measured, observer } = recorder();
    const sweeper = new RetentionSweeper(store.retention(), { days: 30 }, ahead(31), observer);

    const totals = await sweeper.sweep();
    expect(totals).toMatchObject({ threads: 1, turns: 1 });
    expect(swept).toMatchObject({ threads: 1, turns: 1 });
    expect(measured.at(-1)?.threads).toBe(0);
    expect(await h.engine.findSession(first.sessionId)).toBeUndefined();
    expect(await h.engine.forgottenAt(first.sessionId)).toBeDefined();

    const again = await h.say('t1', '2', 'are you still there?');
    expect(again.sessionId).toBe(first.sessionId);
    await settled(again.turnId);
    expect(h.surface.notices(first.sessionId)).toEqual(['thread-forgotten']);
    expect(await h.engine.forgottenAt(first.sessionId)).toBeUndefined();
    // A new conversation: the agent got no context of the forgotten one.
    const contexts = new Set([...h.agent.tasks.values()].map((t) => t.contextId));
    expect(contexts.size).toBe(2);
    expect(h.events.filter((e) => e.type === 'notice.posted').map((e) => e.kind)).toEqual([
      'thread-forgotten',
    ]);
  });

  it("clears a settled turn's words an hour on, and the thread carries on in the same conversation", async () => {
    const store = new SqliteStore(':memory:');
    h = await startHarness({
      version: '1.0',
      store,
      forgotten: store.retention(),
      agent: { defaultAnswer: { chunks: ['noted'] } },
    });
    const first = await h.say('t1', '1', 'my words about the outage');
    await settled(first.turnId);
    const { swept, observer } = recorder();
    // Two hours on, thirty days kept: the thread stays, its settled turn's words go.
    const totals = await new RetentionSweeper(
      store.retention(),
      { days: 30 },
      ahead(2 / 24),
      observer,
    ).sweep();
    expect(totals).toMatchObject({ threads: 0, words: 1 });
    expect(swept.words).toBe(1);
    expect((await store.getTurn(first.turnId))?.text).toBe('');
    const next = await h.say('t1', '2', 'and now?');
    await settled(next.turnId);
    const contexts = new Set([...h.agent.tasks.values()].map((t) => t.contextId));
    expect(contexts.size).toBe(1);
    // The words of the turn just sent are kept: it settled within the hour.
    expect((await store.getTurn(next.turnId))?.text).toContain('and now?');
    expect(h.surface.notices(first.sessionId)).toEqual([]);
  });

  it('keeps a thread idle for less than the setting, and a setting of 0 keeps every thread', async () => {
    const store = new SqliteStore(':memory:');
    h = await startHarness({ version: '1.0', store, forgotten: store.retention() });
    const turn = await h.say('t1', '1', 'words');
    await settled(turn.turnId);
    const { measured, observer } = recorder();
    expect(
      (await new RetentionSweeper(store.retention(), { days: 30 }, ahead(29), observer).sweep()).threads,
    ).toBe(0);
    expect(
      (await new RetentionSweeper(store.retention(), { days: 0 }, ahead(3650), observer).sweep()).threads,
    ).toBe(0);
    expect(await h.engine.findSession(turn.sessionId)).toBeDefined();
    // Measured all the same.
    expect(measured.map((m) => m.threads)).toEqual([1, 1]);
  });

  it('sweeps in batches until nothing idle is left', async () => {
    const store = new SqliteStore(':memory:');
    h = await startHarness({ version: '1.0', store, forgotten: store.retention() });
    for (let i = 1; i <= 5; i++) await settled((await h.say(`t${i}`, '1', `thread ${i}`)).turnId);
    const { swept, observer } = recorder();
    const sweeper = new RetentionSweeper(store.retention(), { days: 30, batch: 2 }, ahead(31), observer);
    const cuts: number[] = [];
    sweeper.alongside((before) => cuts.push(before));
    const totals = await sweeper.sweep();
    // What a surface holds in memory goes with the same cut: now, a day ahead (31 − 30 days).
    expect(cuts).toHaveLength(1);
    expect(Math.abs((cuts[0] ?? 0) - (Date.now() + DAY))).toBeLessThan(60_000);
    expect(totals.threads).toBe(5);
    expect(swept.threads).toBe(5);
    expect((await store.retention().size()).threads).toBe(0);
  });

  it('a sweep first finishes the erasures kept while an answer ran, whatever the retention setting', async () => {
    const store = new SqliteStore(':memory:');
    await store.migrate();
    try {
      const now = Date.now();
      const session = await store.openSession({
        key: { surface: 'test', workspaceId: 'T1', channelId: 'C1', threadId: 'kept' },
        binding: 'default/demo',
        now,
      });
      const added = await store.addTurn(
        queuedTurn({
          id: 'kept-1',
          sessionId: session.id,
          chatMessageId: 'kept.1',
          text: 'my words',
          label: '[Test: Ada (U0ADA)]',
          metadata: { [ACTOR_METADATA_KEY]: { id: 'U0ADA', name: 'Ada' } },
          now,
        }),
      );
      expect((await store.retention().erasePerson({ userId: 'U0ADA' }, now)).waiting).toBe(1);
      await store.commit({
        turns: [{ ...added.turn, state: 'settled', outcome: 'completed' }],
        now: now + 1,
      });
      const { observer } = recorder();
      // Days 0 keeps every thread; the erasure is a person's request, and goes all the same.
      await new RetentionSweeper(store.retention(), { days: 0 }, systemClock, observer).sweep();
      expect(await store.getSession(session.id)).toBeUndefined();
      expect(await store.retention().pendingErasures()).toEqual([]);
    } finally {
      await store.close();
    }
  });

  it("the web chat's page drops the threads idle since the cut, and keeps the others", () => {
    let now = Date.parse('2026-01-01T00:00:00Z');
    const book = new ThreadBook(() => now);
    const old = book.create('default/demo');
    now += 40 * DAY;
    const recent = book.create('default/demo');
    expect(book.forgetIdle(now - 30 * DAY)).toBe(1);
    expect(book.get(old.id)).toBeUndefined();
    expect(book.get(recent.id)).toBe(recent);
  });
});

describe.each(['sqlite', 'postgres'] as const)('erasure while answering, on %s', (kind) => {
  let server: TestPostgres | undefined;
  let h: Harness | undefined;
  let sweeper: RetentionSweeper | undefined;
  beforeAll(async () => {
    if (kind === 'postgres') server = await startPostgres();
  }, 60_000);
  afterEach(async () => {
    await sweeper?.stop();
    await h?.close();
    h = undefined;
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('a forget while her thread is answering: the answer finishes whole, then her words go', async () => {
    const store =
      server === undefined
        ? new SqliteStore(':memory:')
        : new PostgresStore({ connectionString: server.connectionString, schema: `erase_${process.pid}` });
    h = await startHarness({
      version: '1.0',
      store,
      forgotten: store.retention(),
      agent: { defaultAnswer: { chunks: ['the first half, ', 'the second half'], chunkDelayMs: 1_000 } },
    });
    const harness = h;
    const turn = await harness.say('t1', '1', 'my private question');
    const answer = () => harness.surface.of(turn.sessionId, 'answer');
    await harness.surface.waitFor(
      () => answer().some((m) => m.text.includes('the first half')),
      8_000,
      'the first half of the answer',
    );

    const erased = await store.retention().erasePerson({ userId: 'U123' }, Date.now());
    expect(erased).toMatchObject({ threads: 0, turns: 0, waiting: 1 });
    // The erasure is kept, and run again every 100 ms from now on, as a broker's sweeper does.
    const runs: Erased[] = [];
    const { observer } = recorder();
    sweeper = new RetentionSweeper(
      store.retention(),
      { days: 0, firstAfterMs: 60_000, erasuresEveryMs: 100 },
      systemClock,
      { ...observer, erased: (e) => runs.push(e) },
    );
    sweeper.start();
    await harness.surface.waitFor(() => runs.length >= 2, 5_000, 'two runs of the kept erasure');
    // Still answering: nothing of hers has gone yet.
    expect(runs.every((r) => r.waiting === 1 && r.threads === 0)).toBe(true);

    await harness.surface.waitFor(
      () => harness.events.some((e) => e.type === 'turn.settled' && e.turnId === turn.turnId),
      8_000,
      'the answer to end',
    );
    expect(answer()).toHaveLength(1);
    expect(answer()[0]).toMatchObject({ text: 'the first half, the second half', final: true });
    expect(harness.surface.notices(turn.sessionId)).toEqual([]);

    await harness.surface.waitFor(() => runs.some((r) => r.threads === 1), 5_000, 'her thread to go');
    expect(runs.at(-1)).toMatchObject({ threads: 1, turns: 1, waiting: 0 });
    expect(await harness.engine.findSession(turn.sessionId)).toBeUndefined();
    expect(await store.getTurn(turn.turnId)).toBeUndefined();
    expect(await store.retention().pendingErasures()).toEqual([]);
    // Nothing in flight was cut: the agent was asked once.
    expect(harness.agent.rpc('SendStreamingMessage')).toHaveLength(1);
  });
});
