import { describe, expect, it } from 'vitest';
import type { RecordedTask } from '../../../src/core/store.js';
import { type ContractContext, newTurn, question, T0, task } from './fixtures.js';

/** Part of the SessionStore contract: every value round-trips, and migrating again changes nothing. */
export function roundTripsContract(c: ContractContext): void {
  const { session, added, stored } = c;
  describe('round trips', () => {
    it('keeps JSON, nulls and unicode exactly', async () => {
      const s = await c.store.openSession({
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
      expect(await c.store.getTurn('mé-1')).toStrictEqual({ ...m1, text, metadata });
      expect(await c.store.getTurn('m2')).toStrictEqual(m2);
      expect([m2.metadata, m2.text]).toStrictEqual([null, '']);

      const q = question();
      const t: RecordedTask = { ...task('mé-1'), streamLostAt: T0 + 99 };
      const written = await c.store.commit({
        session: { ...s, contextId: 'ctx-ü', task: t, question: q, lastQuestionKey: q.questionKey },
        now: T0 + 1,
      });
      const read = await c.store.getSession(s.id);
      expect(read).toStrictEqual(written);
      expect(read?.question).toStrictEqual(q);
      expect(read?.task).toStrictEqual(t);
      expect(read?.key).toStrictEqual(s.key);

      const cleared = await c.store.commit({
        session: {
          ...(read ?? s),
          task: null,
          question: { ...q, payload: null, expiresAt: null, kind: 'auth' },
        },
        now: T0 + 2,
      });
      expect((await c.store.getSession(s.id))?.question).toStrictEqual(cleared?.question);
      expect((await c.store.getSession(s.id))?.task).toBeNull();
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
      await c.store.migrate();
      await c.store.migrate();
      expect(await c.store.getSession(s.id)).toStrictEqual(s);
      expect(await c.store.getTurn('m1')).toStrictEqual(m1);
      expect((await added(newTurn(s.id, 'm2'))).seq).toBe(2);
    });
  });
}
