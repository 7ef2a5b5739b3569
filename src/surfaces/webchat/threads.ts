import { randomUUID } from 'node:crypto';
import type { SessionKey } from '../../core/store.js';
import { titleOf } from './title.js';
import type {
  ActivityView,
  MessageView,
  PromptStatus,
  ThreadEvent,
  ThreadSummary,
  ThreadView,
} from './view.js';

/**
 * The web chat's threads: what each thread shows, in order, held in memory and served from
 * there. An observer (journal.ts) is told of every change and writes it to the store, from which
 * the book is restored at start, so the list and each thread's history survive a restart.
 */

export const WEBCHAT_SURFACE = 'webchat';
export const WEBCHAT_WORKSPACE = 'local';

export type ThreadListener = (event: ThreadEvent) => void;

type NewMessage = Omit<MessageView, 'id' | 'seq' | 'createdAt' | 'updatedAt'>;

/** Told of every change of a thread (its messages by id; no id: the thread's own fields). */
export interface ThreadObserver {
  changed(thread: Thread, messageId?: string): void;
}

/** A thread as it was kept (journal.ts reads it back from the store). */
export interface RestoredThread {
  id: string;
  binding: string;
  title: string;
  createdAt: string;
  updatedAt: string;
  /** In seq order. */
  messages: MessageView[];
}

export class Thread {
  readonly id: string;
  readonly binding: string;
  readonly createdAt: string;
  #updatedAt: string;
  #title = '';
  #activity: ActivityView | null = null;
  readonly #messages: MessageView[] = [];
  readonly #byId = new Map<string, MessageView>();
  readonly #listeners = new Set<ThreadListener>();
  readonly #now: () => number;
  readonly #observer: ThreadObserver | undefined;
  #lastSeq = 0;

  constructor(
    id: string,
    binding: string,
    now: () => number,
    observer?: ThreadObserver,
    restored?: RestoredThread,
  ) {
    this.id = id;
    this.binding = binding;
    this.#now = now;
    this.#observer = observer;
    this.createdAt = restored?.createdAt ?? new Date(now()).toISOString();
    this.#updatedAt = restored?.updatedAt ?? this.createdAt;
    if (restored !== undefined) {
      this.#title = restored.title;
      for (const message of restored.messages) {
        this.#messages.push(message);
        this.#byId.set(message.id, message);
        this.#lastSeq = Math.max(this.#lastSeq, message.seq);
      }
    }
  }

  get title(): string {
    return this.#title;
  }

  get key(): SessionKey {
    return {
      surface: WEBCHAT_SURFACE,
      workspaceId: WEBCHAT_WORKSPACE,
      channelId: this.binding,
      threadId: this.id,
    };
  }

