import type { NewTurn } from '../store.js';
import type { TraceContext } from '../trace.js';

/**
 * The turn a structured answer becomes (SessionEngine.answer): queued behind nothing, for the
 * task that asked, never sent yet. S-6: a structured answer carries no label line.
 */
export function answerTurn(
  place: {
    id: string;
    sessionId: string;
    chatMessageId: string;
    taskId: string;
    traceContext: TraceContext | null;
    now: number;
  },
  content: { text: string; metadata: Record<string, unknown> },
): NewTurn {
  return {
    ...place,
    kind: 'answer',
    text: content.text,
    label: null,
    metadata: content.metadata,
    state: 'queued',
    outcome: null,
    attempts: 0,
    firstSentAt: null,
    busyNoticeAt: null,
    answerRef: null,
  };
}
