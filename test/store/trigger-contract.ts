import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { SessionStore } from '../../src/core/store.js';
import {
  type AlertClaim,
  type DeliveryInput,
  type DeliveryLimits,
  TriggerLeaseLostError,
  type TriggerScope,
  type TriggerStore,
} from '../../src/core/trigger-store.js';
import { groupIdOf } from '../../src/store/trigger-queries.js';

/**
 * The behaviour every TriggerStore must have, as one suite both databases run (beside the
 * session store's, ./session-contract.ts, run by the same store tests). `open` returns the
 * stores of an empty database; the suite migrates it.
 */

const T0 = 1_700_000_000_000;
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const SCOPE: TriggerScope = { workspaceId: 'T01', binding: 'team-a/support', trigger: 'alerts' };
const LIMITS: DeliveryLimits = { threadsPerMinute: 3, stormWindowMs: 10 * MINUTE, reopenAfterMs: 24 * HOUR };

const firing = (...ids: string[]): AlertClaim[] => ids.map((identity) => ({ identity, status: 'firing' }));
const resolved = (...ids: string[]): AlertClaim[] =>
  ids.map((identity) => ({ identity, status: 'resolved' }));

function delivery(
  groupKey: string,
  alerts: AlertClaim[],
  overrides: Partial<DeliveryInput> = {},
): DeliveryInput {
  return {
    scope: SCOPE,
    groupKey,
    alerts,
    payload: { groupKey },
    stormPayload: { storm: { threadsPerMinute: LIMITS.threadsPerMinute } },
    limits: LIMITS,
    now: T0,
    ...overrides,
  };
}

export interface OpenedStores {
  sessions: SessionStore;
  triggers: TriggerStore;
}

