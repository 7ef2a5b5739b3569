import { describe, expect, it } from 'vitest';
import { StoreError } from '../../../src/core/errors.js';
import { type NewSession, type SessionRecord, sessionIdOf } from '../../../src/core/store.js';
import { INBOUND_EVENT_TTL_MS } from '../../../src/store/migrations.js';
import { type ContractContext, freshSession, key, MINUTE, newTurn, T0 } from './fixtures.js';

/**
 * Part of the SessionStore contract: openSessionAndAddTurn, what a new chat message costs in one
 * write — the session got or created, and the turn built from it added, all or nothing.
 */
export function openWithTurnContract(c: ContractContext): void {
  const init = (threadId: string, binding = 'team-a/support', now = T0): NewSession => ({
    key: key(threadId),
    binding,
    now,
  });

  describe('opening a session and adding its turn in one write', () => {
    it('creates the session and its first turn, building the turn from the session as stored', async () => {
      const seen: Array<[SessionRecord, boolean]> = [];
      const result = await c.store.openSessionAndAddTurn(init('new'), (session, opened) => {
        seen.push([session, opened]);
        return newTurn(session.id, 'first', { label: '[Slack: Ada (U01)]', now: T0 + 1 });
      });
      const id = sessionIdOf(key('new'));
      const session = freshSession('new');
      // Built once, from the session this call created.
      expect(seen).toStrictEqual([[session, true]]);
      expect(result.session).toStrictEqual(session);
      expect(result.created).toBe(true);
      expect(result.turn).toMatchObject({ id: 'first', sessionId: id, seq: 1, state: 'queued' });
      expect(result.turn.label).toBe('[Slack: Ada (U01)]');
      expect(await c.store.getSession(id)).toStrictEqual(session);
      expect(await c.store.getTurn('first')).toStrictEqual(result.turn);
      expect(await c.store.openTurns(id)).toStrictEqual([result.turn]);
    });

    it('finds a known thread, keeping its binding, and numbers the turn after the ones it has', async () => {
      const first = await c.session('known');
      await c.added(newTurn(first.id, 'k1'));
      const seen: Array<[SessionRecord, boolean]> = [];
      const result = await c.store.openSessionAndAddTurn(
        init('known', 'team-b/other', T0 + MINUTE),
        (s, opened) => {
          seen.push([s, opened]);
          return newTurn(s.id, 'k2');
        },
      );
      expect(seen).toStrictEqual([[first, false]]);
      expect(result.session).toStrictEqual(first);
      expect(result.session.binding).toBe('team-a/support');
      expect(result.turn.seq).toBe(2);
      expect((await c.store.openTurns(first.id)).map((t) => t.id)).toStrictEqual(['k1', 'k2']);
    });

    it('does not add a turn twice: a repeat returns the original and uses up no number', async () => {
      const first = await c.store.openSessionAndAddTurn(init('dup'), (s) => newTurn(s.id, 'd1'));
      const again = await c.store.openSessionAndAddTurn(init('dup'), (s) =>
        newTurn(s.id, 'd1-again', { chatMessageId: 'chat-d1', text: 'changed' }),
      );
      expect(again.created).toBe(false);
      expect(again.turn).toStrictEqual(first.turn);
      expect(await c.store.getTurn('d1-again')).toBeUndefined();
      const next = await c.store.openSessionAndAddTurn(init('dup'), (s) => newTurn(s.id, 'd2'));
      expect(next.turn.seq).toBe(2);
    });

    it('a new thread whose first turn is already stored elsewhere gets no turn and uses up no number', async () => {
      const elsewhere = await c.store.openSessionAndAddTurn(init('other'), (s) => newTurn(s.id, 'taken'));
      const fresh = await c.store.openSessionAndAddTurn(init('fresh'), (s) =>
        newTurn(s.id, 'taken', { chatMessageId: 'chat-fresh' }),
      );
      // The same message id is the same turn (S-2): the one stored is returned, nothing added.
      expect(fresh.created).toBe(false);
      expect(fresh.turn).toStrictEqual(elsewhere.turn);
      expect(await c.store.openTurns(fresh.session.id)).toStrictEqual([]);
      const next = await c.store.openSessionAndAddTurn(init('fresh'), (s) => newTurn(s.id, 'f1'));
      expect(next.turn.seq).toBe(1);
    });

    it('claims the inbound event in the same write, and a repeat of the event adds nothing', async () => {
      const event = 'T01:Ev0OPEN';
      const first = await c.store.openSessionAndAddTurn(init('ev'), (s) => newTurn(s.id, 'e1'), {
        inboundEvent: event,
      });
      expect(first.created).toBe(true);
      expect(await c.store.claimInboundEvent(event, T0 + 1)).toBe(false);
      const again = await c.store.openSessionAndAddTurn(init('ev'), (s) => newTurn(s.id, 'e1'), {
        inboundEvent: event,
      });
      expect(again).toMatchObject({ created: false, turn: first.turn });
    });

    it('a turn whose event was claimed longer ago than the TTL claims it afresh: it is seen for a whole TTL again', async () => {
      // A new thread's first message (openSessionAndAddTurn) and a later message (addTurn) each
      // carry an event last seen over a TTL ago; their writes must start its TTL over, so the
      // same event arriving again soon after is still known.
      const late = T0 + INBOUND_EVENT_TTL_MS + MINUTE;
      for (const [event, add] of [
        [
          'T01:Ev0STALE-OPEN',
          (e: string) =>
            c.store.openSessionAndAddTurn(
              init('stale', 'team-a/support', late),
              (s) => newTurn(s.id, 'st1', { now: late }),
              {
                inboundEvent: e,
              },
            ),
        ],
        [
          'T01:Ev0STALE-ADD',
          async (e: string) => {
            const s = await c.store.openSession(init('stale', 'team-a/support', late));
            return c.store.addTurn(newTurn(s.id, 'st2', { now: late, chatMessageId: 'st2' }), {
              inboundEvent: e,
            });
          },
        ],
      ] as const) {
        expect(await c.store.claimInboundEvent(event, T0)).toBe(true);
        expect((await add(event)).created).toBe(true);
        expect(await c.store.claimInboundEvent(event, late + MINUTE)).toBe(false);
      }
    });

    it('writes nothing when the turn cannot be added: no session, no claimed event', async () => {
      const event = 'T01:Ev0FAIL';
      // A turn that names a session that does not exist cannot be added (StoreError).
      const failing = c.store.openSessionAndAddTurn(
        init('none'),
        () => newTurn('slack:T01:C01:elsewhere', 'x1'),
        { inboundEvent: event },
      );
      await expect(failing).rejects.toBeInstanceOf(StoreError);
      expect(await c.store.getSession(sessionIdOf(key('none')))).toBeUndefined();
      expect(await c.store.getTurn('x1')).toBeUndefined();
      expect(await c.store.claimInboundEvent(event, T0 + 1)).toBe(true);
    });

    it('opens new threads arriving together, each by its own call, storing each first turn as built', async () => {
      // What the engine does for a new thread: its first turn stored already marked `sending`.
      const threads = ['t0', 't1', 't2', 't3', 't4', 't5'];
      const told: string[] = [];
      const results = await Promise.all(
        threads.map((thread) =>
          c.store.openSessionAndAddTurn(
            init(thread),
            (s, opened) => {
              if (opened) told.push(thread);
              return newTurn(s.id, `first-${thread}`, {
                state: opened ? 'sending' : 'queued',
                attempts: opened ? 1 : 0,
                firstSentAt: opened ? T0 : null,
              });
            },
            { inboundEvent: `T01:Ev-${thread}` },
          ),
        ),
      );
      expect(told.sort()).toStrictEqual(threads);
      results.forEach((r, i) => {
        const thread = threads[i] ?? '';
        expect(r.session).toStrictEqual(freshSession(thread));
        expect(r.created).toBe(true);
        expect(r.turn).toMatchObject({
          id: `first-${thread}`,
          sessionId: sessionIdOf(key(thread)),
          seq: 1,
          state: 'sending',
          attempts: 1,
          firstSentAt: T0,
        });
      });
      for (const [i, thread] of threads.entries()) {
        expect(await c.store.getTurn(`first-${thread}`)).toStrictEqual(results[i]?.turn);
        expect(await c.store.claimInboundEvent(`T01:Ev-${thread}`, T0 + 1)).toBe(false);
      }
      // Each session counts its first turn: the next one is numbered 2.
      const next = await c.store.openSessionAndAddTurn(init('t3'), (s) => newTurn(s.id, 'second-t3'));
      expect(next.turn.seq).toBe(2);
    });

    it('opens the session when its first turn has an id another turn holds, answering with that turn', async () => {
      const other = await c.session('other');
      const holder = await c.added(newTurn(other.id, 'taken'));
      const result = await c.store.openSessionAndAddTurn(init('fresh'), (s) =>
        newTurn(s.id, 'taken', { chatMessageId: 'chat-fresh' }),
      );
      expect(result).toStrictEqual({ session: freshSession('fresh'), turn: holder, created: false });
      expect(await c.store.getSession(sessionIdOf(key('fresh')))).toStrictEqual(freshSession('fresh'));
      // The repeat used up no number of the new session.
      const next = await c.store.openSessionAndAddTurn(init('fresh'), (s) => newTurn(s.id, 'fresh-1'));
      expect(next.turn).toMatchObject({ seq: 1, sessionId: sessionIdOf(key('fresh')) });
    });

    it('opens one session when ten messages of a new thread arrive at once, numbering them 1 to 10', async () => {
      // Only the call that created the session is told so, and its turn is the session's first.
      const openedBy: string[] = [];
      const results = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          c.store.openSessionAndAddTurn(init('race', `ns/b${i}`, T0 + i), (s, opened) => {
            if (opened) openedBy.push(`r${i}`);
            return newTurn(s.id, `r${i}`);
          }),
        ),
      );
      expect(openedBy).toHaveLength(1);
      expect(results.find((r) => r.turn.id === openedBy[0])?.turn.seq).toBe(1);
      expect(results.every((r) => r.created)).toBe(true);
      expect(new Set(results.map((r) => r.session.id)).size).toBe(1);
      const kept = await c.store.getSession(sessionIdOf(key('race')));
      expect(results.every((r) => r.session.binding === kept?.binding)).toBe(true);
      const seqs = results.map((r) => r.turn.seq).sort((x, y) => x - y);
      expect(seqs).toStrictEqual(Array.from({ length: 10 }, (_, i) => i + 1));
    });
  });
}
