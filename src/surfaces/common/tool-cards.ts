import type { ToolStep } from '../../core/ports.js';

/**
 * How many tool steps of one turn a surface shows as cards of their own (Slack and Teams share
 * this tally). An agent may send thousands of tool steps before it answers; each card is a
 * message, paced by the conversation's rate limits (about one a second), so one card per step
 * would hold the turn, and the answer behind it, for as long as an hour. After these, one
 * message counts the rest.
 */
export const TOOL_CARDS_PER_TURN = 5;
/** The count message is edited at most this often while steps keep coming. */
export const TOOL_COUNT_EDIT_EVERY_MS = 5_000;
/** A turn's tally is forgotten once no step has come for this long (its count is final by then). */
const FORGET_AFTER_MS = 60_000;

export interface ToolCardPorts {
  /** Posts a card (awaited: the first cards keep their place before the answer). */
  postCard(step: ToolStep): Promise<unknown>;
  /** Posts the count message; its ts, or undefined when Slack refused it. */
  postCount(text: string): Promise<string | undefined>;
  /** Edits the count message. */
  editCount(ts: string, text: string): Promise<unknown>;
}

export function moreToolCallsText(count: number): string {
  return `…and ${count.toLocaleString('en-US')} more tool call${count === 1 ? '' : 's'}`;
}

/**
 * One turn's tool steps in a chat: the first TOOL_CARDS_PER_TURN as cards, then one message
 * counting the others. Past the cards nothing is awaited by the turn: the count is posted once
 * and edited now and then, in the background, with the latest number.
 */
export class ToolCardTally {
  readonly #ports: ToolCardPorts;
  readonly #onIdle: () => void;
  #cards = 0;
  #more = 0;
  #shownMore = 0;
  #countTs: Promise<string | undefined> | undefined;
  #editTimer: NodeJS.Timeout | undefined;
  #forgetTimer: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(ports: ToolCardPorts, onIdle: () => void) {
    this.#ports = ports;
    this.#onIdle = onIdle;
  }

  async show(step: ToolStep): Promise<void> {
    this.#touch();
    if (this.#cards < TOOL_CARDS_PER_TURN) {
      this.#cards++;
      await this.#ports.postCard(step);
      return;
    }
    this.#more++;
    if (this.#countTs === undefined) {
      this.#shownMore = this.#more;
      this.#countTs = this.#ports.postCount(moreToolCallsText(this.#more)).catch(() => undefined);
      return;
    }
    this.#editTimer ??= setTimeout(() => {
      this.#editTimer = undefined;
      void this.#edit();
    }, TOOL_COUNT_EDIT_EVERY_MS);
    this.#editTimer.unref();
  }

  /** Stops its timers (the connection stops). */
  close(): void {
    this.#closed = true;
    clearTimeout(this.#editTimer);
    clearTimeout(this.#forgetTimer);
  }

  async #edit(): Promise<void> {
    if (this.#closed || this.#more === this.#shownMore) return;
    const ts = await this.#countTs;
    if (ts === undefined) return;
    const count = this.#more;
    await this.#ports.editCount(ts, moreToolCallsText(count)).then(
      () => {
        this.#shownMore = Math.max(this.#shownMore, count);
      },
      () => undefined,
    );
  }

  #touch(): void {
    clearTimeout(this.#forgetTimer);
    this.#forgetTimer = setTimeout(() => {
      // The last steps' count goes out before the tally is forgotten.
      void this.#edit().finally(() => {
        this.close();
        this.#onIdle();
      });
    }, FORGET_AFTER_MS);
    this.#forgetTimer.unref();
  }
}
