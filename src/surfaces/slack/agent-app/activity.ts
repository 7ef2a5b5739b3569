import type { Logger } from 'pino';
import type { Clock } from '../../../core/clock.js';
import type { EngineEvent } from '../../../core/events.js';
import type { EventSink } from '../../../core/ports.js';
import type { SessionKey } from '../../../core/store.js';
import { slackKeyOf } from '../inbound/keys.js';
import { retrying, type SlackApi } from '../web-api/client.js';
import { SlackPlatformError } from '../web-api/errors.js';

/**
 * While a session's task runs, its thread root wears a reaction (⏳ by default); it goes when
 * the turn settles (answered, failed, or paused on a question). The engine's events say when
 * a turn starts and ends — the chat port does not — so this is an EventSink the composition
 * root feeds with the engine's events.
 *
 * Between two queued turns the reaction stays: removal waits `settleGraceMs` for the next turn
 * to start, which also spares reactions.remove (Tier 2, 20 a minute for the workspace).
 */

export interface ActivityOptions {
  emoji: string;
  settleGraceMs: number;
}

export const DEFAULT_ACTIVITY_OPTIONS: ActivityOptions = {
  emoji: 'hourglass_flowing_sand',
  settleGraceMs: 1_500,
};

interface Marked {
  key: SessionKey;
  /** The reaction is (being) put on; removal pending while a timer is set. */
  removal: NodeJS.Timeout | undefined;
  /** Calls for one session run one after another. */
  chain: Promise<void>;
  on: boolean;
}

export class ThreadActivity implements EventSink {
  readonly #api: SlackApi;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #options: ActivityOptions;
  readonly #sessions = new Map<string, Marked>();

  constructor(api: SlackApi, clock: Clock, logger: Logger, options: Partial<ActivityOptions> = {}) {
    this.#api = api;
    this.#clock = clock;
    this.#logger = logger;
    this.#options = { ...DEFAULT_ACTIVITY_OPTIONS, ...options };
  }

  emit(event: EngineEvent): void {
    switch (event.type) {
      case 'turn.sending':
      case 'turn.accepted':
      case 'task.followed':
        this.#running(event.sessionId);
        return;
      case 'turn.settled':
        this.#settled(event.sessionId);
        return;
      default:
        return;
    }
  }

  /** The session's channel is gone from its Binding: nothing runs there any more. */
  clear(sessionId: string): void {
    this.#settled(sessionId, 0);
  }

  /** Resolves when every pending reaction call has been made (tests, shutdown). */
  async idle(): Promise<void> {
    await Promise.all([...this.#sessions.values()].map((m) => m.chain));
  }

  close(): void {
    for (const marked of this.#sessions.values()) clearTimeout(marked.removal);
    this.#sessions.clear();
  }

  #running(sessionId: string): void {
    const key = slackKeyOf(sessionId);
    if (key === undefined) return;
    let marked = this.#sessions.get(sessionId);
    if (marked === undefined) {
      marked = { key, removal: undefined, chain: Promise.resolve(), on: false };
      this.#sessions.set(sessionId, marked);
    }
    clearTimeout(marked.removal);
    marked.removal = undefined;
    if (marked.on) return;
    marked.on = true;
    this.#then(marked, () => this.#react('add', key));
  }

  #settled(sessionId: string, graceMs = this.#options.settleGraceMs): void {
    const marked = this.#sessions.get(sessionId);
    if (marked === undefined || !marked.on) return;
    clearTimeout(marked.removal);
    const remove = (): void => {
      marked.removal = undefined;
      if (!marked.on) return;
      marked.on = false;
      this.#then(marked, () => this.#react('remove', marked.key));
      void marked.chain.then(() => {
        if (!marked.on && marked.removal === undefined) this.#sessions.delete(sessionId);
      });
    };
    if (graceMs <= 0) {
      remove();
      return;
    }
    marked.removal = setTimeout(remove, graceMs);
    marked.removal.unref();
  }

  #then(marked: Marked, call: () => Promise<void>): void {
    marked.chain = marked.chain.then(call, call);
  }

  async #react(action: 'add' | 'remove', key: SessionKey): Promise<void> {
    const args = { channel: key.channelId, timestamp: key.threadId, name: this.#options.emoji };
    const ctx = { team: key.workspaceId };
    try {
      await retrying(this.#clock, () =>
        action === 'add' ? this.#api.addReaction(ctx, args) : this.#api.removeReaction(ctx, args),
      );
    } catch (error) {
      // already_reacted / no_reaction: the thread already looks right.
      if (error instanceof SlackPlatformError && /^(already_reacted|no_reaction)$/.test(error.slackError))
        return;
      this.#logger.warn(
        { channel: key.channelId, action, err: error instanceof Error ? error.name : typeof error },
        'could not update the running indicator',
      );
    }
  }
}
