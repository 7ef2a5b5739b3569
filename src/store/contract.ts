import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LeaseLostError, StaleWriteError, StoreError } from '../core/errors.js';
import {
  type NewTurn,
  type PendingQuestion,
  type RecordedTask,
  type SessionKey,
  type SessionRecord,
  type SessionStore,
  sessionIdOf,
  type TurnKind,
  type TurnRecord,
  type TurnState,
} from '../core/store.js';

/**
 * The behaviour every SessionStore must have, as one suite both implementations run
 * (sqlite-store.test.ts, postgres-store.test.ts). `open` returns a store on an empty database;
 * the suite migrates it itself, since migrate() is part of the port.
 */

/** A realistic clock (ms since epoch, beyond 32 bits) so bigint columns are exercised. */
const T0 = 1_700_000_000_000;
const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;

function key(threadId: string, overrides: Partial<SessionKey> = {}): SessionKey {
  return { surface: 'slack', workspaceId: 'T01', channelId: 'C01', threadId, ...overrides };
}

function newTurn(sessionId: string, id: string, overrides: Partial<NewTurn> = {}): NewTurn {
  return {
    id,
    sessionId,
    kind: 'message',
    chatMessageId: `chat-${id}`,
    text: `text of ${id}`,
    label: null,
    metadata: { actor: { id: 'U01', name: 'Ada' } },
    taskId: null,
    state: 'queued',
    outcome: null,
    attempts: 0,
    firstSentAt: null,
    busyNoticeAt: null,
    answerRef: null,
    traceContext: null,
    now: T0,
    ...overrides,
  };
}

function task(turnId: string): RecordedTask {
  return { taskId: `task-${turnId}`, turnId, state: 'working', lastActivityAt: T0 + 5, streamLostAt: null };
}

function question(): PendingQuestion {
  return {
    taskId: 'task-q',
    contextId: 'ctx-q',
    kind: 'structured',
    questionKey: 'status-msg-1',
    askedAt: T0 + 10,
    expiresAt: T0 + 10 + 15 * MINUTE,
    promptRef: 'C01/1700000000.000100',
    payload: [{ tool: 'delete_pod', args: { name: 'web-1', force: true } }, null, 3.5],
  };
}