  add(message: NewMessage): MessageView {
    const at = this.#stamp();
    // Numbered on from the last one kept: a restored thread may hold only its newest messages.
    const seq = ++this.#lastSeq;
    const view: MessageView = { ...message, id: `m${seq}`, seq, createdAt: at, updatedAt: at };
    this.#messages.push(view);
    this.#byId.set(view.id, view);
    if (this.#title === '' && view.kind === 'message') this.#title = titleOf(view.text);
    this.#observer?.changed(this, view.id);
    this.#emit({ event: 'message', data: view });
    return view;
  }

  get(id: string): MessageView | undefined {
    return this.#byId.get(id);
  }

  /** Names a thread that no person started (a trigger's): its title is not a person's message. */
  entitle(title: string): void {
    if (this.#title !== '') return;
    this.#title = titleOf(title);
    this.#observer?.changed(this);
  }

  /** Changes a message in place and tells followers (they replace it by id). */
  change(id: string, apply: (message: MessageView) => void): void {
    const message = this.#byId.get(id);
    if (message === undefined) return;
    apply(message);
    message.updatedAt = this.#stamp();
    this.#observer?.changed(this, id);
    this.#emit({ event: 'message', data: message });
  }

  /** An answer grew at its end: followers get only the new text, not the whole answer again. */
  append(id: string, text: string): void {
    const message = this.#byId.get(id);
    if (message === undefined || text === '') return;
    const at = message.text.length;
    message.text += text;
    message.updatedAt = this.#stamp();
    // The observer only marks the message: it reads the text when it writes, not per chunk.
    this.#observer?.changed(this, id);
    this.#emit({ event: 'append', data: { id, at, text, updatedAt: message.updatedAt } });
  }

  /** A turn's answers still shown as streaming. */
  unsettledAnswers(turnId: string): MessageView[] {
    return this.#messages.filter((m) => m.kind === 'answer' && m.turnId === turnId && m.final !== true);
  }

  /** Prompts still open, newest last. */
  openPrompts(): MessageView[] {
    return this.#messages.filter((m) => promptStatus(m) === 'open');
  }

  setPromptStatus(id: string, status: PromptStatus, answer?: string): void {
    this.change(id, (m) => {
      if (m.question !== undefined) {
        m.question.status = status;
        if (answer !== undefined) m.question.answer = answer;
      }
      if (m.approval !== undefined) m.approval.status = status;
    });
  }

  get activity(): ActivityView | null {
    return this.#activity;
  }

  /** What the engine does for this thread now (null: nothing); followers are told of a change. */
  setActivity(activity: ActivityView | null): void {
    if (sameActivity(this.#activity, activity)) return;
    this.#activity = activity;
    this.#emit({ event: 'activity', data: { activity } });
  }

  /** Follows changes; the caller reads `view()` first, in the same tick, so nothing is missed. */
  subscribe(listener: ThreadListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  summary(): ThreadSummary {
    return {
      id: this.id,
      binding: this.binding,
      title: this.#title,
      createdAt: this.createdAt,
      updatedAt: this.#updatedAt,
      messageCount: this.#messages.length,
      activity: this.#activity,
    };
  }

  view(): ThreadView {
    return { ...this.summary(), messages: this.#messages };
  }

  #stamp(): string {
    this.#updatedAt = new Date(this.#now()).toISOString();
    return this.#updatedAt;
  }

  #emit(event: ThreadEvent): void {
    for (const listener of this.#listeners) {
      try {
        listener(event);
      } catch {
        // One broken follower (a socket gone bad) must not stop the others or the engine.
      }
    }
  }
}

function sameActivity(a: ActivityView | null, b: ActivityView | null): boolean {
  if (a === null || b === null) return a === b;
  return a.state === b.state && a.turnId === b.turnId && a.retryAt === b.retryAt && a.behind === b.behind;
}

export function promptStatus(message: MessageView): PromptStatus | undefined {
  return message.question?.status ?? message.approval?.status;
}

/** All threads, by id; a thread the engine names that is not here (after a restart) is made. */
export class ThreadBook {
  readonly #threads = new Map<string, Thread>();
  readonly #now: () => number;
  #observer: ThreadObserver | undefined;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /** Who is told of every change from now on (set before any thread exists: the journal). */
  observe(observer: ThreadObserver): void {
    this.#observer = observer;
  }

  create(binding: string): Thread {
    const thread = new Thread(`t-${randomUUID()}`, binding, this.#now, this.#observer);
    this.#threads.set(thread.id, thread);
    this.#observer?.changed(thread);
    return thread;
  }

  /** Puts back a thread read from the store (at start, before anything is served). */
  restore(kept: RestoredThread): Thread {
    const thread = new Thread(kept.id, kept.binding, this.#now, this.#observer, kept);
    this.#threads.set(thread.id, thread);
    return thread;
  }

  get(id: string): Thread | undefined {
    return this.#threads.get(id);
  }

  /** The thread of a session key; the channel id of a web chat key is its Binding. */
  forKey(key: SessionKey): Thread {
    const found = this.#threads.get(key.threadId);
    if (found !== undefined) return found;
    const thread = new Thread(key.threadId, key.channelId, this.#now, this.#observer);
    this.#threads.set(thread.id, thread);
    this.#observer?.changed(thread);
    return thread;
  }

  /** Newest activity first. */
  list(binding?: string): Thread[] {
    return [...this.#threads.values()]
      .filter((t) => binding === undefined || t.binding === binding)
      .sort((a, b) => b.summary().updatedAt.localeCompare(a.summary().updatedAt));
  }

  /**
   * Drops the threads with nothing new since `before` (the retention sweep's cut, which forgot
   * their sessions and stored rows): a thread the page still held would otherwise be shown, and
   * written back to the store at its next change. How many went.
   */
  forgetIdle(before: number): number {
    let gone = 0;
    for (const [id, thread] of this.#threads)
      if (Date.parse(thread.summary().updatedAt) < before) {
        this.#threads.delete(id);
        gone++;
      }
    return gone;
  }

  countFor(binding: string): number {
    let n = 0;
    for (const thread of this.#threads.values()) if (thread.binding === binding) n++;
    return n;
  }
}
