import { KourierError, StoreError } from '../core/errors.js';
import type {
  Commit,
  NewSession,
  PendingQuestion,
  RecordedTask,
  SessionRecord,
  TurnKind,
  TurnRecord,
  TurnState,
} from '../core/store.js';
import type { TraceContext } from '../core/trace.js';

/**
 * Row <-> record mapping shared by both stores: the column names are the same in both dialects
 * (migrations.ts). Values are checked as they are read, because a row is data from outside the
 * process: a column of the wrong type is a broken database (StoreError), not a crash later on.
 */

export type Row = Record<string, unknown>;

/** How a dialect hands back a JSON column: SQLite as text, PostgreSQL (jsonb) already parsed. */
export type JsonReader = (value: unknown, column: string) => unknown;

// Keyed by the port's unions, so a kind or state added there fails to compile here instead of
// failing to read back a turn that was stored with it.
const TURN_STATES: Record<TurnState, true> = { queued: true, sending: true, accepted: true, settled: true };
const TURN_KINDS: Record<TurnKind, true> = { message: true, answer: true, trigger: true, context: true };

/** JSON for a column: SQL NULL for null, so `IS NOT NULL` in the work queries means "has one". */
export function toJson(value: unknown): string | null {
  return value === null || value === undefined ? null : JSON.stringify(value);
}

/** A session as either store's open inserts it: what a read of the new row returns, in sessionFromRow's order. */
export function newSessionRecord(id: string, init: NewSession): SessionRecord {
  return {
    id,
    key: {
      surface: init.key.surface,
      workspaceId: init.key.workspaceId,
      channelId: init.key.channelId,
      threadId: init.key.threadId,
    },
    binding: init.binding,
    contextId: null,
    task: null,
    question: null,
    lastQuestionKey: null,
    version: 1,
    createdAt: init.now,
    updatedAt: init.now,
  };
}

export function sessionFromRow(row: Row, json: JsonReader): SessionRecord {
  return {
    id: text(row, 'id'),
    key: {
      surface: text(row, 'surface'),
      workspaceId: text(row, 'workspace_id'),
      channelId: text(row, 'channel_id'),
      threadId: text(row, 'thread_id'),
    },
    binding: text(row, 'binding'),
    contextId: textOrNull(row, 'context_id'),
    task: objectOrNull(row, 'task', json) as RecordedTask | null,
    question: objectOrNull(row, 'question', json) as PendingQuestion | null,
    lastQuestionKey: textOrNull(row, 'last_question_key'),
    version: integer(row, 'version'),
    createdAt: integer(row, 'created_at'),
    updatedAt: integer(row, 'updated_at'),
  };
}

/**
 * The `text` column of a turn: while the turn has a label, the label line stays in front of its
 * text there, as every build before migration 4 wrote it and reads it back — so during a
 * rolling deploy an older replica still sends a newer one's turn with its label (S-6). The
 * record keeps the two apart (turnFromRow). Once no build before 4 runs, this can store the
 * text alone.
 */
export function textColumn(turn: Pick<TurnRecord, 'text' | 'label'>): string {
  return turn.label === null ? turn.text : `${turn.label}\n${turn.text}`;
}

/** The text and label of a turn row (see textColumn). */
function textAndLabel(row: Row): Pick<TurnRecord, 'text' | 'label'> {
  const stored = text(row, 'text');
  const label = textOrNull(row, 'label');
  // A label whose line is not in front of the text (not written by textColumn): the text is
  // sent as it stands rather than given a second label line.
  if (label === null || !stored.startsWith(`${label}\n`)) return { text: stored, label: null };
  return { text: stored.slice(label.length + 1), label };
}

