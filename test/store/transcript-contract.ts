import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { SessionStore } from '../../src/core/store.js';
import type { TranscriptScope, TranscriptStore } from '../../src/core/transcript-store.js';

/**
 * What every TranscriptStore must do (the web chat's threads across restarts), one suite both
 * databases run beside the session and trigger stores' suites. `open` returns the stores of an
 * empty database; the suite migrates it.
 */

export interface OpenedTranscripts {
  sessions: SessionStore;
  transcripts: TranscriptStore;
}

const T0 = 1_700_000_000_000;
const WEB: TranscriptScope = { surface: 'webchat', workspaceId: 'local' };
const thread = (threadId: string, updatedAt: number, title = threadId) => ({
  threadId,
  binding: 'default/demo',
  title,
  createdAt: T0,
  updatedAt,
});
const message = (threadId: string, seq: number, text: string) => ({
  threadId,
  seq,
  body: JSON.stringify({ text }),
  updatedAt: T0 + seq,
});

export function transcriptStoreContract(name: string, open: () => Promise<OpenedTranscripts>): void {
  describe(`TranscriptStore contract: ${name}`, () => {
    let opened: OpenedTranscripts;
    let store: TranscriptStore;

    beforeEach(async () => {
      opened = await open();
      await opened.sessions.migrate();
      store = opened.transcripts;
    });

    afterEach(async () => {
      await opened.sessions.close();
    });

    it('reads back threads newest first, their messages in order, a rewritten message as last written', async () => {
      await store.saveTranscript({
        scope: WEB,
        threads: [thread('t-a', T0 + 1), thread('t-b', T0 + 2)],
        messages: [message('t-a', 1, 'hi'), message('t-a', 2, 'answer, growing'), message('t-b', 1, 'other')],
        keepPerThread: 10,
      });
      await store.saveTranscript({
        scope: WEB,
        threads: [thread('t-a', T0 + 3, 'renamed')],
        messages: [message('t-a', 2, 'answer, complete')],
        keepPerThread: 10,
      });
      const kept = await store.loadTranscripts(WEB, { threads: 10, messagesPerThread: 10 });
      expect(kept.map((k) => [k.thread.threadId, k.thread.title, k.thread.updatedAt])).toEqual([
        ['t-a', 'renamed', T0 + 3],
        ['t-b', 't-b', T0 + 2],
      ]);
      expect(kept[0]?.thread).toMatchObject({ binding: 'default/demo', createdAt: T0 });
      expect(kept[0]?.messages.map((m) => [m.seq, JSON.parse(m.body).text])).toEqual([
        [1, 'hi'],
        [2, 'answer, complete'],
      ]);
    });

    it('keeps a thread to its newest messages, and reads back only the newest threads', async () => {
      const messages = Array.from({ length: 7 }, (_, i) => message('t-a', i + 1, `m${i + 1}`));
      await store.saveTranscript({ scope: WEB, threads: [thread('t-a', T0)], messages, keepPerThread: 3 });
      await store.saveTranscript({
        scope: WEB,
        threads: [thread('t-b', T0 + 1), thread('t-c', T0 + 2)],
        messages: [],
        keepPerThread: 3,
      });
      const all = await store.loadTranscripts(WEB, { threads: 10, messagesPerThread: 10 });
      expect(all.find((k) => k.thread.threadId === 't-a')?.messages.map((m) => m.seq)).toEqual([5, 6, 7]);
      const newest = await store.loadTranscripts(WEB, { threads: 2, messagesPerThread: 2 });
      expect(newest.map((k) => k.thread.threadId)).toEqual(['t-c', 't-b']);
    });

    it('keeps each workspace apart: the same thread id in another scope is another thread', async () => {
      const other: TranscriptScope = { surface: 'webchat', workspaceId: 'elsewhere' };
      await store.saveTranscript({
        scope: WEB,
        threads: [thread('t-a', T0)],
        messages: [message('t-a', 1, 'local')],
        keepPerThread: 5,
      });
      await store.saveTranscript({
        scope: other,
        threads: [thread('t-a', T0)],
        messages: [message('t-a', 1, 'elsewhere')],
        keepPerThread: 5,
      });
      const local = await store.loadTranscripts(WEB, { threads: 5, messagesPerThread: 5 });
      expect(local.map((k) => JSON.parse(k.messages[0]?.body ?? '{}').text)).toEqual(['local']);
    });
  });
}
