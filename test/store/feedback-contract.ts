import { afterEach, describe, expect, it } from 'vitest';
import type { FeedbackRows } from '../../src/core/feedback-store.js';

/**
 * What every store's feedback rows must do (SQLite and PostgreSQL run it): the last press of a
 * person wins, a repeat changes nothing, and the presses not told to the agent yet are those of
 * the newest answer, until marked told (a change after that is told again).
 */
export function feedbackContract(
  name: string,
  open: () => Promise<{ rows: FeedbackRows; close: () => Promise<void> }>,
): void {
  describe(`feedback on answers (${name})`, () => {
    let opened: { rows: FeedbackRows; close: () => Promise<void> } | undefined;
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
