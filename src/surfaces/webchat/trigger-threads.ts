import { createHash } from 'node:crypto';
import type { SessionKey } from '../../core/store.js';
import type {
  PostRef,
  TriggerChat,
  TriggerConfig,
  TriggerMessage,
  TriggerPlace,
} from '../../core/triggers.js';
import { type ThreadBook, WEBCHAT_SURFACE, WEBCHAT_WORKSPACE } from './threads.js';

/**
 * Threads that triggers start in the web chat (local mode): a thread under the trigger's
 * Binding whose first message is the alert's summary, shown as a notice of the broker. The
 * thread's id derives from the work that opened it, so an attempt after a failure finds the
 * same thread; posts already shown (by their work id) are not shown twice. Like every web chat
 * thread it lives in memory: after a restart, a thread reappears when something is posted in it.
 */

const MAX_REMEMBERED = 10_000;

export function triggerText(message: TriggerMessage): string {
  return [message.title, ...message.lines.map((l) => `${l.label}: ${l.text}`)].join('\n');
}

export class WebChatTriggerThreads implements TriggerChat {
  readonly #threads: ThreadBook;
  readonly #posted = new Set<string>();

  constructor(threads: ThreadBook) {
    this.#threads = threads;
  }

  place(trigger: TriggerConfig): TriggerPlace {
    return { surface: WEBCHAT_SURFACE, workspaceId: WEBCHAT_WORKSPACE, channelId: trigger.binding };
  }

  async startThread(place: TriggerPlace, message: TriggerMessage, ref: PostRef): Promise<SessionKey> {
    const threadId = `t-trigger-${createHash('sha256').update(ref.id).digest('hex').slice(0, 24)}`;
    const key: SessionKey = {
      surface: WEBCHAT_SURFACE,
      workspaceId: WEBCHAT_WORKSPACE,
      channelId: place.channelId,
      threadId,
    };
    const thread = this.#threads.forKey(key);
    thread.entitle(message.title);
    this.#show(key, message, ref);
    return key;
  }

  async postInThread(key: SessionKey, message: TriggerMessage, ref: PostRef): Promise<void> {
    this.#show(key, message, ref);
  }

  #show(key: SessionKey, message: TriggerMessage, ref: PostRef): void {
    if (this.#posted.has(ref.id)) return;
    this.#threads
      .forKey(key)
      .add({ author: 'broker', kind: 'notice', noticeKind: 'trigger', text: triggerText(message) });
    this.#posted.add(ref.id);
    if (this.#posted.size > MAX_REMEMBERED) {
      const oldest = this.#posted.values().next();
      if (oldest.done !== true) this.#posted.delete(oldest.value);
    }
  }
}