export function turnFromRow(row: Row, json: JsonReader): TurnRecord {
  return {
    id: text(row, 'id'),
    sessionId: text(row, 'session_id'),
    seq: integer(row, 'seq'),
    kind: oneOf(row, 'kind', TURN_KINDS),
    chatMessageId: text(row, 'chat_message_id'),
    ...textAndLabel(row),
    metadata: objectOrNull(row, 'metadata', json),
    taskId: textOrNull(row, 'task_id'),
    state: oneOf(row, 'state', TURN_STATES),
    outcome: textOrNull(row, 'outcome'),
    attempts: integer(row, 'attempts'),
    firstSentAt: integerOrNull(row, 'first_sent_at'),
    busyNoticeAt: integerOrNull(row, 'busy_notice_at'),
    answerRef: textOrNull(row, 'answer_ref'),
    traceContext: traceContextOrNull(row, json),
    createdAt: integer(row, 'created_at'),
    updatedAt: integer(row, 'updated_at'),
  };
}

/** A trace context is only a hint for a span link: one that does not read is no context. */
function traceContextOrNull(row: Row, json: JsonReader): TraceContext | null {
  const raw = row.trace_context;
  if (raw === null || raw === undefined) return null;
  const value = objectOrNull(row, 'trace_context', json);
  if (value === null || typeof value.traceparent !== 'string') return null;
  return typeof value.tracestate === 'string'
    ? { traceparent: value.traceparent, tracestate: value.tracestate }
    : { traceparent: value.traceparent };
}

function text(row: Row, column: string): string {
  const value = row[column];
  if (typeof value !== 'string') throw badColumn(column, value);
  return value;
}

function textOrNull(row: Row, column: string): string | null {
  return row[column] === null ? null : text(row, column);
}

/** Integers arrive as numbers (SQLite, int4) or decimal strings (PostgreSQL bigint). */
function integer(row: Row, column: string): number {
  const value = row[column];
  const number =
    typeof value === 'number' || typeof value === 'bigint'
      ? Number(value)
      : typeof value === 'string' && /^-?\d+$/.test(value)
        ? Number(value)
        : Number.NaN;
  if (!Number.isSafeInteger(number)) throw badColumn(column, value);
  return number;
}

function integerOrNull(row: Row, column: string): number | null {
  return row[column] === null ? null : integer(row, column);
}

function objectOrNull(row: Row, column: string, json: JsonReader): Record<string, unknown> | null {
  const raw = row[column];
  if (raw === null) return null;
  const value = json(raw, column);
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw badColumn(column, raw);
  return value as Record<string, unknown>;
}

function oneOf<T extends string>(row: Row, column: string, allowed: Record<T, true>): T {
  const value = text(row, column);
  if (!Object.hasOwn(allowed, value)) throw badColumn(column, value);
  return value as T;
}

function badColumn(column: string, value: unknown): StoreError {
  return new StoreError(`store row has an invalid ${column} (${typeof value})`);
}

/** SQLite's JSON columns are text: parse them, reporting a broken one as a store error. */
export const parseJsonText: JsonReader = (value, column) => {
  if (typeof value !== 'string') throw badColumn(column, value);
  try {
    return JSON.parse(value) as unknown;
  } catch (cause) {
    throw new StoreError(`store row has invalid JSON in ${column}`, { cause });
  }
};

/** PostgreSQL's driver has already parsed jsonb. */
export const parsedJson: JsonReader = (value) => value;

/** Wraps a driver or I/O failure as StoreError; our own typed errors pass through unchanged. */
export function storeFailure(operation: string, cause: unknown): Error {
  if (cause instanceof KourierError) return cause;
  const detail = cause instanceof Error ? cause.message : String(cause);
  return new StoreError(`${operation} failed: ${detail.slice(0, 300)}`, { cause });
}

/**
 * The sessions a commit writes (its session's and its turns'), once each and sorted: fencing
 * checks every one, and a fixed order keeps lease-row locks from deadlocking on PostgreSQL.
 */
export function sessionsOf(commit: Commit): string[] {
  const ids = new Set<string>();
  if (commit.session !== undefined) ids.add(commit.session.id);
  for (const turn of commit.turns ?? []) ids.add(turn.sessionId);
  return [...ids].sort();
}
