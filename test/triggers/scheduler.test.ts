import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { TriggerStore } from '../../src/core/trigger-store.js';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { compileSchedule } from '../../src/triggers/index.js';
import { startPostgres, type TestPostgres } from '../../testkit/postgres.js';
import { ManualClock } from '../surfaces/slack/manual-clock.js';
import { startTriggerHarness, type TriggerHarness, triggerConfig, until } from './harness.js';

/**
 * Schedule triggers under an injected clock: one run per tick, none missed across a restart,
 * none doubled across two replicas (two stores on one PostgreSQL, as two pods would be).
 */

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const START = Date.parse('2026-11-30T08:59:00Z');

const hourly = triggerConfig({
  name: 'hourly',
  kind: 'schedule',
  instruction: 'Summarise the last hour.',
  schedule: { cron: '0 * * * *', timeZone: 'UTC' },
});

function roots(...harnesses: TriggerHarness[]): string[] {
  return harnesses
    .flatMap((h) => h.engine.turns)
    .map((t) => t.fields.scheduledFor ?? '')
    .sort();
}

describe('schedule triggers', () => {
  const open: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const close of open.splice(0).reverse()) await close();
  });

  async function sqlite(): Promise<SqliteStore> {
    const store = new SqliteStore(':memory:');
    await store.migrate();
    open.push(() => store.close());
    return store;
  }

  async function harness(
    store: TriggerStore,
    clock: ManualClock,
    owner = 'replica-a',
  ): Promise<TriggerHarness> {
    const h = await startTriggerHarness(store, { configs: [hourly], clock, owner });
    open.push(() => h.close());
    // It has seen the schedule (anchored it, or run what was missed) before the test moves time.
    await h.triggers.scheduler.round();
    return h;
  }

  it('reads five-field expressions in IANA time zones, and refuses others', () => {
    const weekdays = compileSchedule({ cron: '0 9 * * 1-5', timeZone: 'Europe/Berlin' });
    // Friday 28 March 2025, then Monday 31 March: 09:00 in Berlin is 08:00 UTC before the change to
    // summer time, 07:00 UTC after it.
    expect(weekdays.nextRun(new Date('2025-03-28T07:59:00Z'))?.toISOString()).toBe(
      '2025-03-28T08:00:00.000Z',
    );
    expect(weekdays.nextRun(new Date('2025-03-28T08:00:00Z'))?.toISOString()).toBe(
      '2025-03-31T07:00:00.000Z',
    );
    expect(() => compileSchedule({ cron: '61 * * * *', timeZone: 'UTC' })).toThrow(RangeError);
    expect(() => compileSchedule({ cron: '0 0 9 * * *', timeZone: 'UTC' })).toThrow(TypeError);
    expect(() => compileSchedule({ cron: '0 9 * * *', timeZone: 'Mars/Olympus' })).toThrow(TypeError);
  });

  it('runs once per tick: a new thread and a turn with the run as data', async () => {
    const clock = new ManualClock(START);
    const h = await harness((await sqlite()).triggers(), clock);
    expect(h.engine.turns).toHaveLength(0);
    await clock.advance(2 * MINUTE, 2 * MINUTE);
    await until('the 09:00 run', () => h.engine.turns.length === 1);
    await clock.advance(30 * MINUTE, 30 * MINUTE);
    // A round runs whatever is due: 09:30 is no tick.
    await h.triggers.scheduler.round();
    expect(h.engine.turns).toHaveLength(1);
    await clock.advance(30 * MINUTE, 30 * MINUTE);
    await until('the 10:00 run', () => h.engine.turns.length === 2);
    expect(roots(h)).toStrictEqual(['2026-11-30T09:00:00.000Z', '2026-11-30T10:00:00.000Z']);
    expect(h.chat.roots().map((r) => r.message.title)).toStrictEqual([
      'Scheduled: hourly',
      'Scheduled: hourly',
    ]);
    expect(new Set(h.chat.roots().map((r) => r.key.threadId)).size).toBe(2);
    expect(h.engine.turns[0]).toMatchObject({
      instruction: 'Summarise the last hour.',
      fields: { source: 'schedule', trigger: 'hourly', schedule: '0 * * * *', timeZone: 'UTC' },
    });
    expect(h.observer.get('delivery team-a/support schedule ran')).toBe(2);
  });

  it('runs the ticks missed while no replica ran once one starts again, and only those', async () => {
    const clock = new ManualClock(START);
    const store = (await sqlite()).triggers();
    const before = await harness(store, clock);
    await clock.advance(2 * MINUTE, 2 * MINUTE);
    await until('the 09:00 run', () => before.engine.turns.length === 1);
    await before.close();
    // Down from 09:01 to 11:30: the 10:00 and 11:00 runs are missed.
    await clock.advance(2 * HOUR + 29 * MINUTE, HOUR);
    const after = await harness(store, clock);
    await until('the missed runs', () => after.engine.turns.length === 2);
    await after.triggers.scheduler.round();
    expect(roots(before, after)).toStrictEqual([
      '2026-11-30T09:00:00.000Z',
      '2026-11-30T10:00:00.000Z',
      '2026-11-30T11:00:00.000Z',
    ]);
  });

  it('skips (and counts) missed ticks older than the catch-up window, and does not count them again', async () => {
    const clock = new ManualClock(START);
    const store = (await sqlite()).triggers();
    const first = await harness(store, clock);
    await first.close();
    await clock.advance(30 * HOUR, HOUR);
    const h = await harness(store, clock);
    // 30 ticks were missed; those of the last 24 hours are caught up, at most 10, the newest.
    await until('the runs caught up', () => h.engine.turns.length === 10);
    await h.triggers.scheduler.round();
    expect(h.engine.turns).toHaveLength(10);
    expect(roots(h)[9]).toBe('2026-12-01T14:00:00.000Z');
    expect(h.observer.get('delivery team-a/support schedule skipped')).toBe(20);
  });

  it('starts a new or changed schedule from the moment it is seen, running none of the ticks before', async () => {
    const clock = new ManualClock(START + 3 * HOUR);
    const h = await harness((await sqlite()).triggers(), clock);
    h.directory.set(hourly.binding, [{ ...hourly, schedule: { cron: '30 * * * *', timeZone: 'UTC' } }]);
    // It has seen the changed schedule (and anchored it) before the test moves time.
    await h.triggers.scheduler.round();
    // 11:59 → 12:32: the old schedule's 12:00 is not run, the new one's 12:30 is.
    await clock.advance(33 * MINUTE, 33 * MINUTE);
    await until('the :30 run', () => h.engine.turns.length === 1);
    await h.triggers.scheduler.round();
    expect(roots(h)).toStrictEqual(['2026-11-30T12:30:00.000Z']);
  });

  describe('two replicas on one PostgreSQL', () => {
    let server: TestPostgres | undefined;
    let schemas = 0;
    beforeAll(async () => {
      server = await startPostgres();
    }, 60_000);
    afterAll(async () => {
      await server?.stop();
    });

    it('runs each tick on exactly one of them', async () => {
      const schema = `sched_${process.pid}_${++schemas}`;
      const replicas = [0, 1].map(
        () => new PostgresStore({ connectionString: server?.connectionString ?? '', schema }),
      );
      for (const r of replicas) open.push(() => r.close());
      await replicas[0]?.migrate();
      const clock = new ManualClock(START);
      const [a, b] = [
        await harness(replicas[0]?.triggers() as TriggerStore, clock, 'replica-a'),
        await harness(replicas[1]?.triggers() as TriggerStore, clock, 'replica-b'),
      ];
      if (a === undefined || b === undefined) throw new Error('no replicas');
      for (let tick = 1; tick <= 4; tick++) {
        await clock.advance(HOUR, HOUR);
        await until(`run ${tick}`, () => a.engine.turns.length + b.engine.turns.length === tick);
      }
      await Promise.all([a.triggers.scheduler.round(), b.triggers.scheduler.round()]);
      const all = roots(a, b);
      expect(all).toStrictEqual([
        '2026-11-30T09:00:00.000Z',
        '2026-11-30T10:00:00.000Z',
        '2026-11-30T11:00:00.000Z',
        '2026-11-30T12:00:00.000Z',
      ]);
      expect(a.chat.roots().length + b.chat.roots().length).toBe(4);
    }, 30_000);
  });
});
