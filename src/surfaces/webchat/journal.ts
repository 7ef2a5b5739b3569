import type { Logger } from 'pino';
import { z } from 'zod';
import { cutText, textLength } from '../../core/text.js';
import type {
  TranscriptMessage,
  TranscriptScope,
  TranscriptStore,
  TranscriptThread,
} from '../../core/transcript-store.js';
import {
  type RestoredThread,
  type Thread,
  type ThreadBook,
  type ThreadObserver,
  WEBCHAT_SURFACE,
  WEBCHAT_WORKSPACE,
} from './threads.js';
import type { MessageView } from './view.js';

/**
 * Writes what the web chat's threads show to the store (core/transcript-store.ts) and reads it
 * back at start. A change only marks its message; a write, at most every `flushMs`, takes the
 * messages marked since the last one as they are then, so a streaming answer costs one row write
 * per interval, not one per chunk. A failed write keeps its marks and is tried again; close()
 * writes what is left (the broker calls it after the engine stopped, before the store closes).
 *
 * Bounded: a thread keeps its newest `keepPerThread` messages, a message at most `maxTextLength`
 * characters (cut with a visible mark), and start reads back the newest `keepThreads` threads.
 */

export const WEBCHAT_SCOPE: TranscriptScope = { surface: WEBCHAT_SURFACE, workspaceId: WEBCHAT_WORKSPACE };

export interface JournalOptions {
  logger: Logger;
  /** Smallest gap between two writes (default 250 ms). */
  flushMs?: number;
  /** After a failed write, the next try waits this long (default 5 s). */
  retryMs?: number;
  keepPerThread?: number;
  keepThreads?: number;
  maxTextLength?: number;
}

export const JOURNAL_DEFAULTS = {
  flushMs: 250,
  retryMs: 5_000,
  keepPerThread: 500,
  keepThreads: 200,
  maxTextLength: 100_000,
} as const;

const keptMessage = z.looseObject({
  id: z.string().regex(/^m\d+$/),
  seq: z.number().int().positive(),
  author: z.enum(['person', 'agent', 'broker']),
  kind: z.enum(['message', 'answer', 'notice', 'question', 'approval', 'tool-step']),
  text: z.string(),
  createdAt: z.string(),
  updatedAt: z.string(),
});

export class ThreadJournal implements ThreadObserver {
  readonly #store: TranscriptStore;
  readonly #logger: Logger;
  readonly #o: Required<Omit<JournalOptions, 'logger'>>;
  #marked = new Map<Thread, Set<string>>();
  #timer: NodeJS.Timeout | undefined;
  #writing: Promise<void> | undefined;
  #closed = false;

  constructor(store: TranscriptStore, options: JournalOptions) {
    this.#store = store;
    this.#logger = options.logger;
    const { logger: _logger, ...rest } = options;
    this.#o = { ...JOURNAL_DEFAULTS, ...rest };
  }

  changed(thread: Thread, messageId?: string): void {
    let ids = this.#marked.get(thread);
    if (ids === undefined) {
      ids = new Set();
      this.#marked.set(thread, ids);
    }
    if (messageId !== undefined) ids.add(messageId);
    this.#arm(this.#o.flushMs);
  }

  /** Reads the kept threads into `book` (before anything is served); returns how many. */
  async restore(book: ThreadBook): Promise<number> {
    const kept = await this.#store.loadTranscripts(WEBCHAT_SCOPE, {
      threads: this.#o.keepThreads,
      messagesPerThread: this.#o.keepPerThread,
    });
    let unreadable = 0;
    for (const { thread, messages } of kept) {
      const views: MessageView[] = [];
      for (const row of messages) {
        const view = readMessage(row);
        if (view === undefined) unreadable++;
        else views.push(view);
      }
      book.restore(restoredThread(thread, views));
    }
    // Nothing is dropped unsaid: a row this build cannot read is named in the log.
    if (unreadable > 0) this.#logger.warn({ unreadable }, 'web chat: some kept messages could not be read');
    return kept.length;
  }

  /** Writes everything marked so far (waits for a write in flight first). */
  async flush(): Promise<void> {
    while (this.#writing !== undefined) await this.#writing;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#marked.size === 0) return;
    const batch = this.#marked;
    this.#marked = new Map();
    this.#writing = this.#write(batch).finally(() => {
      this.#writing = undefined;
    });
    await this.#writing;
  }

  async close(): Promise<void> {
    await this.flush();
    this.#closed = true;
    clearTimeout(this.#timer);
  }

  async #write(batch: Map<Thread, Set<string>>): Promise<void> {
    const threads: TranscriptThread[] = [];
    const messages: TranscriptMessage[] = [];
    for (const [thread, ids] of batch) {
      const summary = thread.summary();
      threads.push({
        threadId: thread.id,
        binding: thread.binding,
        title: thread.title,
        createdAt: Date.parse(summary.createdAt),
        updatedAt: Date.parse(summary.updatedAt),
      });
      for (const id of ids) {
        const message = thread.get(id);
        if (message === undefined) continue;
        messages.push({
          threadId: thread.id,
          seq: message.seq,
          body: JSON.stringify(this.#bounded(message)),
          updatedAt: Date.parse(message.updatedAt),
        });
      }
    }
    try {
      await this.#store.saveTranscript({
        scope: WEBCHAT_SCOPE,
        threads,
        messages,
        keepPerThread: this.#o.keepPerThread,
      });
    } catch (error) {
      // Kept for the next try: marks newer than the batch join it.
      for (const [thread, ids] of batch) {
        const now = this.#marked.get(thread);
        this.#marked.set(thread, now === undefined ? ids : new Set([...ids, ...now]));
      }
      this.#logger.warn({ err: error, threads: batch.size }, 'web chat: threads not saved; trying again');
      if (!this.#closed) this.#arm(this.#o.retryMs);
    }
  }

  #bounded(message: MessageView): MessageView {
    const max = this.#o.maxTextLength;
    if (textLength(message.text) <= max) return message;
    return { ...message, text: `${cutText(message.text, max)}\n[… cut at ${max} characters when saved]` };
  }

  #arm(ms: number): void {
    if (this.#timer !== undefined || this.#closed) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      void this.flush();
    }, ms);
    this.#timer.unref();
  }
}

function readMessage(row: TranscriptMessage): MessageView | undefined {
  let body: unknown;
  try {
    body = JSON.parse(row.body);
  } catch {
    return undefined;
  }
  const parsed = keptMessage.safeParse(body);
  if (!parsed.success || parsed.data.seq !== row.seq || parsed.data.id !== `m${row.seq}`) return undefined;
  return parsed.data as MessageView;
}

function restoredThread(thread: TranscriptThread, messages: MessageView[]): RestoredThread {
  return {
    id: thread.threadId,
    binding: thread.binding,
    title: thread.title,
    createdAt: new Date(thread.createdAt).toISOString(),
    updatedAt: new Date(thread.updatedAt).toISOString(),
    messages,
  };
}
