/**
 * What the retention sweep and the erasure of a person need of the store: both forget in small
 * transactions, so neither holds a turn up for long, and both say how many rows went.
 */

/** What one sweep batch forgot. */
export interface Forgotten {
  /** Sessions (threads) forgotten, each with its turns, feedback and lease. */
  threads: number;
  turns: number;
  feedback: number;
}

/** A person to erase, as the store knows them: the actor id of their turns, or their email. */
export type Person = { userId: string } | { email: string };

export interface Erased extends Forgotten {
  /** Turns of other people's threads whose words (theirs, or carried replies of theirs) went. */
  wordsCleared: number;
  /** Their sign-in links at identity providers. */
  links: number;
  /**
   * Threads of theirs still answering, and turns of theirs not settled yet: left as they are
   * until the answer ends, then erased by the retention sweep, which runs the erasure again.
   */
  waiting: number;
}

/** What the engine reads and clears of the forgotten marks. */
export type ForgottenMarks = Pick<RetentionStore, 'forgottenAt' | 'clearForgotten'>;

export interface RetentionStore {
  /**
   * Forgets up to `limit` threads whose session was last written before `before` and that have
   * nothing in flight (no task, no question, every turn settled, none written since), oldest
   * first, and marks each thread forgotten at `now`.
   */
  forgetIdleThreads(before: number, limit: number, now: number): Promise<Forgotten>;
  /** Forgets up to `limit` web chat threads (and their messages) last written before `before`. */
  forgetIdleTranscripts(before: number, limit: number): Promise<number>;
  /** When a thread was forgotten, if it was (and not opened again since). */
  forgottenAt(sessionId: string): Promise<number | undefined>;
  /** Clears the forgotten mark of a thread opened again (its notice was given). */
  clearForgotten(sessionId: string): Promise<void>;
  /**
   * Clears the words of up to `limit` settled turns last written before `before` (their text,
   * label and actor; ids and states stay, which is all a redelivery or a restart needs); how many.
   */
  clearSettledWords(before: number, limit: number): Promise<number>;
  /** Drops forgotten marks older than `before`; how many. */
  pruneForgotten(before: number): Promise<number>;
  /**
   * Erases a person: the threads whose first message is theirs, entirely (nothing remembered),
   * their feedback, and their words in other threads (turns they wrote, and turns that carried
   * a reply of theirs, keep their ids and states; their text goes). What is still answering
   * waits (`waiting`): the erasure is kept, requested at `now`, until a run of it leaves
   * nothing waiting.
   */
  erasePerson(person: Person, now: number): Promise<Erased>;
  /** The people whose erasure still waits for an answer to end, oldest request first. */
  pendingErasures(): Promise<Person[]>;
  /** The number of threads (sessions) held, and the store's size on disk in bytes. */
  size(): Promise<{ threads: number; bytes: number }>;
}
