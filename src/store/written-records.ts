import type { NewTurn, SessionRecord, TurnRecord } from '../core/store.js';

/**
 * The records of rows a store has just written, built from what it wrote instead of reading
 * the row back and parsing it (RETURNING * and rows.ts, a read's work: every column turned into
 * a value, its JSON parsed, checked). Both stores use them: SQLite returns nothing from its
 * writes, PostgreSQL only the id and number a statement decided. Each is what a read of the
 * row returns, with its members in the order rows.ts gives them. The JSON members (a turn's
 * metadata and trace context, a session's task and question) are the caller's own values,
 * which the store wrote as their JSON (PostgreSQL's jsonb may keep an object's keys in another
 * order; a read gives the same values).
 */

/**
 * The record of a turn as a store's add inserts it with `seq`: what a read of the new row returns,
 * its members in the order turnFromRow gives them.
 */
export function newTurnRecord(turn: NewTurn, seq: number): TurnRecord {
  return {
    id: turn.id,
    sessionId: turn.sessionId,
    seq,
    kind: turn.kind,
    chatMessageId: turn.chatMessageId,
    text: turn.text,
    label: turn.label,
    metadata: turn.metadata,
    taskId: turn.taskId,
    state: turn.state,
    outcome: turn.outcome,
    attempts: turn.attempts,
    firstSentAt: turn.firstSentAt,
    busyNoticeAt: turn.busyNoticeAt,
    answerRef: turn.answerRef,
    traceContext: turn.traceContext,
    createdAt: turn.now,
    updatedAt: turn.now,
  };
}

/** A session as a commit wrote it: what a read of the row returns, in sessionFromRow's order. */
export function writtenSessionRecord(session: SessionRecord, now: number): SessionRecord {
  return {
    id: session.id,
    key: session.key,
    binding: session.binding,
    contextId: session.contextId,
    task: session.task,
    question: session.question,
    lastQuestionKey: session.lastQuestionKey,
    version: session.version + 1,
    createdAt: session.createdAt,
    updatedAt: now,
  };
}
