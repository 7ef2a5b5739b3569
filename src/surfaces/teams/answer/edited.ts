import type { Logger } from 'pino';
import type { AnswerView } from '../../../core/answer.js';
import type { AnswerSink } from '../../../core/ports.js';
import type { SessionKey } from '../../../core/store.js';
import { paginate, utf8Cost } from '../../common/markdown-pages.js';
import type { TeamsSender } from '../sender.js';

/**
 * An answer shown as messages that are edited as it grows: in channels and group chats, where
 * Teams does not stream, and in a personal chat once a stream has reached Teams' two minutes.
 * At most one edit in flight and one every `paceMs`, each showing the latest text (the
 * conversation's budget spaces them under Teams' limits, and a 429 holds them); `finish` shows
 * exactly the final text, after whatever was in flight. An answer longer than one message goes
 * on in the next message, each page edited in place; the ref lists the pages' ids, so after a
 * restart the same messages are edited again.
 */

/** A message's text stays under Teams' size limit (about 28 KB with its envelope). */
export const PAGE_BYTES = 20_000;
/** A page closes at the first paragraph break past this many bytes. */
const PAGE_SOFT_BYTES = 16_000;

export interface EditedAnswerOptions {
  sender: TeamsSender;
  key: SessionKey;
  /** Ids of the pages already shown (from the ref), oldest first. */
  pages: string[];
  onRef: (ref: string) => void;
  paceMs: number;
  logger: Logger;
  /** While the answer grows, a card under its last page (the Stop button); gone at the end. */
  working?: { contentType: string; content: Record<string, unknown> };
}

export class EditedAnswer implements AnswerSink {
  readonly #o: EditedAnswerOptions;
  readonly #ids: string[];
  /** The text each page shows now. */
  readonly #shown: string[] = [];
  #latest: AnswerView | undefined;
  #timer: NodeJS.Timeout | undefined;
  #lastAt = 0;
  #chain: Promise<void> = Promise.resolve();
  #finished = false;

  constructor(options: EditedAnswerOptions) {
    this.#o = options;
    this.#ids = [...options.pages];
  }

  update(view: AnswerView): void {
    if (this.#finished) return;
    this.#latest = view;
    if (this.#timer !== undefined) return;
    const wait = Math.max(0, this.#lastAt + this.#o.paceMs - Date.now());
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#chain = this.#chain.then(() => this.#show(false)).catch((error: unknown) => this.#failed(error));
    }, wait);
  }

  async finish(view: AnswerView): Promise<void> {
    this.#finished = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#latest = view;
    this.#chain = this.#chain.then(() => this.#show(true));
    await this.#chain;
  }

  /** Shows the latest text on its pages: posts the pages that are new, edits those that changed. */
  async #show(final: boolean): Promise<void> {
    const view = this.#latest;
    if (view === undefined) return;
    const text = view.text();
    if (text === '' && this.#ids.length === 0) return;
    const pages = pagesOf(text);
    const card = final || this.#o.working === undefined ? [] : [this.#o.working];
    for (let i = 0; i < pages.length; i++) {
      const attachments = i === pages.length - 1 ? card : [];
      const body = pages[i] ?? '';
      // What the page shows, its card included: an unchanged page is not sent again.
      const shown = `${attachments.length}\n${body}`;
      if (this.#shown[i] === shown) continue;
      const id = this.#ids[i];
      const activity = { type: 'message', text: body, attachments };
      if (id === undefined) {
        this.#ids.push(await this.#o.sender.post(this.#o.key, activity));
        this.#o.onRef(this.#ids.join(' '));
      } else {
        await this.#o.sender.edit(this.#o.key, id, activity);
      }
      this.#shown[i] = shown;
    }
    this.#lastAt = Date.now();
  }

  #failed(error: unknown): void {
    // An edit that failed for good is not the answer's end: the next update or finish tries again.
    this.#o.logger.warn(
      { err: error instanceof Error ? error.name : typeof error },
      'a Teams answer edit failed',
    );
  }
}

/** The text cut into pages of at most PAGE_BYTES (UTF-8), code blocks whole on each (as Slack's). */
export function pagesOf(text: string): string[] {
  return paginate(text, { soft: PAGE_SOFT_BYTES, hard: PAGE_BYTES, cost: utf8Cost });
}
