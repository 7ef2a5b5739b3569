import type { AnswerView } from '../../core/answer.js';
import type { AnswerSink } from '../../core/ports.js';
import type { Thread } from './threads.js';

/** At most this many shown updates per second per answer; the final text is always exact. */
export const DEFAULT_ANSWER_INTERVAL_MS = 100;

/**
 * One turn's answer message. The engine calls `update` for every agent event (thousands for a
 * long answer), so `update` only remembers the latest view and arms a timer: the text is joined
 * and shown at most once per interval, and `finish` shows the exact final text at once.
 */
export class CoalescedAnswer implements AnswerSink {
  readonly #thread: Thread;
  readonly #turnId: string;
  readonly #onRef: (ref: string) => void;
  readonly #intervalMs: number;
  #messageId: string | undefined;
  #latest: AnswerView | undefined;
  #shownVersion = -1;
  #lastFlushAt = 0;
  #timer: NodeJS.Timeout | undefined;
  #finished = false;

  constructor(
    thread: Thread,
    turnId: string,
    ref: string | null,
    onRef: (ref: string) => void,
    intervalMs = DEFAULT_ANSWER_INTERVAL_MS,
  ) {
    this.#thread = thread;
    this.#turnId = turnId;
    this.#onRef = onRef;
    this.#intervalMs = intervalMs;
    // The engine hands back the ref it persisted: the same message grows again after a resume.
    const existing = ref === null ? undefined : thread.get(ref);
    if (existing?.kind === 'answer') this.#messageId = existing.id;
  }

  update(view: AnswerView): void {
    if (this.#finished) return;
    this.#latest = view;
    if (this.#timer !== undefined) return;
    const wait = Math.max(0, this.#lastFlushAt + this.#intervalMs - Date.now());
    this.#timer = setTimeout(() => this.#flush(), wait);
    this.#timer.unref();
  }

  async finish(view: AnswerView): Promise<void> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#finished = true;
    // An answer with no text and nothing shown yet shows nothing (a notice tells what happened).
    if (view.length === 0 && this.#messageId === undefined) return;
    this.#show(view.text(), true);
  }

  #flush(): void {
    this.#timer = undefined;
    this.#lastFlushAt = Date.now();
    const view = this.#latest;
    if (view === undefined || view.version === this.#shownVersion || this.#finished) return;
    this.#shownVersion = view.version;
    this.#show(view.text(), false);
  }

  #show(text: string, final: boolean): void {
    const id = this.#ensure();
    const current = this.#thread.get(id);
    if (current === undefined) return;
    if (
      !final &&
      current.final !== true &&
      text.length > current.text.length &&
      text.startsWith(current.text)
    ) {
      this.#thread.append(id, text.slice(current.text.length));
      return;
    }
    if (current.text === text && current.final === final) return;
    this.#thread.change(id, (m) => {
      m.text = text;
      m.final = final;
    });
  }

  #ensure(): string {
    if (this.#messageId !== undefined) return this.#messageId;
    const message = this.#thread.add({
      author: 'agent',
      kind: 'answer',
      text: '',
      turnId: this.#turnId,
      final: false,
    });
    this.#messageId = message.id;
    this.#onRef(message.id);
    return message.id;
  }
}