export function triggerStoreContract(name: string, open: () => Promise<OpenedStores>): void {
  describe(`TriggerStore contract: ${name}`, () => {
    let opened: OpenedStores;
    let store: TriggerStore;

    beforeEach(async () => {
      opened = await open();
      await opened.sessions.migrate();
      store = opened.triggers;
    });

    afterEach(async () => {
      await opened.sessions.close();
    });

    async function pending(owner = 'replica-a', now = T0) {
      const claimed = await store.claimTriggerWork(owner, now, MINUTE, 100);
      for (const c of claimed) await store.releaseTriggerGroup(c.group.id, owner);
      return claimed.flatMap((c) => c.work);
    }

    describe('alert groups', () => {
      it('opens a group for new firing alerts, with one open work naming them', async () => {
        const result = await store.recordDelivery(delivery('{}:{alertname="A"}', firing('a@1', 'b@1')));
        expect(result).toStrictEqual({
          outcome: 'opened',
          groupId: groupIdOf(SCOPE, '{}:{alertname="A"}'),
          newFiring: ['a@1', 'b@1'],
          newlyResolved: [],
        });
        const work = await pending();
        expect(work.map((w) => [w.kind, w.identities, w.groupId, w.sourceGroupId, w.attempts])).toStrictEqual(
          [['open', ['a@1', 'b@1'], result.groupId, result.groupId, 0]],
        );
        expect(work[0]?.payload).toStrictEqual({ groupKey: '{}:{alertname="A"}' });
        const group = await store.getTriggerGroup(result.groupId);
        expect(group).toMatchObject({ scope: SCOPE, episode: 1, storm: false, thread: null });
      });

      it('takes a repeat with nothing new as a duplicate and writes no work', async () => {
        await store.recordDelivery(delivery('g', firing('a@1')));
        const repeat = await store.recordDelivery(delivery('g', firing('a@1'), { now: T0 + 5 * MINUTE }));
        expect(repeat.outcome).toBe('duplicate');
        expect(repeat.newFiring).toStrictEqual([]);
        expect((await pending()).map((w) => w.kind)).toStrictEqual(['open']);
      });

      it('continues a known group with a turn naming only the alerts that are new', async () => {
        await store.recordDelivery(delivery('g', firing('a@1')));
        const more = await store.recordDelivery(delivery('g', firing('a@1', 'c@2'), { now: T0 + 1000 }));
        expect(more).toMatchObject({ outcome: 'continued', newFiring: ['c@2'] });
        expect((await pending()).map((w) => [w.seq, w.kind, w.identities])).toStrictEqual([
          [1, 'open', ['a@1']],
          [2, 'turn', ['c@2']],
        ]);
      });

      it('resolves alerts once each, saying when the whole group has resolved', async () => {
        await store.recordDelivery(delivery('g', firing('a@1', 'b@1')));
        const first = await store.recordDelivery(delivery('g', [...firing('b@1'), ...resolved('a@1')]));
        expect(first).toMatchObject({ outcome: 'resolved', newlyResolved: ['a@1'] });
        const again = await store.recordDelivery(delivery('g', [...firing('b@1'), ...resolved('a@1')]));
        expect(again.outcome).toBe('duplicate');
        const last = await store.recordDelivery(delivery('g', resolved('a@1', 'b@1')));
        expect(last).toMatchObject({ outcome: 'resolved', newlyResolved: ['b@1'] });
        const work = await pending();
        expect(work.map((w) => [w.kind, w.identities, w.allResolved])).toStrictEqual([
          ['open', ['a@1', 'b@1'], false],
          ['resolved', ['a@1'], false],
          ['resolved', ['b@1'], true],
        ]);
      });

      it('resolves every firing alert of the group for a resolution that names none', async () => {
        await store.recordDelivery(delivery('g', firing('v1', 'v2')));
        const done = await store.recordDelivery(delivery('g', [], { resolveAll: true }));
        expect(done).toMatchObject({ outcome: 'resolved', newlyResolved: ['v1', 'v2'] });
        expect((await pending()).at(-1)).toMatchObject({ kind: 'resolved', allResolved: true });
      });

      it('ignores a resolution of a group it never saw firing, keeping no group', async () => {
        const result = await store.recordDelivery(delivery('never', resolved('x@1')));
        expect(result.outcome).toBe('ignored');
        expect(await store.getTriggerGroup(result.groupId)).toBeUndefined();
        expect(await pending()).toStrictEqual([]);
      });

      it('keeps groups of different workspaces apart, the workspace being part of the id', async () => {
        const a = await store.recordDelivery(delivery('g', firing('a@1')));
        const b = await store.recordDelivery(
          delivery('g', firing('a@1'), { scope: { ...SCOPE, workspaceId: 'T02' } }),
        );
        expect(b.outcome).toBe('opened');
        expect(b.groupId).not.toBe(a.groupId);
      });

      it('opens a new thread for a group that fires again a day after it resolved', async () => {
        const first = await store.recordDelivery(delivery('g', firing('a@1')));
        await store.recordDelivery(delivery('g', resolved('a@1'), { now: T0 + MINUTE }));
        const soon = await store.recordDelivery(delivery('g', firing('a@2'), { now: T0 + HOUR }));
        expect(soon.outcome).toBe('continued');
        await store.recordDelivery(delivery('g', resolved('a@2'), { now: T0 + 2 * HOUR }));
        const later = await store.recordDelivery(delivery('g', firing('a@3'), { now: T0 + 27 * HOUR }));
        expect(later).toMatchObject({ outcome: 'opened', groupId: first.groupId, newFiring: ['a@3'] });
        expect(await store.getTriggerGroup(first.groupId)).toMatchObject({ episode: 2, thread: null });
      });

      it('lets exactly one of several concurrent deliveries of the same notification act on it', async () => {
        const results = await Promise.all(
          Array.from({ length: 6 }, () => store.recordDelivery(delivery('g', firing('a@1', 'b@1')))),
        );
        expect(results.map((r) => r.outcome).sort()).toStrictEqual([
          'duplicate',
          'duplicate',
          'duplicate',
          'duplicate',
          'duplicate',
          'opened',
        ]);
        expect((await pending()).map((w) => w.kind)).toStrictEqual(['open']);
      });
    });

    describe('the storm limit', () => {
      it('opens at most the limit of threads a minute; the rest join one storm thread, with no open of their own', async () => {
        const outcomes: string[] = [];
        for (let i = 0; i < 5; i++)
          outcomes.push(
            (await store.recordDelivery(delivery(`g${i}`, firing(`x${i}`), { now: T0 + i }))).outcome,
          );
        expect(outcomes).toStrictEqual(['opened', 'opened', 'opened', 'throttled', 'throttled']);
        const claimed = await store.claimTriggerWork('replica-a', T0 + 10, MINUTE, 100);
        const storm = claimed.filter((c) => c.group.storm);
        expect(storm).toHaveLength(1);
        expect(
          storm[0]?.work.map((w) => [w.kind, w.sourceGroupId === w.groupId, w.identities]),
        ).toStrictEqual([
          ['open', true, []],
          ['note', false, ['x3']],
          ['note', false, ['x4']],
        ]);
        expect(storm[0]?.work[0]?.payload).toStrictEqual({ storm: { threadsPerMinute: 3 } });
        // A throttled group's later alerts and resolution go to the storm thread too.
        const g3 = groupIdOf(SCOPE, 'g3');
        expect(
          (await store.recordDelivery(delivery('g3', resolved('x3'), { now: T0 + 20 * 1000 }))).outcome,
        ).toBe('resolved');
        const stormGroup = storm[0]?.group.id ?? '';
        await store.releaseTriggerGroup(stormGroup, 'replica-a');
        const again = (await pending('replica-a', T0 + 30_000)).filter((w) => w.groupId === stormGroup);
        expect(again.at(-1)).toMatchObject({ kind: 'note', sourceGroupId: g3, allResolved: true });
      });

      it('counts only the last minute, and starts a new storm thread once the last went quiet', async () => {
        for (let i = 0; i < 4; i++)
          await store.recordDelivery(delivery(`a${i}`, firing(`a${i}`), { now: T0 }));
        const after = await store.recordDelivery(delivery('b', firing('b'), { now: T0 + MINUTE + 1 }));
        expect(after.outcome).toBe('opened');
        for (let i = 0; i < 3; i++)
          await store.recordDelivery(delivery(`c${i}`, firing(`c${i}`), { now: T0 + MINUTE + 2 }));
        const late = await store.recordDelivery(delivery('d', firing('d'), { now: T0 + 30 * MINUTE }));
        expect(late.outcome).toBe('opened');
        for (let i = 0; i < 3; i++)
          await store.recordDelivery(delivery(`e${i}`, firing(`e${i}`), { now: T0 + 30 * MINUTE + 1 }));
        const claimed = await store.claimTriggerWork('replica-a', T0 + 31 * MINUTE, MINUTE, 100);
        // A minute on, b, c0 and c1 open threads and c2 joins the first storm thread (after a3);
        // half an hour on, that one went quiet: e2 starts a second one.
        expect(claimed.filter((c) => c.group.storm).map((c) => c.work.length)).toStrictEqual([3, 2]);
      });
    });

    describe('the outbox', () => {
      it('leases a group to one replica at a time, until the lease expires', async () => {
        await store.recordDelivery(delivery('g', firing('a')));
        expect(await store.claimTriggerWork('replica-a', T0, MINUTE, 10)).toHaveLength(1);
        expect(await store.claimTriggerWork('replica-b', T0 + 1000, MINUTE, 10)).toHaveLength(0);
        expect(await store.claimTriggerWork('replica-b', T0 + MINUTE, MINUTE, 10)).toHaveLength(1);
      });

      it('gives a free group to exactly one of several replicas claiming at once', async () => {
        await store.recordDelivery(delivery('g', firing('a')));
        const claims = await Promise.all(
          ['a', 'b', 'c', 'd'].map((r) => store.claimTriggerWork(`replica-${r}`, T0, MINUTE, 10)),
        );
        expect(claims.map((c) => c.length).sort()).toStrictEqual([0, 0, 0, 1]);
      });

      it('counts attempts, records the thread, and finishes work only for the lease holder', async () => {
        const { groupId } = await store.recordDelivery(delivery('g', firing('a')));
        const [claimed] = await store.claimTriggerWork('replica-a', T0, MINUTE, 10);
        const work = claimed?.work[0];
        if (work === undefined) throw new Error('no work claimed');
        await store.startTriggerWork(work.id, groupId, 'replica-a', T0 + 1, MINUTE);
        const thread = {
          surface: 'slack',
          workspaceId: 'T01',
          channelId: 'C01',
          threadId: '1700000000.000100',
        };
        await store.setTriggerThread(groupId, 'replica-a', thread, T0 + 2);
        expect((await store.getTriggerGroup(groupId))?.thread).toStrictEqual(thread);
        await expect(
          store.startTriggerWork(work.id, groupId, 'replica-b', T0 + 3, MINUTE),
        ).rejects.toBeInstanceOf(TriggerLeaseLostError);
        await expect(
          store.finishTriggerWork(work.id, groupId, 'replica-b', 'done', T0 + 3),
        ).rejects.toMatchObject({ code: 'lease_lost' });
        await store.releaseTriggerGroup(groupId, 'replica-a');
        const [again] = await store.claimTriggerWork('replica-b', T0 + 4, MINUTE, 10);
        expect(again?.work[0]?.attempts).toBe(1);
        await store.finishTriggerWork(work.id, groupId, 'replica-b', 'done', T0 + 5);
        await store.releaseTriggerGroup(groupId, 'replica-b');
        expect(await store.claimTriggerWork('replica-a', T0 + 6, MINUTE, 10)).toHaveLength(0);
      });

      it('refuses writes once the lease has expired, even if nobody took it', async () => {
        const { groupId } = await store.recordDelivery(delivery('g', firing('a')));
        const [claimed] = await store.claimTriggerWork('replica-a', T0, MINUTE, 10);
        const id = claimed?.work[0]?.id ?? '';
        await expect(
          store.startTriggerWork(id, groupId, 'replica-a', T0 + MINUTE, MINUTE),
        ).rejects.toBeInstanceOf(TriggerLeaseLostError);
      });

      it('keeps deferred work until it is due', async () => {
        const { groupId } = await store.recordDelivery(delivery('g', firing('a')));
        const [claimed] = await store.claimTriggerWork('replica-a', T0, MINUTE, 10);
        await store.deferTriggerWork(claimed?.work[0]?.id ?? '', groupId, 'replica-a', T0 + 5000, T0 + 1);
        await store.releaseTriggerGroup(groupId, 'replica-a');
        expect(await store.claimTriggerWork('replica-a', T0 + 4999, MINUTE, 10)).toHaveLength(0);
        const [due] = await store.claimTriggerWork('replica-a', T0 + 5000, MINUTE, 10);
        expect(due?.work[0]?.nextAt).toBe(T0 + 5000);
      });
    });

    describe('pruning', () => {
      it('forgets done work and long-resolved groups with their claims, keeping what is pending or firing', async () => {
        const DAY = 24 * HOUR;
        const old = await store.recordDelivery(delivery('old', firing('o')));
        await store.recordDelivery(delivery('old', resolved('o'), { now: T0 + 1 }));
        const live = await store.recordDelivery(delivery('live', firing('l')));
        const claimed = await store.claimTriggerWork('replica-a', T0 + 2, MINUTE, 10);
        for (const c of claimed) {
          for (const w of c.work)
            await store.finishTriggerWork(w.id, c.group.id, 'replica-a', 'done', T0 + 3);
          await store.releaseTriggerGroup(c.group.id, 'replica-a');
        }
        await store.recordDelivery(delivery('live', firing('l', 'm'), { now: T0 + 40 * DAY }));
        expect(await store.pruneTriggers(T0 + 40 * DAY - 7 * DAY, T0 + 40 * DAY - 30 * DAY)).toBe(4);
        expect(await store.getTriggerGroup(old.groupId)).toBeUndefined();
        expect(await store.getTriggerGroup(live.groupId)).toBeDefined();
        // The pending turn of the live group stays; the forgotten group is new again.
        expect((await pending('replica-a', T0 + 40 * DAY)).map((w) => w.kind)).toStrictEqual(['turn']);
        expect(
          (await store.recordDelivery(delivery('old', firing('o'), { now: T0 + 40 * DAY }))).outcome,
        ).toBe('opened');
      });
    });

    describe('activity', () => {
      it('keeps the last delivery of every trigger', async () => {
        await store.recordDelivery(delivery('g', firing('a')));
        await store.recordDelivery(delivery('g', firing('a'), { now: T0 + 10 }));
        await store.recordTriggerActivity('team-b/ops', 'hook', 'invalid', T0 + 20);
        expect(await store.triggerActivity()).toStrictEqual([
          { binding: 'team-a/support', trigger: 'alerts', at: T0 + 10, result: 'duplicate' },
          { binding: 'team-b/ops', trigger: 'hook', at: T0 + 20, result: 'invalid' },
        ]);
      });
    });

    describe('schedules', () => {
      const run = (runAt: number, fingerprint = 'f1') => ({
        scope: SCOPE,
        runAt,
        fingerprint,
        payload: { runAt },
        now: runAt + 5,
      });

      it('anchors a schedule when first seen, and again when it changes', async () => {
        expect(await store.anchorSchedule('team-a/support', 'daily', 'f1', T0)).toStrictEqual({
          fingerprint: 'f1',
          anchorAt: T0,
          lastRunAt: null,
        });
        expect(await store.anchorSchedule('team-a/support', 'daily', 'f1', T0 + HOUR)).toMatchObject({
          anchorAt: T0,
        });
        expect(await store.anchorSchedule('team-a/support', 'daily', 'f2', T0 + HOUR)).toMatchObject({
          fingerprint: 'f2',
          anchorAt: T0 + HOUR,
        });
      });

      it('claims each tick once, never one before the anchor nor one older than the last run', async () => {
        const scope = { ...SCOPE, trigger: 'daily' };
        await store.anchorSchedule(scope.binding, scope.trigger, 'f1', T0);
        expect(await store.recordScheduleRun({ ...run(T0), scope })).toBe(false);
        expect(await store.recordScheduleRun({ ...run(T0 + HOUR), scope })).toBe(true);
        expect(await store.recordScheduleRun({ ...run(T0 + HOUR), scope })).toBe(false);
        expect(await store.recordScheduleRun({ ...run(T0 + 3 * HOUR), scope })).toBe(true);
        expect(await store.recordScheduleRun({ ...run(T0 + 2 * HOUR), scope })).toBe(false);
        expect(await store.recordScheduleRun({ ...run(T0 + 4 * HOUR, 'f0'), scope })).toBe(false);
        const work = await pending('replica-a', T0 + 5 * HOUR);
        expect(work.map((w) => [w.kind, w.payload])).toStrictEqual([
          ['open', { runAt: T0 + HOUR }],
          ['open', { runAt: T0 + 3 * HOUR }],
        ]);
        expect(
          (await store.anchorSchedule(scope.binding, scope.trigger, 'f1', T0 + 5 * HOUR)).lastRunAt,
        ).toBe(T0 + 3 * HOUR);
      });

      it('skips ticks without running them, so they are neither run nor skipped again', async () => {
        const scope = { ...SCOPE, trigger: 'daily' };
        await store.anchorSchedule(scope.binding, scope.trigger, 'f1', T0);
        const { payload: _, ...skip } = { ...run(T0 + 2 * HOUR), scope };
        expect(await store.skipScheduleRuns(skip)).toBe(true);
        expect(await store.skipScheduleRuns(skip)).toBe(false);
        expect(await store.recordScheduleRun({ ...run(T0 + HOUR), scope })).toBe(false);
        expect(await pending()).toStrictEqual([]);
        expect((await store.triggerActivity()).find((a) => a.trigger === 'daily')?.result).toBe('skipped');
      });

      it('lets exactly one of several replicas claiming the same tick run it', async () => {
        const scope = { ...SCOPE, trigger: 'daily' };
        await store.anchorSchedule(scope.binding, scope.trigger, 'f1', T0);
        const claims = await Promise.all(
          Array.from({ length: 5 }, () => store.recordScheduleRun({ ...run(T0 + HOUR), scope })),
        );
        expect(claims.filter(Boolean)).toHaveLength(1);
      });
    });
  });
}
