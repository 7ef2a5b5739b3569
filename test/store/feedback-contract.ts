import { afterEach, describe, expect, it } from 'vitest';
import type { FeedbackRows } from '../../src/core/feedback-store.js';
import { type SessionStore, sessionIdOf } from '../../src/core/store.js';
import { queuedTurn } from '../../testkit/turns.js';

/**
 * What every store's feedback rows must do (SQLite and PostgreSQL run it): the last press of a
 * person wins, a repeat changes nothing, and the presses not told to the agent yet are those of
 * the newest answer, until marked told (a change after that is told again).
 */
export function feedbackContract(
  name: string,
  open: () => Promise<{ rows: FeedbackRows; sessions: SessionStore; close: () => Promise<void> }>,
): void {
  describe(`feedback on answers (${name})`, () => {
    let opened: { rows: FeedbackRows; sessions: SessionStore; close: () => Promise<void> } | undefined;
    afterEach(async () => {
      await opened?.close();
      opened = undefined;
    });
    const base = { sessionId: 's1', turnId: 't1', taskId: 'task-1', actorId: 'U1' };

    it('keeps the latest press per person and answer: first, unchanged, changed', async () => {
      opened = await open();
      const { rows } = opened;
      expect(await rows.press({ ...base, value: 'positive', now: 1 })).toEqual({ kind: 'first' });
      expect(await rows.press({ ...base, value: 'positive', now: 2 })).toEqual({ kind: 'unchanged' });
      expect(await rows.press({ ...base, value: 'negative', now: 3 })).toEqual({
        kind: 'changed',
        previous: 'positive',
      });
      expect(await rows.press({ ...base, value: 'positive', now: 4 })).toEqual({
        kind: 'changed',
        previous: 'negative',
      });
      expect(await rows.untold('s1', 10)).toEqual([
        { turnId: 't1', taskId: 'task-1', actorId: 'U1', value: 'positive', updatedAt: 4 },
      ]);
    });

    it('marks a note’s presses told in the turn that carries them, and only when that turn is new', async () => {
      opened = await open();
      const { rows, sessions } = opened;
      const key = { surface: 'slack', workspaceId: 'T1', channelId: 'C1', threadId: '1.0' };
      const sessionId = sessionIdOf(key);
      await rows.press({ ...base, sessionId, value: 'negative', now: 1 });
      const add = async (id: string, chatMessageId: string) =>
        sessions.openSessionAndAddTurn(
          { key, binding: 'team/agent', now: 2 },
          (session) => queuedTurn({ id, sessionId: session.id, chatMessageId, text: 'next', now: 2 }),
          { feedbackTold: await rows.untold(sessionId, 10) },
        );
      const first = await add('turn-2', '2.0');
      expect(first.created).toBe(true);
      expect(await rows.untold(sessionId, 10)).toEqual([]);
      // A change of mind is told again; a repeat of the turn that told the first marks nothing.
      await rows.press({ ...base, sessionId, value: 'positive', now: 3 });
      const repeat = await add('turn-2', '2.0');
      expect(repeat.created).toBe(false);
      expect((await rows.untold(sessionId, 10)).map((u) => u.value)).toEqual(['positive']);
    });

    it('tells the newest answer’s presses, bounded, once; a change after is told again', async () => {
      opened = await open();
      const { rows } = opened;
      await rows.press({ ...base, value: 'negative', now: 1 });
      await rows.press({ ...base, turnId: 't2', taskId: null, actorId: 'U1', value: 'positive', now: 2 });
      await rows.press({ ...base, turnId: 't2', taskId: null, actorId: 'U2', value: 'negative', now: 3 });
      await rows.press({ ...base, sessionId: 's2', turnId: 't9', value: 'positive', now: 4 });
      const untold = await rows.untold('s1', 10);
      expect(untold.map((u) => `${u.turnId} ${u.actorId} ${u.value}`)).toEqual([
        't2 U2 negative',
        't2 U1 positive',
      ]);
      expect(await rows.untold('s1', 1)).toHaveLength(1);
      await rows.markTold('s1', untold, 'next-turn');
      // The older answer's press is what is left untold.
      expect((await rows.untold('s1', 10)).map((u) => u.turnId)).toEqual(['t1']);
      await rows.markTold('s1', await rows.untold('s1', 10), 'later-turn');
      expect(await rows.untold('s1', 10)).toEqual([]);
      await rows.press({ ...base, turnId: 't2', taskId: null, actorId: 'U2', value: 'positive', now: 5 });
      expect((await rows.untold('s1', 10)).map((u) => `${u.actorId} ${u.value}`)).toEqual(['U2 positive']);
      expect((await rows.untold('s2', 10)).map((u) => u.turnId)).toEqual(['t9']);
    });
  });
}
