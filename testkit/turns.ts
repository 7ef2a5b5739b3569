import type { NewTurn } from '../src/core/store.js';

/**
 * A turn as the engine records one a person just sent: a message, queued, never sent, no task,
 * nothing known of it yet. The store tests and the store bench write turns like this; a caller
 * names what sets the turn apart and overrides the rest.
 */
export function queuedTurn(
  turn: Pick<NewTurn, 'id' | 'sessionId' | 'chatMessageId' | 'text' | 'now'> & Partial<NewTurn>,
): NewTurn {
  return {
    kind: 'message',
    label: null,
    metadata: null,
    taskId: null,
    state: 'queued',
    outcome: null,
    attempts: 0,
    firstSentAt: null,
    busyNoticeAt: null,
    answerRef: null,
    traceContext: null,
    ...turn,
  };
}
