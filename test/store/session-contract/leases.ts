import { describe, expect, it } from 'vitest';
import { LeaseLostError, StoreError } from '../../../src/core/errors.js';
import { type ContractContext, DAY, MINUTE, newTurn, question, T0, task } from './fixtures.js';

/**
 * Part of the SessionStore contract: leases (who drives a session), the sessions with work, and
 * the inbound events seen.
 */
export function leasesContract(c: ContractContext): void {
  const { session, added, stored } = c;
  describe('leases', () => {
    const id = 'slack:T01:C01:leased';

    it('takes a free lease, and refuses it to another owner while it lasts', async () => {
      expect(await c.store.acquireLease(id, 'a', T0, MINUTE)).toBe('first');
      expect(await c.store.acquireLease(id, 'b', T0 + MINUTE - 1, MINUTE)).toBe(false);
      expect(await c.store.renewLeases('a', T0 + 1, MINUTE)).toStrictEqual([id]);
    });

    it('gives a free lease to exactly one of several owners asking at once', async () => {
      const results = await Promise.all(
        Array.from({ length: 8 }, (_, i) => c.store.acquireLease(id, `r${i}`, T0, MINUTE)),
      );
      expect(results.filter(Boolean)).toStrictEqual(['first']);
      const winner = `r${results.findIndex((r) => r !== false)}`;
      expect(await c.store.renewLeases(winner, T0 + 1, MINUTE)).toStrictEqual([id]);
    });

    it('lets another owner take over a lease once it has expired', async () => {
      expect(await c.store.acquireLease(id, 'a', T0, MINUTE)).toBe('first');
      expect(await c.store.acquireLease(id, 'b', T0 + MINUTE, MINUTE)).toBe('taken');
      expect(await c.store.acquireLease(id, 'a', T0 + MINUTE + 1, MINUTE)).toBe(false);
      expect(await c.store.renewLeases('a', T0 + MINUTE + 1, MINUTE)).toStrictEqual([]);
      expect(await c.store.renewLeases('b', T0 + MINUTE + 1, MINUTE)).toStrictEqual([id]);
    });

    it('renews a lease its owner acquires again, extending it', async () => {
      expect(await c.store.acquireLease(id, 'a', T0, MINUTE)).toBe('first');
      expect(await c.store.acquireLease(id, 'a', T0 + 30_000, MINUTE)).toBe('taken');
      // Past the first expiry, within the renewed one.
      expect(await c.store.acquireLease(id, 'b', T0 + MINUTE + 1, MINUTE)).toBe(false);
      expect(await c.store.acquireLease(id, 'b', T0 + 30_000 + MINUTE, MINUTE)).toBe('taken');
    });

    it('renews every live lease of an owner and returns the ids it still holds', async () => {
      for (const [sessionId, owner] of [
        ['s2', 'a'],
        ['s1', 'a'],
        ['s3', 'b'],
      ] as const) {
        expect(await c.store.acquireLease(sessionId, owner, T0, MINUTE)).toBe('first');
      }
      expect(await c.store.acquireLease('s4', 'a', T0 - MINUTE, MINUTE)).toBe('first'); // expires at T0
      expect(await c.store.renewLeases('a', T0 + 1, 10 * MINUTE)).toStrictEqual(['s1', 's2']);
      // Renewed until T0 + 1 + 10 min: still held after the original minute.
      expect(await c.store.acquireLease('s1', 'b', T0 + 5 * MINUTE, MINUTE)).toBe(false);
      expect(await c.store.acquireLease('s3', 'a', T0 + 1, MINUTE)).toBe(false);
      expect(await c.store.renewLeases('c', T0, MINUTE)).toStrictEqual([]);
    });

    it('releases a lease so another owner can take it at once, but only for its owner', async () => {
      expect(await c.store.acquireLease(id, 'a', T0, MINUTE)).toBe('first');
      await c.store.releaseLease(id, 'b', 0);
      expect(await c.store.acquireLease(id, 'b', T0 + 1, MINUTE)).toBe(false);
      await c.store.releaseLease(id, 'a', 0);
      expect(await c.store.acquireLease(id, 'b', T0 + 2, MINUTE)).toBe('taken');
      expect(await c.store.renewLeases('a', T0 + 3, MINUTE)).toStrictEqual([]);
    });

    it("revokes whoever's lease: its commits are fenced off, its renewal drops it, another owner takes it at once", async () => {
      const s = await session('revoked');
      expect(await c.store.acquireLease(s.id, 'a', T0, MINUTE)).toBe('first');
      await c.store.revokeLease(s.id);
      await expect(
        c.store.commit({ session: { ...s, contextId: 'c' }, fence: { owner: 'a' }, now: T0 + 1 }),
      ).rejects.toThrow(LeaseLostError);
      expect(await c.store.renewLeases('a', T0 + 2, MINUTE)).toStrictEqual([]);
      expect(await c.store.acquireLease(s.id, 'b', T0 + 3, MINUTE)).toBe('taken');
      // A session nobody ever drove: nothing to revoke, and its first take is still a first.
      const fresh = await session('never-leased');
      await c.store.revokeLease(fresh.id);
      expect(await c.store.acquireLease(fresh.id, 'b', T0, MINUTE)).toBe('first');
    });

    it('says on release whether a turn newer than the seq read waits, not settled and not context', async () => {
      const s = await session('released');
      const t1 = await added(newTurn(s.id, 'r1'));
      const release = async (owner: string, seen: number): Promise<boolean> => {
        await c.store.acquireLease(s.id, 'a', T0, MINUTE);
        return c.store.releaseLease(s.id, owner, seen);
      };
      expect(await release('a', 0)).toBe(true); // r1 is open, and newer than nothing read
      expect(await release('a', t1.seq)).toBe(false); // r1 was read
      const t2 = await added(newTurn(s.id, 'r2'));
      expect(t2.seq).toBeGreaterThan(t1.seq);
      expect(await release('a', t1.seq)).toBe(true);
      await c.store.commit({ turns: [{ ...t2, state: 'settled', outcome: 'completed' }], now: T0 + 1 });
      expect(await release('a', t1.seq)).toBe(false); // settled since
      await added(newTurn(s.id, 'r3', { kind: 'context' }));
      expect(await release('a', t1.seq)).toBe(false); // a reply kept as context is no work alone
      // Another owner's release answers too, and leaves the lease where it is.
      await added(newTurn(s.id, 'r4'));
      expect(await release('b', t1.seq)).toBe(true);
      expect(await c.store.acquireLease(s.id, 'b', T0 + 1, MINUTE)).toBe(false);
      expect(await c.store.releaseLease(s.id, 'a', t1.seq)).toBe(true);
      expect(await c.store.acquireLease(s.id, 'b', T0 + 1, MINUTE)).toBe('taken');
    });

    it("tells a session's first lease take from every later one: a release keeps the lease on record", async () => {
      const s = await session('first-take');
      expect(await c.store.acquireLease(s.id, 'a', T0, MINUTE)).toBe('first');
      // The same owner again (a renewal), then another owner after each release: never 'first'.
      expect(await c.store.acquireLease(s.id, 'a', T0 + 1, MINUTE)).toBe('taken');
      expect(await c.store.releaseLease(s.id, 'a', 0)).toBe(false);
      expect(await c.store.acquireLease(s.id, 'b', T0 + 2, MINUTE)).toBe('taken');
      await c.store.releaseLease(s.id, 'b', 0);
      expect(await c.store.acquireLease(s.id, 'a', T0 + 3, MINUTE)).toBe('taken');
      // An expired lease taken over is not a first either.
      expect(await c.store.acquireLease(s.id, 'b', T0 + 3 + MINUTE, MINUTE)).toBe('taken');
      // A released lease is no longer live: it fences no commit of its last owner.
      await c.store.releaseLease(s.id, 'b', 0);
      await expect(
        c.store.commit({ session: { ...s, contextId: 'c' }, fence: { owner: 'b' }, now: T0 + 4 + MINUTE }),
      ).rejects.toThrow(LeaseLostError);
      // Another session's first take is still its own.
      const other = await session('first-take-2');
      expect(await c.store.acquireLease(other.id, 'b', T0, MINUTE)).toBe('first');
    });
  });

  describe('sessionsWithWork', () => {
    it('lists sessions with an open turn, a recorded task or a pending question, and no others', async () => {
      expect(await c.store.sessionsWithWork()).toStrictEqual([]);
      await session('idle');
      const withTurn = await session('turn');
      const withTask = await session('task');
      const withQuestion = await session('question');
      const settled = await session('settled');
      await added(newTurn(withTurn.id, 't1'));
      const done = await added(newTurn(settled.id, 'd1'));
      await c.store.commit({ turns: [{ ...done, state: 'settled', outcome: 'completed' }], now: T0 + 1 });
      await c.store.commit({ session: { ...withTask, task: task('x') }, now: T0 + 1 });
      await c.store.commit({ session: { ...withQuestion, question: question() }, now: T0 + 1 });

      const expected = [withTurn.id, withTask.id, withQuestion.id].sort();
      // Neither the idle session nor the one whose only turn settled.
      expect(await c.store.sessionsWithWork()).toStrictEqual(expected);

      const turn = await stored('t1');
      await c.store.commit({ turns: [{ ...turn, state: 'settled' }], now: T0 + 2 });
      expect(await c.store.sessionsWithWork()).toStrictEqual([withTask.id, withQuestion.id].sort());
    });

    it('for a lease holder, leaves out sessions under another owner’s live lease, and keeps expired and own ones', async () => {
      const free = await session('free');
      const own = await session('own');
      const theirs = await session('theirs');
      const expired = await session('expired');
      for (const s of [free, own, theirs, expired]) await added(newTurn(s.id, `m-${s.key.threadId}`));
      expect(await c.store.acquireLease(own.id, 'a', T0 + 1, MINUTE)).toBe('first');
      expect(await c.store.acquireLease(theirs.id, 'b', T0 + 1, MINUTE)).toBe('first');
      expect(await c.store.acquireLease(expired.id, 'b', T0, MINUTE)).toBe('first');
      // A lease with no work behind it lists nothing.
      expect(await c.store.acquireLease('slack:T01:C01:idle', 'b', T0, MINUTE)).toBe('first');

      // At T0 + MINUTE the lease of `expired` has run out (acquireLease would hand it over);
      // those of `own` and `theirs` still hold for a millisecond.
      const drivable = await c.store.sessionsWithWork({ owner: 'a', now: T0 + MINUTE });
      expect(drivable).toStrictEqual([free.id, own.id, expired.id].sort());
      expect(await c.store.acquireLease(expired.id, 'a', T0 + MINUTE, MINUTE)).toBe('taken');
      // The other owner is left out of nothing of its own, and nobody's filter hides work in all.
      expect(await c.store.sessionsWithWork({ owner: 'b', now: T0 + MINUTE })).toStrictEqual(
        [free.id, theirs.id].sort(),
      );
      expect(await c.store.sessionsWithWork()).toStrictEqual([free.id, own.id, theirs.id, expired.id].sort());
      // Once the lease of `theirs` expires too, it is drivable by anyone.
      expect(await c.store.sessionsWithWork({ owner: 'a', now: T0 + MINUTE + 1 })).toContain(theirs.id);
    });
  });

  describe('workToScan', () => {
    it('lists what sessionsWithWork lists, each with a mark that a turn added or a session write changes, and nothing else', async () => {
      const waiting = await session('marked');
      const other = await session('marked-2');
      await c.store.commit({ session: { ...waiting, question: question() }, now: T0 + 1 });
      await added(newTurn(other.id, 'm1'));
      const first = await c.store.workToScan();
      expect(first.map((w) => w.id)).toStrictEqual(await c.store.sessionsWithWork());
      const markOf = async (id: string) => (await c.store.workToScan()).find((w) => w.id === id)?.mark;
      const before = await markOf(waiting.id);
      expect(before).toBeDefined();
      // Reads, a lease taken and released, and another session's writes leave it as it was.
      await c.store.getSession(waiting.id);
      expect(await c.store.acquireLease(waiting.id, 'a', T0 + 2, MINUTE)).toBe('first');
      await c.store.releaseLease(waiting.id, 'a', 0);
      await added(newTurn(other.id, 'm2'));
      expect(await markOf(waiting.id)).toBe(before);
      // A turn added (by anyone, without a lease) changes it.
      await added(newTurn(waiting.id, 'reply'));
      const afterTurn = await markOf(waiting.id);
      expect(afterTurn).not.toBe(before);
      // So does a write of the session.
      const current = await c.store.getSession(waiting.id);
      if (current === undefined) throw new Error('the session is gone');
      await c.store.commit({ session: { ...current, lastQuestionKey: 'q-2' }, now: T0 + 3 });
      expect(await markOf(waiting.id)).not.toBe(afterTurn);
      // For a lease holder, as sessionsWithWork filters.
      expect(await c.store.acquireLease(other.id, 'b', T0 + 3, MINUTE)).toBe('first');
      expect((await c.store.workToScan({ owner: 'a', now: T0 + 4 })).map((w) => w.id)).toStrictEqual(
        await c.store.sessionsWithWork({ owner: 'a', now: T0 + 4 }),
      );
      expect((await c.store.workToScan({ owner: 'a', now: T0 + 4 })).map((w) => w.id)).not.toContain(
        other.id,
      );
    });
  });

  describe('inbound events', () => {
    it('claims an event key once', async () => {
      expect(await c.store.claimInboundEvent('Ev01', T0)).toBe(true);
      expect(await c.store.claimInboundEvent('Ev01', T0 + 1)).toBe(false);
      expect(await c.store.claimInboundEvent('Ev02', T0 + 1)).toBe(true);
    });

    it('claims the event a turn came from in the transaction that stores the turn', async () => {
      const s = await session('t-1');
      const first = await c.store.addTurn(newTurn(s.id, 'm1'), { inboundEvent: 'T1:Ev01' });
      expect(first.created).toBe(true);
      expect(await c.store.claimInboundEvent('T1:Ev01', T0 + 1)).toBe(false);
      // A redelivery of the same event finds the turn it stored, and adds nothing.
      const again = await c.store.addTurn(newTurn(s.id, 'm1'), { inboundEvent: 'T1:Ev01' });
      expect(again.created).toBe(false);
    });

    it('leaves the event unclaimed when its turn cannot be stored: both or neither', async () => {
      await expect(
        c.store.addTurn(newTurn('no-such-session', 'm1'), { inboundEvent: 'T1:Ev02' }),
      ).rejects.toBeInstanceOf(StoreError);
      expect(await c.store.claimInboundEvent('T1:Ev02', T0 + 1)).toBe(true);
    });

    it('still stores a turn whose event was claimed before (by an older build) but never stored', async () => {
      const s = await session('t-1');
      expect(await c.store.claimInboundEvent('T1:Ev03', T0)).toBe(true);
      const result = await c.store.addTurn(newTurn(s.id, 'm1'), { inboundEvent: 'T1:Ev03' });
      expect(result.created).toBe(true);
    });

    it('remembers a key for 24 hours, then forgets it', async () => {
      expect(await c.store.claimInboundEvent('Ev01', T0)).toBe(true);
      expect(await c.store.claimInboundEvent('Ev01', T0 + DAY)).toBe(false);
      expect(await c.store.claimInboundEvent('Ev01', T0 + DAY + 1)).toBe(true);
      expect(await c.store.claimInboundEvent('Ev01', T0 + DAY + 2)).toBe(false);
    });
  });
}
