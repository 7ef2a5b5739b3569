import type { EngineEvent } from '../../core/events.js';
import type { EventSink } from '../../core/ports.js';
import { type ThreadBook, WEBCHAT_SURFACE, WEBCHAT_WORKSPACE } from './threads.js';
import type { ActivityState, ActivityView, MessageView } from './view.js';

/**
 * What the engine is doing for each web chat thread, so the page shows a sign of life between a
 * message and the first text of its answer (and while a send is retried or a lost stream is
 * followed again). The chat port does not say when a turn starts or ends; the engine's events
 * do, so this is an EventSink the composition root feeds with them (as Slack's activity.ts).
 *
 * Work per event is O(1): the engine emits one for every agent event, thousands per answer.
 */
export class WebChatActivity implements EventSink {
  readonly #threads: ThreadBook;

  constructor(threads: ThreadBook) {
    this.#threads = threads;
  }

  emit(event: EngineEvent): void {
    const threadId = webChatThreadOf(event.sessionId);
    if (threadId === undefined) return;
    // An event of a thread this process does not show (yet) has nothing to update.
    const thread = this.#threads.get(threadId);
    if (thread === undefined) return;
    const current = thread.activity;
    const turnId = 'turnId' in event && typeof event.turnId === 'string' ? event.turnId : undefined;
    const set = (state: ActivityState, extra: Partial<ActivityView> = {}): void => {
      const sameRun = current !== null && (turnId === undefined || current.turnId === turnId);
      const at = new Date(event.at).toISOString();
      thread.setActivity({
        state,
        ...(turnId === undefined ? {} : { turnId }),
        startedAt: sameRun ? current.startedAt : at,
        since: current?.state === state && sameRun ? current.since : at,
        ...extra,
      });
    };
    switch (event.type) {
      case 'turn.received':
        // Stored, not sent yet. Behind a running turn, the thread shows the running one; a
        // reply carried as context is no turn of its own.
        if (current === null && event.kind !== 'context') {
          const behind = waitingBehind(thread.openPrompts());
          set('queued', behind === undefined ? {} : { behind });
        }
        return;
      case 'turn.sending':
        set('sending');
        return;
      case 'turn.accepted':
      case 'turn.found':
      case 'task.resubscribed':
      case 'task.polled':
        set('working');
        return;
      case 'turn.retry':
      case 'agent.busy':
        set('retrying', {
          retryAt: new Date(event.at + event.delayMs).toISOString(),
          ...(event.type === 'agent.busy' ? { busy: true } : {}),
        });
        return;
      case 'turn.unknown':
      case 'turn.lookup':
      case 'turn.resent':
        set('checking');
        return;
      case 'stream.lost':
      case 'task.followed':
        set('following');
        return;
      case 'turn.settled':
        // Another turn's end says nothing about the one shown.
        if (current === null || current.turnId === undefined || current.turnId === event.turnId)
          thread.setActivity(null);
        return;
      case 'question.asked':
      case 'session.gone':
      case 'task.cancel':
        thread.setActivity(null);
        return;
      default:
        return;
    }
  }
}

/**
 * The open prompt a typed message waits behind: an approval, or a question answered in its form;
 * a text question is answered by the message itself, so nothing waits for it.
 */
function waitingBehind(open: readonly MessageView[]): ActivityView['behind'] {
  const prompt = open.at(-1);
  if (prompt?.approval !== undefined) return 'approval';
  if (prompt?.question?.mode === 'structured') return 'question';
  return undefined;
}

/** The web chat thread a session id stands for; undefined for another surface's sessions. */
export function webChatThreadOf(sessionId: string): string | undefined {
  const parts = sessionId.split(':');
  if (parts.length !== 4) return undefined;
  try {
    const [surface, workspace, , thread] = parts.map(decodeURIComponent);
    return surface === WEBCHAT_SURFACE && workspace === WEBCHAT_WORKSPACE ? thread : undefined;
  } catch {
    return undefined;
  }
}
