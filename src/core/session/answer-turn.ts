import type { Clock } from '../clock.js';
import type { EngineEvent } from '../events.js';
import type { StructuredAnswer } from '../ports.js';
import type { NewTurn, SessionStore, TurnRecord } from '../store.js';
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

/** The event that counts a tool approval's decisions (metrics); undefined for another reply. */
export function approvalDecided(
  input: StructuredAnswer,
  sessionId: string,
  binding: string,
  at: number,
): EngineEvent | undefined {
  if (input.reply.type !== 'tool_approval') return undefined;
  const approved = input.reply.decisions.filter((d) => d.approved).length;
  const denied = input.reply.decisions.length - approved;
  return { sessionId, binding, at, type: 'approval.decided', surface: input.key.surface, approved, denied };
}

/**
 * A stop began closing the question between answer()'s read and its write: the decision it
 * stored is settled unsent and refused, so no decision is ever accepted after a stop began.
 * (One stored before the stop began is accepted; the stop then keeps it from being sent.)
 */
export async function closedMeanwhile(
  store: SessionStore,
  clock: Clock,
  sessionId: string,
  taskId: string,
  turn: TurnRecord,
): Promise<boolean> {
  const now = (await store.getSession(sessionId))?.question;
  if (now?.taskId !== taskId || now.closingAt === undefined) return false;
  const settled: TurnRecord = { ...turn, state: 'settled', outcome: 'error:question_closed' };
  await store.commit({ turns: [settled], now: clock.now() });
  return true;
}
