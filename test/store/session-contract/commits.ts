import { describe, expect, it } from 'vitest';
import { LeaseLostError, StaleWriteError, StoreError } from '../../../src/core/errors.js';
import type { SessionRecord, TurnRecord } from '../../../src/core/store.js';
import { type ContractContext, MINUTE, newTurn, T0, task } from './fixtures.js';

/**
 * Part of the SessionStore contract: commits and their fencing. A session and its turns are
 * written together or not at all, and only by the replica holding the session's lease.
 */
export function commitsContract(c: ContractContext): void {
  const { session, added } = c;
  describe('commit', () => {
    it('writes the session and its turns, bumping the version and stamping the time', async () => {
      const s = await session('t1');
      const m1 = await added(newTurn(s.id, 'm1'));
      const m2 = await added(newTurn(s.id, 'm2'));
      const next: SessionRecord = { ...s, contextId: 'ctx-1', task: task('m1'), lastQuestionKey: 'k0' };
      const written = await c.store.commit({
        session: next,
        turns: [
          { ...m1, state: 'accepted', taskId: 'task-m1', attempts: 1, firstSentAt: T0 + 1 },
          { ...m2, busyNoticeAt: T0 + 2, answerRef: 'C01/123', outcome: 'error:agent_busy' },
        ],
        now: T0 + 3,
      });
      const expected = { ...next, version: 2, updatedAt: T0 + 3 };
      expect(written).toStrictEqual(expected);
      expect(await c.store.getSession(s.id)).toStrictEqual(expected);
      expect(await c.store.getTurn('m1')).toStrictEqual({
        ...m1,
        state: 'accepted',
        taskId: 'task-m1',
        attempts: 1,
        firstSentAt: T0 + 1,
        updatedAt: T0 + 3,
      });
      expect(await c.store.getTurn('m2')).toStrictEqual({
        ...m2,
        busyNoticeAt: T0 + 2,
        answerRef: 'C01/123',
        outcome: 'error:agent_busy',
        updatedAt: T0 + 3,
      });
    });

    it('bumps the version on every write', async () => {
      const s = await session('t1');
      const v2 = await c.store.commit({ session: { ...s, contextId: 'c' }, now: T0 + 1 });
      if (v2 === undefined) throw new Error('commit returned no session');
      const v3 = await c.store.commit({ session: { ...v2, lastQuestionKey: 'q' }, now: T0 + 2 });
      expect([s.version, v2.version, v3?.version]).toStrictEqual([1, 2, 3]);
      expect((await c.store.getSession(s.id))?.version).toBe(3);
    });

    it('refuses a stale version with StaleWriteError and writes none of the commit', async () => {
      const s = await session('t1');
      const m1 = await added(newTurn(s.id, 'm1'));
      await c.store.commit({ session: { ...s, contextId: 'winner' }, now: T0 + 1 });
      const stale = c.store.commit({
        session: { ...s, contextId: 'loser', task: task('m1') },
        turns: [{ ...m1, state: 'sending', attempts: 1 }],
        now: T0 + 2,
      });
      await expect(stale).rejects.toBeInstanceOf(StaleWriteError);
      await expect(stale).rejects.toMatchObject({ code: 'stale_write' });
      expect(await c.store.getSession(s.id)).toMatchObject({ contextId: 'winner', task: null, version: 2 });
      expect(await c.store.getTurn('m1')).toStrictEqual(m1);
    });

    it('writes a new binding (a thread handed over), and keeps it through later writes', async () => {
      const s = await session('t1');
      const moved = await c.store.commit({
        session: { ...s, binding: 'team-b/other', contextId: null },
        now: T0 + 1,
      });
      expect(moved).toStrictEqual({ ...s, binding: 'team-b/other', version: 2, updatedAt: T0 + 1 });
      expect(await c.store.getSession(s.id)).toStrictEqual(moved);
      if (moved === undefined) throw new Error('commit returned no session');
      const later = await c.store.commit({ session: { ...moved, contextId: 'ctx-b' }, now: T0 + 2 });
      expect(await c.store.getSession(s.id)).toStrictEqual(later);
      expect(later).toMatchObject({ binding: 'team-b/other', contextId: 'ctx-b', version: 3 });
    });

    it('refuses a stale version with StaleWriteError whether or not the binding changes', async () => {
      const s = await session('t1');
      const v2 = await c.store.commit({ session: { ...s, contextId: 'winner' }, now: T0 + 1 });
      for (const binding of [s.binding, 'team-b/other']) {
        const stale = c.store.commit({ session: { ...s, binding, contextId: 'loser' }, now: T0 + 2 });
        await expect(stale).rejects.toMatchObject({ code: 'stale_write' });
        await expect(stale).rejects.toBeInstanceOf(StaleWriteError);
      }
      expect(await c.store.getSession(s.id)).toStrictEqual(v2);
    });

    it('lets exactly one of several concurrent commits of the same version win', async () => {
      const s = await session('t1');
      const results = await Promise.allSettled(
        Array.from({ length: 8 }, (_, i) =>
          c.store.commit({ session: { ...s, contextId: `ctx-${i}` }, now: T0 + 1 + i }),
        ),
      );
      const won = results.filter((r) => r.status === 'fulfilled');
      const lost = results.filter((r) => r.status === 'rejected');
      expect(won).toHaveLength(1);
      expect(lost.every((r) => r.reason instanceof StaleWriteError)).toBe(true);
      const winner = won[0]?.value;
      expect(await c.store.getSession(s.id)).toStrictEqual(winner);
      expect(winner?.version).toBe(2);
    });

    it('writes turns alone without touching the session, returning undefined', async () => {
      const s = await session('t1');
      const m1 = await added(newTurn(s.id, 'm1'));
      expect(await c.store.commit({ turns: [{ ...m1, state: 'sending' }], now: T0 + 1 })).toBeUndefined();
      expect((await c.store.getTurn('m1'))?.state).toBe('sending');
      expect(await c.store.getSession(s.id)).toStrictEqual(s);
    });

    it('writes nothing when one of its turns does not exist', async () => {
      const s = await session('t1');
      const m1 = await added(newTurn(s.id, 'm1'));
      const ghost: TurnRecord = { ...m1, id: 'ghost', chatMessageId: 'ghost' };
      const failed = c.store.commit({
        session: { ...s, contextId: 'ctx' },
        turns: [{ ...m1, state: 'settled' }, ghost],
        now: T0 + 1,
      });
      await expect(failed).rejects.toBeInstanceOf(StoreError);
      expect(await c.store.getSession(s.id)).toStrictEqual(s);
      expect(await c.store.getTurn('m1')).toStrictEqual(m1);
    });
  });

  describe('fencing', () => {
    it('commits while the fencing owner holds the lease', async () => {
      const s = await session('t1');
      const m1 = await added(newTurn(s.id, 'm1'));
      expect(await c.store.acquireLease(s.id, 'replica-a', T0, MINUTE)).toBe('first');
      const written = await c.store.commit({
        session: { ...s, contextId: 'ctx' },
        turns: [{ ...m1, state: 'sending' }],
        now: T0 + MINUTE - 1,
        fence: { owner: 'replica-a' },
      });
      expect(written?.contextId).toBe('ctx');
      expect((await c.store.getTurn('m1'))?.state).toBe('sending');
    });

    it('throws LeaseLostError and writes nothing when another replica holds the lease', async () => {
      const s = await session('t1');
      const m1 = await added(newTurn(s.id, 'm1'));
      expect(await c.store.acquireLease(s.id, 'replica-b', T0, MINUTE)).toBe('first');
      const fenced = c.store.commit({
        session: { ...s, contextId: 'ctx' },
        turns: [{ ...m1, state: 'sending' }],
        now: T0 + 1,
        fence: { owner: 'replica-a' },
      });
      await expect(fenced).rejects.toBeInstanceOf(LeaseLostError);
      await expect(fenced).rejects.toMatchObject({ code: 'lease_lost' });
      expect(await c.store.getSession(s.id)).toStrictEqual(s);
      expect(await c.store.getTurn('m1')).toStrictEqual(m1);
    });

    it('throws LeaseLostError when the owner’s lease has expired, even if nobody took it', async () => {
      const s = await session('t1');
      expect(await c.store.acquireLease(s.id, 'replica-a', T0, MINUTE)).toBe('first');
      const fenced = c.store.commit({
        session: { ...s, contextId: 'late' },
        now: T0 + MINUTE,
        fence: { owner: 'replica-a' },
      });
      await expect(fenced).rejects.toBeInstanceOf(LeaseLostError);
      expect(await c.store.getSession(s.id)).toStrictEqual(s);
    });

    it('throws LeaseLostError when there is no lease at all', async () => {
      const s = await session('t1');
      await expect(
        c.store.commit({ session: { ...s, contextId: 'x' }, now: T0, fence: { owner: 'replica-a' } }),
      ).rejects.toBeInstanceOf(LeaseLostError);
      expect(await c.store.getSession(s.id)).toStrictEqual(s);
    });

    it('fences a turns-only commit on the lease of the turns’ session', async () => {
      const s = await session('t1');
      const m1 = await added(newTurn(s.id, 'm1'));
      expect(await c.store.acquireLease(s.id, 'replica-b', T0, MINUTE)).toBe('first');
      await expect(
        c.store.commit({ turns: [{ ...m1, state: 'settled' }], now: T0 + 1, fence: { owner: 'replica-a' } }),
      ).rejects.toBeInstanceOf(LeaseLostError);
      expect(await c.store.getTurn('m1')).toStrictEqual(m1);
    });

    it('prefers LeaseLostError to StaleWriteError when both apply', async () => {
      const s = await session('t1');
      await c.store.commit({ session: s, now: T0 + 1 });
      await expect(
        c.store.commit({ session: s, now: T0 + 2, fence: { owner: 'replica-a' } }),
      ).rejects.toBeInstanceOf(LeaseLostError);
    });
  });
}
