import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { StoreError } from '../../../src/core/errors.js';
import type { TranscriptStore, TranscriptWrite } from '../../../src/core/transcript-store.js';
import { SqliteStore } from '../../../src/store/sqlite/sqlite-store.js';
import { WEBCHAT_SCOPE } from '../../../src/surfaces/webchat/journal.js';
import { WebChatSurface } from '../../../src/surfaces/webchat/surface.js';

/**
 * The web chat's journal over a real SQLite store: a streaming answer is written a few times,
 * not once per chunk; a failed write is tried again with nothing lost; an overlong message is
 * kept cut, with a mark; a second surface on the same store reads it all back.
 */

/** The real store, failing the first `failures` writes (a store that is briefly down). */
class FlakyTranscripts implements TranscriptStore {
  readonly writes: TranscriptWrite[] = [];
  constructor(
    private readonly inner: TranscriptStore,
    private failures: number,
  ) {}
  async saveTranscript(write: TranscriptWrite): Promise<void> {
    this.writes.push(write);
    if (this.failures-- > 0) throw new StoreError('the store is down');
    await this.inner.saveTranscript(write);
  }
  loadTranscripts: TranscriptStore['loadTranscripts'] = (scope, limits) =>
    this.inner.loadTranscripts(scope, limits);
}

const logger = pino({ level: 'silent' });
const until = async (ok: () => boolean, what: string): Promise<void> => {
  const deadline = Date.now() + 5_000;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`timed out: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
};

describe('web chat journal', () => {
  const stores: SqliteStore[] = [];
  afterEach(async () => {
    for (const s of stores.splice(0)) await s.close();
  });

  async function store(): Promise<SqliteStore> {
    const s = new SqliteStore(':memory:');
    await s.migrate();
    stores.push(s);
    return s;
  }

  it('writes a streaming answer a few times, retries a failed write, and reads it all back', async () => {
    const db = await store();
    const flaky = new FlakyTranscripts(db.transcripts(), 1);
    const surface = new WebChatSurface({
      transcripts: flaky,
      logger,
      journal: { flushMs: 20, retryMs: 30 },
    });
    const thread = surface.threads.create('default/demo');
    thread.add({ author: 'person', kind: 'message', text: 'hello there' });
    const answer = thread.add({ author: 'agent', kind: 'answer', text: '', final: false });
    for (let i = 0; i < 200; i++) thread.append(answer.id, `w${i} `);
    thread.change(answer.id, (m) => {
      m.final = true;
    });
    await until(() => flaky.writes.length >= 2, 'the retried write');
    await surface.close();
    // The first write failed; the retry carried everything marked, and no write per chunk.
    expect(flaky.writes.length).toBeLessThan(5);

    const again = new WebChatSurface({ transcripts: db.transcripts(), logger });
    expect(await again.restore()).toBe(1);
    const back = again.threads.get(thread.id)?.view();
    expect(back?.title).toBe('hello there');
    expect(back?.messages.map((m) => [m.id, m.kind, m.final])).toEqual([
      ['m1', 'message', undefined],
      ['m2', 'answer', true],
    ]);
    expect(back?.messages[1]?.text).toBe(thread.get(answer.id)?.text);
  });

  it('keeps an overlong message cut with a mark, and skips a row it cannot read, saying so', async () => {
    const db = await store();
    const surface = new WebChatSurface({
      transcripts: db.transcripts(),
      logger,
      journal: { flushMs: 5, maxTextLength: 10 },
    });
    const thread = surface.threads.create('default/demo');
    thread.add({ author: 'person', kind: 'message', text: 'a message far longer than ten' });
    await surface.close();
    await db.transcripts().saveTranscript({
      scope: WEBCHAT_SCOPE,
      threads: [],
      messages: [{ threadId: thread.id, seq: 2, body: '{"not":"a message"}', updatedAt: Date.now() }],
      keepPerThread: 500,
    });
    const warned: unknown[] = [];
    const listening = pino({ level: 'warn' }, { write: (line: string) => warned.push(JSON.parse(line)) });
    const again = new WebChatSurface({ transcripts: db.transcripts(), logger: listening });
    await again.restore();
    const messages = again.threads.get(thread.id)?.view().messages ?? [];
    expect(messages.map((m) => m.text)).toEqual(['a message \n[… cut at 10 characters when saved]']);
    expect(warned).toMatchObject([{ unreadable: 1, msg: 'web chat: some kept messages could not be read' }]);
    // Numbered on from the last message read back.
    expect(again.threads.get(thread.id)?.add({ author: 'person', kind: 'message', text: 'next' }).id).toBe(
      'm2',
    );
  });
});