export function storeContract(
  name: string,
  open: () => Promise<SessionStore>,
  close: (store: SessionStore) => Promise<void> = (store) => store.close(),
): void {
  describe(`SessionStore contract: ${name}`, () => {
    let store: SessionStore;

    beforeEach(async () => {
      store = await open();
      await store.migrate();
    });

    afterEach(async () => {
      await close(store);
    });

    async function session(threadId: string, overrides: Partial<SessionKey> = {}): Promise<SessionRecord> {
      return store.openSession({ key: key(threadId, overrides), binding: 'team-a/support', now: T0 });
    }

    async function added(turn: NewTurn): Promise<TurnRecord> {
      const result = await store.addTurn(turn);
      expect(result.created).toBe(true);
      return result.turn;
    }

    async function stored(id: string): Promise<TurnRecord> {
      const turn = await store.getTurn(id);
      if (turn === undefined) throw new Error(`turn ${id} is not stored`);
      return turn;
    }

    describe('sessions', () => {
      it('creates a session for a new key, with the binding and nothing recorded yet', async () => {
        const created = await session('1700000000.000100');
        expect(created).toStrictEqual({
          id: sessionIdOf(key('1700000000.000100')),
          key: key('1700000000.000100'),
          binding: 'team-a/support',
          contextId: null,
          task: null,
          question: null,
          lastQuestionKey: null,
          version: 1,
          createdAt: T0,
          updatedAt: T0,
        });
        expect(await store.getSession(created.id)).toStrictEqual(created);
      });

      it('gets the existing session for a key it has seen, keeping its binding', async () => {
        const first = await session('t1');
        const again = await store.openSession({ key: key('t1'), binding: 'team-b/other', now: T0 + MINUTE });
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
        expect((await store.getSession(a.id))?.key.workspaceId).toBe('T01');
        expect((await store.getSession(b.id))?.key.workspaceId).toBe('T02');
      });

      it('does not confuse keys whose parts contain the separator', async () => {
        const a = await session('c', { channelId: 'a:b' });
        const b = await session('b:c', { channelId: 'a' });
        expect(a.id).not.toBe(b.id);
        expect((await store.getSession(a.id))?.key).toStrictEqual(key('c', { channelId: 'a:b' }));
        expect((await store.getSession(b.id))?.key).toStrictEqual(key('b:c', { channelId: 'a' }));
      });

      it('creates one session when the same key is opened concurrently', async () => {
        const opened = await Promise.all(
          Array.from({ length: 10 }, (_, i) =>
            store.openSession({ key: key('race'), binding: `ns/b${i}`, now: T0 + i }),
          ),
        );
        expect(new Set(opened.map((s) => s.id)).size).toBe(1);
        const kept = await store.getSession(sessionIdOf(key('race')));
        expect(opened.every((s) => s.binding === kept?.binding && s.createdAt === kept?.createdAt)).toBe(
          true,
        );
      });

      it('returns undefined for an unknown session', async () => {
        expect(await store.getSession('slack:T01:C01:nope')).toBeUndefined();
      });
    });

    describe('turns', () => {
      it('adds a turn with seq 1 and every field as given', async () => {
        const s = await session('t1');
        const result = await store.addTurn(
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
        expect(await store.getTurn('m1')).toStrictEqual(expected);
      });

      it("keeps a turn's trace context as written when it was added, and never changes it", async () => {
        const s = await session('t1');
        const context = {
          traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
          tracestate: 'vendor=a,other=b',
        };
        const t = await added(newTurn(s.id, 'traced', { traceContext: context }));
        expect(t.traceContext).toStrictEqual(context);
        expect((await store.getTurn('traced'))?.traceContext).toStrictEqual(context);
        // A commit that carries another (or none) leaves the stored one: it names the first span.
        await store.commit({
          turns: [{ ...t, state: 'accepted', traceContext: null }],
          now: T0 + 1,
        });
        const after = await store.getTurn('traced');
        expect(after?.state).toBe('accepted');
        expect(after?.traceContext).toStrictEqual(context);
        const [open] = await store.openTurns(s.id);
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
        await store.commit({
          turns: [{ ...t, state: 'sending', text: 'hello, with carried replies', attempts: 1 }],
          now: T0 + 1,
        });
        expect(await store.getTurn('labelled')).toMatchObject({ label, text: 'hello, with carried replies' });
        expect((await store.openTurns(s.id))[0]).toMatchObject({
          label,
          text: 'hello, with carried replies',
        });
        const bare = await added(newTurn(s.id, 'bare', { label: null, text: 'no label\nat all' }));
        expect(bare).toMatchObject({ label: null, text: 'no label\nat all' });
        expect(await store.getTurn('bare')).toMatchObject({ label: null, text: 'no label\nat all' });
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
            expect(await store.getTurn(turn.id)).toMatchObject({ kind, state });
          }
        }
      });

      it('does not add a turn twice with the same id, returning the original', async () => {
        const s = await session('t1');
        const original = await added(newTurn(s.id, 'm1'));
        const again = await store.addTurn(newTurn(s.id, 'm1', { chatMessageId: 'other', text: 'changed' }));
        expect(again).toStrictEqual({ turn: original, created: false });
        expect(await store.openTurns(s.id)).toStrictEqual([original]);
      });

      it('does not add a turn twice for the same chat message in a session, returning the original', async () => {
        const s = await session('t1');
        const original = await added(newTurn(s.id, 'm1', { chatMessageId: '1700000000.000200' }));
        const again = await store.addTurn(newTurn(s.id, 'm2', { chatMessageId: '1700000000.000200' }));
        expect(again).toStrictEqual({ turn: original, created: false });
        expect(await store.getTurn('m2')).toBeUndefined();
        expect(await store.openTurns(s.id)).toStrictEqual([original]);
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
        await store.addTurn(newTurn(a.id, 'a1'));
        expect((await added(newTurn(a.id, 'a4'))).seq).toBe(4);
      });

      it('gives 20 concurrent adds to one session 20 distinct seqs', async () => {
        const s = await session('busy');
        const results = await Promise.all(
          Array.from({ length: 20 }, (_, i) => store.addTurn(newTurn(s.id, `m${i}`))),
        );
        expect(results.every((r) => r.created)).toBe(true);
        const seqs = results.map((r) => r.turn.seq).sort((x, y) => x - y);
        expect(seqs).toStrictEqual(Array.from({ length: 20 }, (_, i) => i + 1));
        const open = await store.openTurns(s.id);
        expect(open.map((t) => t.seq)).toStrictEqual(seqs);
      });

      it('creates a turn once when the same turn is added concurrently', async () => {
        const s = await session('dup');
        const results = await Promise.all(
          Array.from({ length: 10 }, () => store.addTurn(newTurn(s.id, 'm1'))),
        );
        expect(results.filter((r) => r.created)).toHaveLength(1);
        expect(new Set(results.map((r) => JSON.stringify(r.turn))).size).toBe(1);
        expect(await store.openTurns(s.id)).toHaveLength(1);
      });

      it('refuses a turn for a session that does not exist', async () => {
        await expect(store.addTurn(newTurn('slack:T01:C01:none', 'm1'))).rejects.toBeInstanceOf(StoreError);
        expect(await store.getTurn('m1')).toBeUndefined();
      });

      it('returns undefined for an unknown turn', async () => {
        expect(await store.getTurn('nope')).toBeUndefined();
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
        await store.commit({ turns: [{ ...m2, state: 'settled', outcome: 'completed' }], now: T0 + 1 });
        await store.commit({ turns: [{ ...m3, state: 'sending' }], now: T0 + 2 });
        expect((await store.openTurns(s.id)).map((t) => [t.id, t.seq, t.state])).toStrictEqual([
          [m1.id, 1, 'queued'],
          [m3.id, 3, 'sending'],
        ]);
        expect(await store.openTurns('slack:T01:C01:none')).toStrictEqual([]);
      });
    });

    describe('answer refs', () => {
      it("records a turn's answer ref alone, without touching the session version", async () => {
        const s = await session('ref-1');
        await added(newTurn(s.id, 'ref-turn-1'));
        await store.setAnswerRef('ref-turn-1', 'C01/1700000000.000200', T0 + 1);
        expect((await stored('ref-turn-1')).answerRef).toBe('C01/1700000000.000200');
        expect((await store.getSession(s.id))?.version).toBe(s.version);
      });

      it('keeps a ref once set when a commit carries a null one', async () => {
        const s = await session('ref-2');
        const turn = await added(newTurn(s.id, 'ref-turn-2'));
        await store.setAnswerRef('ref-turn-2', 'answer-9', T0 + 1);
        await store.commit({
          session: s,
          turns: [{ ...turn, state: 'settled', outcome: 'completed' }],
          now: T0 + 2,
        });
        const after = await stored('ref-turn-2');
        expect(after.state).toBe('settled');
        expect(after.answerRef).toBe('answer-9');
      });
    });

    describe('commit', () => {
      it('writes the session and its turns, bumping the version and stamping the time', async () => {
        const s = await session('t1');
        const m1 = await added(newTurn(s.id, 'm1'));
        const m2 = await added(newTurn(s.id, 'm2'));
        const next: SessionRecord = { ...s, contextId: 'ctx-1', task: task('m1'), lastQuestionKey: 'k0' };
        const written = await store.commit({
          session: next,
          turns: [
            { ...m1, state: 'accepted', taskId: 'task-m1', attempts: 1, firstSentAt: T0 + 1 },
            { ...m2, busyNoticeAt: T0 + 2, answerRef: 'C01/123', outcome: 'error:agent_busy' },
          ],
          now: T0 + 3,
        });
        const expected = { ...next, version: 2, updatedAt: T0 + 3 };
        expect(written).toStrictEqual(expected);
        expect(await store.getSession(s.id)).toStrictEqual(expected);
        expect(await store.getTurn('m1')).toStrictEqual({
          ...m1,
          state: 'accepted',
          taskId: 'task-m1',
          attempts: 1,
          firstSentAt: T0 + 1,
          updatedAt: T0 + 3,
        });
        expect(await store.getTurn('m2')).toStrictEqual({
          ...m2,
          busyNoticeAt: T0 + 2,
          answerRef: 'C01/123',
          outcome: 'error:agent_busy',
          updatedAt: T0 + 3,
        });
      });

      it('bumps the version on every write', async () => {
        const s = await session('t1');
        const v2 = await store.commit({ session: { ...s, contextId: 'c' }, now: T0 + 1 });
        if (v2 === undefined) throw new Error('commit returned no session');
        const v3 = await store.commit({ session: { ...v2, lastQuestionKey: 'q' }, now: T0 + 2 });
        expect([s.version, v2.version, v3?.version]).toStrictEqual([1, 2, 3]);
        expect((await store.getSession(s.id))?.version).toBe(3);
      });

      it('refuses a stale version with StaleWriteError and writes none of the commit', async () => {
        const s = await session('t1');
        const m1 = await added(newTurn(s.id, 'm1'));
        await store.commit({ session: { ...s, contextId: 'winner' }, now: T0 + 1 });
        const stale = store.commit({
          session: { ...s, contextId: 'loser', task: task('m1') },
          turns: [{ ...m1, state: 'sending', attempts: 1 }],
          now: T0 + 2,
        });
        await expect(stale).rejects.toBeInstanceOf(StaleWriteError);
        await expect(stale).rejects.toMatchObject({ code: 'stale_write' });
        expect(await store.getSession(s.id)).toMatchObject({ contextId: 'winner', task: null, version: 2 });
        expect(await store.getTurn('m1')).toStrictEqual(m1);
      });

      it('lets exactly one of several concurrent commits of the same version win', async () => {
        const s = await session('t1');
        const results = await Promise.allSettled(
          Array.from({ length: 8 }, (_, i) =>
            store.commit({ session: { ...s, contextId: `ctx-${i}` }, now: T0 + 1 + i }),
          ),
        );
        const won = results.filter((r) => r.status === 'fulfilled');
        const lost = results.filter((r) => r.status === 'rejected');
        expect(won).toHaveLength(1);
        expect(lost.every((r) => r.reason instanceof StaleWriteError)).toBe(true);
        const winner = won[0]?.value;
        expect(await store.getSession(s.id)).toStrictEqual(winner);
        expect(winner?.version).toBe(2);
      });

      it('writes turns alone without touching the session, returning undefined', async () => {
        const s = await session('t1');
        const m1 = await added(newTurn(s.id, 'm1'));
        expect(await store.commit({ turns: [{ ...m1, state: 'sending' }], now: T0 + 1 })).toBeUndefined();
        expect((await store.getTurn('m1'))?.state).toBe('sending');
        expect(await store.getSession(s.id)).toStrictEqual(s);
      });

      it('writes nothing when one of its turns does not exist', async () => {
        const s = await session('t1');
        const m1 = await added(newTurn(s.id, 'm1'));
        const ghost: TurnRecord = { ...m1, id: 'ghost', chatMessageId: 'ghost' };
        const failed = store.commit({
          session: { ...s, contextId: 'ctx' },
          turns: [{ ...m1, state: 'settled' }, ghost],
          now: T0 + 1,
        });
        await expect(failed).rejects.toBeInstanceOf(StoreError);
        expect(await store.getSession(s.id)).toStrictEqual(s);
        expect(await store.getTurn('m1')).toStrictEqual(m1);
      });
    });

    describe('fencing', () => {
      it('commits while the fencing owner holds the lease', async () => {
        const s = await session('t1');
        const m1 = await added(newTurn(s.id, 'm1'));
        expect(await store.acquireLease(s.id, 'replica-a', T0, MINUTE)).toBe(true);
        const written = await store.commit({
          session: { ...s, contextId: 'ctx' },
          turns: [{ ...m1, state: 'sending' }],
          now: T0 + MINUTE - 1,
          fence: { owner: 'replica-a' },
        });
        expect(written?.contextId).toBe('ctx');
        expect((await store.getTurn('m1'))?.state).toBe('sending');
      });

      it('throws LeaseLostError and writes nothing when another replica holds the lease', async () => {
        const s = await session('t1');
        const m1 = await added(newTurn(s.id, 'm1'));
        expect(await store.acquireLease(s.id, 'replica-b', T0, MINUTE)).toBe(true);
        const fenced = store.commit({
          session: { ...s, contextId: 'ctx' },
          turns: [{ ...m1, state: 'sending' }],
          now: T0 + 1,
          fence: { owner: 'replica-a' },
        });
        await expect(fenced).rejects.toBeInstanceOf(LeaseLostError);
        await expect(fenced).rejects.toMatchObject({ code: 'lease_lost' });
        expect(await store.getSession(s.id)).toStrictEqual(s);
        expect(await store.getTurn('m1')).toStrictEqual(m1);
      });

      it('throws LeaseLostError when the owner’s lease has expired, even if nobody took it', async () => {
        const s = await session('t1');
        expect(await store.acquireLease(s.id, 'replica-a', T0, MINUTE)).toBe(true);
        const fenced = store.commit({
          session: { ...s, contextId: 'late' },
          now: T0 + MINUTE,
          fence: { owner: 'replica-a' },
        });
        await expect(fenced).rejects.toBeInstanceOf(LeaseLostError);
        expect(await store.getSession(s.id)).toStrictEqual(s);
      });

      it('throws LeaseLostError when there is no lease at all', async () => {
        const s = await session('t1');
        await expect(
          store.commit({ session: { ...s, contextId: 'x' }, now: T0, fence: { owner: 'replica-a' } }),
        ).rejects.toBeInstanceOf(LeaseLostError);
        expect(await store.getSession(s.id)).toStrictEqual(s);
      });

      it('fences a turns-only commit on the lease of the turns’ session', async () => {
        const s = await session('t1');
        const m1 = await added(newTurn(s.id, 'm1'));
        expect(await store.acquireLease(s.id, 'replica-b', T0, MINUTE)).toBe(true);
        await expect(
          store.commit({ turns: [{ ...m1, state: 'settled' }], now: T0 + 1, fence: { owner: 'replica-a' } }),
        ).rejects.toBeInstanceOf(LeaseLostError);
        expect(await store.getTurn('m1')).toStrictEqual(m1);
      });

      it('prefers LeaseLostError to StaleWriteError when both apply', async () => {
        const s = await session('t1');
        await store.commit({ session: s, now: T0 + 1 });
        await expect(
          store.commit({ session: s, now: T0 + 2, fence: { owner: 'replica-a' } }),
        ).rejects.toBeInstanceOf(LeaseLostError);
      });
    });

    describe('leases', () => {
      const id = 'slack:T01:C01:leased';

      it('takes a free lease, and refuses it to another owner while it lasts', async () => {
        expect(await store.acquireLease(id, 'a', T0, MINUTE)).toBe(true);
        expect(await store.acquireLease(id, 'b', T0 + MINUTE - 1, MINUTE)).toBe(false);
        expect(await store.renewLeases('a', T0 + 1, MINUTE)).toStrictEqual([id]);
      });

      it('gives a free lease to exactly one of several owners asking at once', async () => {
        const results = await Promise.all(
          Array.from({ length: 8 }, (_, i) => store.acquireLease(id, `r${i}`, T0, MINUTE)),
        );
        expect(results.filter(Boolean)).toHaveLength(1);
        const winner = `r${results.indexOf(true)}`;
        expect(await store.renewLeases(winner, T0 + 1, MINUTE)).toStrictEqual([id]);
      });

      it('lets another owner take over a lease once it has expired', async () => {
        expect(await store.acquireLease(id, 'a', T0, MINUTE)).toBe(true);
        expect(await store.acquireLease(id, 'b', T0 + MINUTE, MINUTE)).toBe(true);
        expect(await store.acquireLease(id, 'a', T0 + MINUTE + 1, MINUTE)).toBe(false);
        expect(await store.renewLeases('a', T0 + MINUTE + 1, MINUTE)).toStrictEqual([]);
        expect(await store.renewLeases('b', T0 + MINUTE + 1, MINUTE)).toStrictEqual([id]);
      });

      it('renews a lease its owner acquires again, extending it', async () => {
        expect(await store.acquireLease(id, 'a', T0, MINUTE)).toBe(true);
        expect(await store.acquireLease(id, 'a', T0 + 30_000, MINUTE)).toBe(true);
        // Past the first expiry, within the renewed one.
        expect(await store.acquireLease(id, 'b', T0 + MINUTE + 1, MINUTE)).toBe(false);
        expect(await store.acquireLease(id, 'b', T0 + 30_000 + MINUTE, MINUTE)).toBe(true);
      });

      it('renews every live lease of an owner and returns the ids it still holds', async () => {
        for (const [sessionId, owner] of [
          ['s2', 'a'],
          ['s1', 'a'],
          ['s3', 'b'],
        ] as const) {
          expect(await store.acquireLease(sessionId, owner, T0, MINUTE)).toBe(true);
        }
        expect(await store.acquireLease('s4', 'a', T0 - MINUTE, MINUTE)).toBe(true); // expires at T0
        expect(await store.renewLeases('a', T0 + 1, 10 * MINUTE)).toStrictEqual(['s1', 's2']);
        // Renewed until T0 + 1 + 10 min: still held after the original minute.
        expect(await store.acquireLease('s1', 'b', T0 + 5 * MINUTE, MINUTE)).toBe(false);
        expect(await store.acquireLease('s3', 'a', T0 + 1, MINUTE)).toBe(false);
        expect(await store.renewLeases('c', T0, MINUTE)).toStrictEqual([]);
      });

      it('releases a lease so another owner can take it at once, but only for its owner', async () => {
        expect(await store.acquireLease(id, 'a', T0, MINUTE)).toBe(true);
        await store.releaseLease(id, 'b');
        expect(await store.acquireLease(id, 'b', T0 + 1, MINUTE)).toBe(false);
        await store.releaseLease(id, 'a');
        expect(await store.acquireLease(id, 'b', T0 + 2, MINUTE)).toBe(true);
        expect(await store.renewLeases('a', T0 + 3, MINUTE)).toStrictEqual([]);
      });
    });

    describe('sessionsWithWork', () => {
      it('lists sessions with an open turn, a recorded task or a pending question, and no others', async () => {
        expect(await store.sessionsWithWork()).toStrictEqual([]);
        await session('idle');
        const withTurn = await session('turn');
        const withTask = await session('task');
        const withQuestion = await session('question');
        const settled = await session('settled');
        await added(newTurn(withTurn.id, 't1'));
        const done = await added(newTurn(settled.id, 'd1'));
        await store.commit({ turns: [{ ...done, state: 'settled', outcome: 'completed' }], now: T0 + 1 });
        await store.commit({ session: { ...withTask, task: task('x') }, now: T0 + 1 });
        await store.commit({ session: { ...withQuestion, question: question() }, now: T0 + 1 });

        const expected = [withTurn.id, withTask.id, withQuestion.id].sort();
        // Neither the idle session nor the one whose only turn settled.
        expect(await store.sessionsWithWork()).toStrictEqual(expected);

        const turn = await stored('t1');
        await store.commit({ turns: [{ ...turn, state: 'settled' }], now: T0 + 2 });
        expect(await store.sessionsWithWork()).toStrictEqual([withTask.id, withQuestion.id].sort());
      });
    });

    describe('inbound events', () => {
      it('claims an event key once', async () => {
        expect(await store.claimInboundEvent('Ev01', T0)).toBe(true);
        expect(await store.claimInboundEvent('Ev01', T0 + 1)).toBe(false);
        expect(await store.claimInboundEvent('Ev02', T0 + 1)).toBe(true);
      });

      it('claims the event a turn came from in the transaction that stores the turn', async () => {
        const s = await session('t-1');
        const first = await store.addTurn(newTurn(s.id, 'm1'), { inboundEvent: 'T1:Ev01' });
        expect(first.created).toBe(true);
        expect(await store.claimInboundEvent('T1:Ev01', T0 + 1)).toBe(false);
        // A redelivery of the same event finds the turn it stored, and adds nothing.
        const again = await store.addTurn(newTurn(s.id, 'm1'), { inboundEvent: 'T1:Ev01' });
        expect(again.created).toBe(false);
      });

      it('leaves the event unclaimed when its turn cannot be stored: both or neither', async () => {
        await expect(
          store.addTurn(newTurn('no-such-session', 'm1'), { inboundEvent: 'T1:Ev02' }),
        ).rejects.toBeInstanceOf(StoreError);
        expect(await store.claimInboundEvent('T1:Ev02', T0 + 1)).toBe(true);
      });

      it('still stores a turn whose event was claimed before (by an older build) but never stored', async () => {
        const s = await session('t-1');
        expect(await store.claimInboundEvent('T1:Ev03', T0)).toBe(true);
        const result = await store.addTurn(newTurn(s.id, 'm1'), { inboundEvent: 'T1:Ev03' });
        expect(result.created).toBe(true);
      });

      it('remembers a key for 24 hours, then forgets it', async () => {
        expect(await store.claimInboundEvent('Ev01', T0)).toBe(true);
        expect(await store.claimInboundEvent('Ev01', T0 + DAY)).toBe(false);
        expect(await store.claimInboundEvent('Ev01', T0 + DAY + 1)).toBe(true);
        expect(await store.claimInboundEvent('Ev01', T0 + DAY + 2)).toBe(false);
      });
    });

    describe('round trips', () => {
      it('keeps JSON, nulls and unicode exactly', async () => {
        const s = await store.openSession({
          key: { surface: 'slack', workspaceId: 'T0ü', channelId: 'C/ 🚀', threadId: '17.5%' },
          binding: 'ns/bïnding',
          now: T0,
        });
        const metadata = {
          actor: { id: 'U01', name: 'Zoë «Δ» 李', email: null },
          flags: [true, false, null, 0, -1.5, 1e-7, Number.MAX_SAFE_INTEGER],
          empty: {},
          none: [],
          'key with "quotes" and \\ backslash': 'tab\tnewline\n',
        };
        const text = 'héllo 👋🏽 — שלום — こんにちは\n`code` <b>&amp;</b> \u200b';
        const m1 = await added(newTurn(s.id, 'mé-1', { text, metadata, chatMessageId: '1700000000.000300' }));
        const m2 = await added(newTurn(s.id, 'm2', { metadata: null, text: '' }));
        expect(await store.getTurn('mé-1')).toStrictEqual({ ...m1, text, metadata });
        expect(await store.getTurn('m2')).toStrictEqual(m2);
        expect([m2.metadata, m2.text]).toStrictEqual([null, '']);

        const q = question();
        const t: RecordedTask = { ...task('mé-1'), streamLostAt: T0 + 99 };
        const written = await store.commit({
          session: { ...s, contextId: 'ctx-ü', task: t, question: q, lastQuestionKey: q.questionKey },
          now: T0 + 1,
        });
        const read = await store.getSession(s.id);
        expect(read).toStrictEqual(written);
        expect(read?.question).toStrictEqual(q);
        expect(read?.task).toStrictEqual(t);
        expect(read?.key).toStrictEqual(s.key);

        const cleared = await store.commit({
          session: {
            ...(read ?? s),
            task: null,
            question: { ...q, payload: null, expiresAt: null, kind: 'auth' },
          },
          now: T0 + 2,
        });
        expect((await store.getSession(s.id))?.question).toStrictEqual(cleared?.question);
        expect((await store.getSession(s.id))?.task).toBeNull();
      });

      it('keeps a 1 MB text intact', async () => {
        const s = await session('big');
        const chunk = 'line of text with ünïcödé and 🚀\n';
        const text = chunk.repeat(Math.ceil((1024 * 1024) / chunk.length));
        expect(text.length).toBeGreaterThanOrEqual(1024 * 1024);
        await added(newTurn(s.id, 'big', { text }));
        const read = await stored('big');
        expect(read.text.length).toBe(text.length);
        expect(read.text === text).toBe(true);
      });
    });

    describe('migrations', () => {
      it('migrates again without change, keeping the data', async () => {
        const s = await session('t1');
        const m1 = await added(newTurn(s.id, 'm1'));
        await store.migrate();
        await store.migrate();
        expect(await store.getSession(s.id)).toStrictEqual(s);
        expect(await store.getTurn('m1')).toStrictEqual(m1);
        expect((await added(newTurn(s.id, 'm2'))).seq).toBe(2);
      });
    });
  });
}
