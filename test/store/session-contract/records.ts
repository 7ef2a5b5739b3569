import { describe, expect, it } from 'vitest';
import { StoreError } from '../../../src/core/errors.js';
import { sessionIdOf, type TurnKind, type TurnRecord, type TurnState } from '../../../src/core/store.js';
import { type ContractContext, freshSession, key, MINUTE, newTurn, T0 } from './fixtures.js';

/**
 * Part of the SessionStore contract: sessions, turns and answer refs (what a session and its
 * turns hold, and that a turn is added once).
 */
export function recordsContract(c: ContractContext): void {
  const { session, added, stored } = c;
  describe('sessions', () => {
    it('creates a session for a new key, with the binding and nothing recorded yet', async () => {
      const created = await session('1700000000.000100');
      expect(created).toStrictEqual(freshSession('1700000000.000100'));
      expect(await c.store.getSession(created.id)).toStrictEqual(created);
    });

    it('gets the existing session for a key it has seen, keeping its binding', async () => {
      const first = await session('t1');
      const again = await c.store.openSession({ key: key('t1'), binding: 'team-b/other', now: T0 + MINUTE });
      expect(again).toStrictEqual(first);
      expect(again.binding).toBe('team-a/support');
      expect(again.createdAt).toBe(T0);
    });

    it('keeps sessions of different workspaces apart, the workspace being part of the id', async () => {
      const a = await session('t1', { workspaceId: 'T01' });
      const b = await session('t1', { workspaceId: 'T02' });
      expect(a.id).not.toBe(b.id);
      expect(a.id).toContain('T01');
      expect(b.id).toContain('T02');
      expect((await c.store.getSession(a.id))?.key.workspaceId).toBe('T01');
      expect((await c.store.getSession(b.id))?.key.workspaceId).toBe('T02');
    });

    it('does not confuse keys whose parts contain the separator', async () => {
      const a = await session('c', { channelId: 'a:b' });
      const b = await session('b:c', { channelId: 'a' });
      expect(a.id).not.toBe(b.id);
      expect((await c.store.getSession(a.id))?.key).toStrictEqual(key('c', { channelId: 'a:b' }));
      expect((await c.store.getSession(b.id))?.key).toStrictEqual(key('b:c', { channelId: 'a' }));
    });

    it('creates one session when the same key is opened concurrently', async () => {
      const opened = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          c.store.openSession({ key: key('race'), binding: `ns/b${i}`, now: T0 + i }),
        ),
      );
      expect(new Set(opened.map((s) => s.id)).size).toBe(1);
      const kept = await c.store.getSession(sessionIdOf(key('race')));
      expect(opened.every((s) => s.binding === kept?.binding && s.createdAt === kept?.createdAt)).toBe(true);
    });

    it('returns undefined for an unknown session', async () => {
      expect(await c.store.getSession('slack:T01:C01:nope')).toBeUndefined();
    });
  });

  describe('turns', () => {
    it('adds a turn with seq 1 and every field as given', async () => {
      const s = await session('t1');
      const result = await c.store.addTurn(
        newTurn(s.id, 'm1', {
          kind: 'answer',
          taskId: 'task-9',
          attempts: 2,
          answerRef: 'ref',
          label: '[Slack: Ada (U01)]',
          now: T0 + 7,
        }),
      );
      const expected: TurnRecord = {
        id: 'm1',
        sessionId: s.id,
        seq: 1,
        kind: 'answer',
        chatMessageId: 'chat-m1',
        text: 'text of m1',
        label: '[Slack: Ada (U01)]',
        metadata: { actor: { id: 'U01', name: 'Ada' } },
        taskId: 'task-9',
        state: 'queued',
        outcome: null,
        attempts: 2,
        firstSentAt: null,
        busyNoticeAt: null,
        answerRef: 'ref',
        traceContext: null,
        createdAt: T0 + 7,
        updatedAt: T0 + 7,
      };
      expect(result).toStrictEqual({ turn: expected, created: true });
      expect(await c.store.getTurn('m1')).toStrictEqual(expected);
    });

    it("keeps a turn's trace context as written when it was added, and never changes it", async () => {
      const s = await session('t1');
      const context = {
        traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
        tracestate: 'vendor=a,other=b',
      };
      const t = await added(newTurn(s.id, 'traced', { traceContext: context }));
      expect(t.traceContext).toStrictEqual(context);
      expect((await c.store.getTurn('traced'))?.traceContext).toStrictEqual(context);
      // A commit that carries another (or none) leaves the stored one: it names the first span.
      await c.store.commit({
        turns: [{ ...t, state: 'accepted', traceContext: null }],
        now: T0 + 1,
      });
      const after = await c.store.getTurn('traced');
      expect(after?.state).toBe('accepted');
      expect(after?.traceContext).toStrictEqual(context);
      const [open] = await c.store.openTurns(s.id);
      expect(open?.traceContext).toStrictEqual(context);
      const plain = await added(newTurn(s.id, 'untraced', { traceContext: { traceparent: 'x' } }));
      expect(plain.traceContext).toStrictEqual({ traceparent: 'x' });
    });

    it("keeps a person's label apart from their text, through commits that change the text", async () => {
      const s = await session('t1');
      const label = '[Slack: Ada (U01) <ada@example.com>]';
      // A text that itself starts with a label-like line keeps it: only the turn's label is apart.
      const t = await added(newTurn(s.id, 'labelled', { label, text: '[Slack: Eve (U06)]\nhello' }));
      expect(t).toMatchObject({ label, text: '[Slack: Eve (U06)]\nhello' });
      await c.store.commit({
        turns: [{ ...t, state: 'sending', text: 'hello, with carried replies', attempts: 1 }],
        now: T0 + 1,
      });
      expect(await c.store.getTurn('labelled')).toMatchObject({ label, text: 'hello, with carried replies' });
      expect((await c.store.openTurns(s.id))[0]).toMatchObject({
        label,
        text: 'hello, with carried replies',
      });
      const bare = await added(newTurn(s.id, 'bare', { label: null, text: 'no label\nat all' }));
      expect(bare).toMatchObject({ label: null, text: 'no label\nat all' });
      expect(await c.store.getTurn('bare')).toMatchObject({ label: null, text: 'no label\nat all' });
    });

    it('stores every kind and state of turn', async () => {
      const s = await session('t1');
      const kinds: Record<TurnKind, true> = { message: true, answer: true, trigger: true, context: true };
      const states: Record<TurnState, true> = {
        queued: true,
        sending: true,
        accepted: true,
        settled: true,
      };
      for (const kind of Object.keys(kinds) as TurnKind[]) {
        for (const state of Object.keys(states) as TurnState[]) {
          const turn = await added(newTurn(s.id, `${kind}-${state}`, { kind, state }));
          expect(await c.store.getTurn(turn.id)).toMatchObject({ kind, state });
        }
      }
    });

    it('does not add a turn twice with the same id, returning the original', async () => {
      const s = await session('t1');
      const original = await added(newTurn(s.id, 'm1'));
      const again = await c.store.addTurn(newTurn(s.id, 'm1', { chatMessageId: 'other', text: 'changed' }));
      expect(again).toStrictEqual({ turn: original, created: false });
      expect(await c.store.openTurns(s.id)).toStrictEqual([original]);
    });

    it('does not add a turn twice for the same chat message in a session, returning the original', async () => {
      const s = await session('t1');
      const original = await added(newTurn(s.id, 'm1', { chatMessageId: '1700000000.000200' }));
      const again = await c.store.addTurn(newTurn(s.id, 'm2', { chatMessageId: '1700000000.000200' }));
      expect(again).toStrictEqual({ turn: original, created: false });
      expect(await c.store.getTurn('m2')).toBeUndefined();
      expect(await c.store.openTurns(s.id)).toStrictEqual([original]);
    });

    it('allows the same chat message id in another session', async () => {
      const a = await session('t1');
      const b = await session('t2');
      await added(newTurn(a.id, 'a1', { chatMessageId: 'same' }));
      const other = await added(newTurn(b.id, 'b1', { chatMessageId: 'same' }));
      expect(other.sessionId).toBe(b.id);
    });

    it('numbers turns 1, 2, 3 per session, independently across sessions', async () => {
      const a = await session('a');
      const b = await session('b');
      const seqs: Array<[string, number]> = [];
      for (const [sessionId, id] of [
        [a.id, 'a1'],
        [b.id, 'b1'],
        [a.id, 'a2'],
        [a.id, 'a3'],
        [b.id, 'b2'],
      ] as const) {
        seqs.push([id, (await added(newTurn(sessionId, id))).seq]);
      }
      expect(seqs).toStrictEqual([
        ['a1', 1],
        ['b1', 1],
        ['a2', 2],
        ['a3', 3],
        ['b2', 2],
      ]);
      // A repeat is not a new turn, so it does not use up a number.
      await c.store.addTurn(newTurn(a.id, 'a1'));
      expect((await added(newTurn(a.id, 'a4'))).seq).toBe(4);
    });

    it('gives 20 concurrent adds to one session 20 distinct seqs', async () => {
      const s = await session('busy');
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) => c.store.addTurn(newTurn(s.id, `m${i}`))),
      );
      expect(results.every((r) => r.created)).toBe(true);
      const seqs = results.map((r) => r.turn.seq).sort((x, y) => x - y);
      expect(seqs).toStrictEqual(Array.from({ length: 20 }, (_, i) => i + 1));
      const open = await c.store.openTurns(s.id);
      expect(open.map((t) => t.seq)).toStrictEqual(seqs);
    });

    it('creates a turn once when the same turn is added concurrently', async () => {
      const s = await session('dup');
      const results = await Promise.all(
        Array.from({ length: 10 }, () => c.store.addTurn(newTurn(s.id, 'm1'))),
      );
      expect(results.filter((r) => r.created)).toHaveLength(1);
      expect(new Set(results.map((r) => JSON.stringify(r.turn))).size).toBe(1);
      expect(await c.store.openTurns(s.id)).toHaveLength(1);
    });

    it('refuses a turn for a session that does not exist', async () => {
      await expect(c.store.addTurn(newTurn('slack:T01:C01:none', 'm1'))).rejects.toBeInstanceOf(StoreError);
      expect(await c.store.getTurn('m1')).toBeUndefined();
    });

    it('returns undefined for an unknown turn', async () => {
      expect(await c.store.getTurn('nope')).toBeUndefined();
    });

    it('lists a session’s open turns in seq order, without settled ones or other sessions’', async () => {
      const s = await session('t1');
      const other = await session('t2');
      const [m1, m2, m3] = [
        await added(newTurn(s.id, 'm1')),
        await added(newTurn(s.id, 'm2')),
        await added(newTurn(s.id, 'm3')),
      ];
      await added(newTurn(other.id, 'o1'));
      await c.store.commit({ turns: [{ ...m2, state: 'settled', outcome: 'completed' }], now: T0 + 1 });
      await c.store.commit({ turns: [{ ...m3, state: 'sending' }], now: T0 + 2 });
      expect((await c.store.openTurns(s.id)).map((t) => [t.id, t.seq, t.state])).toStrictEqual([
        [m1.id, 1, 'queued'],
        [m3.id, 3, 'sending'],
      ]);
      expect(await c.store.openTurns('slack:T01:C01:none')).toStrictEqual([]);
    });
  });

  describe('answer refs', () => {
    it("records a turn's answer ref alone, without touching the session version", async () => {
      const s = await session('ref-1');
      await added(newTurn(s.id, 'ref-turn-1'));
      await c.store.setAnswerRef('ref-turn-1', 'C01/1700000000.000200', T0 + 1);
      expect((await stored('ref-turn-1')).answerRef).toBe('C01/1700000000.000200');
      expect((await c.store.getSession(s.id))?.version).toBe(s.version);
    });

    it('keeps a ref once set when a commit carries a null one', async () => {
      const s = await session('ref-2');
      const turn = await added(newTurn(s.id, 'ref-turn-2'));
      await c.store.setAnswerRef('ref-turn-2', 'answer-9', T0 + 1);
      await c.store.commit({
        session: s,
        turns: [{ ...turn, state: 'settled', outcome: 'completed' }],
        now: T0 + 2,
      });
      const after = await stored('ref-turn-2');
      expect(after.state).toBe('settled');
      expect(after.answerRef).toBe('answer-9');
    });
  });
}
