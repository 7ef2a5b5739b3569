import { StoreError } from '../core/errors.js';
import type { SessionKey } from '../core/store.js';
import type { TriggerGroup, TriggerWork, TriggerWorkKind } from '../core/trigger-store.js';

/**
 * What the trigger store's statements share (trigger-queries.ts, trigger-outbox.ts): written once
 * for both databases as generators of statements — each `yield` hands a statement to the
 * dialect's runner and gets its rows back. SQLite runs the steps synchronously inside one BEGIN
 * IMMEDIATE (nothing else can interleave), PostgreSQL awaits each inside one transaction.
 *
 * Statements use $1, $2 … (SQLite reads them as ?1, ?2) and name tables as @groups, @alerts,
 * @work, @activity, @schedules (the runner puts in the real, schema-qualified names).
 */

export type Param = string | number | null;
export type Row = Record<string, unknown>;
export interface Query {
  sql: string;
  params: Param[];
}
export type Steps<T> = Generator<Query, T, Row[]>;

export const TRIGGER_TABLES = {
  groups: 'trigger_groups',
  alerts: 'trigger_alerts',
  work: 'trigger_work',
  activity: 'trigger_activity',
  schedules: 'trigger_schedules',
} as const;

/** The transcript store's tables (transcript-queries.ts), run by the same runners. */
export const TRANSCRIPT_TABLES = {
  tthreads: 'transcript_threads',
  tmessages: 'transcript_messages',
} as const;

const TABLES: Record<string, string> = { ...TRIGGER_TABLES, ...TRANSCRIPT_TABLES };

/** Replaces @groups … with the dialect's table names and, for SQLite, $n with ?n. */
export function render(sql: string, table: (name: string) => string, numbered: '$' | '?'): string {
  const withTables = sql.replace(
    /@(groups|alerts|work|activity|schedules|tthreads|tmessages)\b/g,
    (_m, name: string) => table(TABLES[name] ?? name),
  );
  return numbered === '$' ? withTables : withTables.replace(/\$(\d+)/g, '?$1');
}

export const q = (sql: string, ...params: Param[]): Query => ({ sql, params });

// ---- rows ---------------------------------------------------------------------------------------

export function groupFromRow(row: Row): TriggerGroup {
  const thread = textOrNull(row, 'thread');
  return {
    id: text(row, 'id'),
    scope: {
      workspaceId: text(row, 'workspace_id'),
      binding: text(row, 'binding'),
      trigger: text(row, 'trigger_name'),
    },
    groupKey: text(row, 'group_key'),
    episode: integer(row, 'episode'),
    storm: integer(row, 'storm') === 1,
    thread: thread === null ? null : sessionKey(parseJson(thread, 'thread')),
    createdAt: integer(row, 'created_at'),
  };
}

export function workFromRow(row: Row): TriggerWork {
  const identities = parseJson(text(row, 'identities'), 'identities');
  if (!Array.isArray(identities) || !identities.every((i) => typeof i === 'string'))
    throw new StoreError('trigger work row has invalid identities');
  const kind = text(row, 'kind');
  if (!WORK_KINDS.has(kind)) throw new StoreError(`trigger work row has an invalid kind (${kind})`);
  return {
    id: text(row, 'id'),
    groupId: text(row, 'group_id'),
    seq: integer(row, 'seq'),
    kind: kind as TriggerWorkKind,
    sourceGroupId: text(row, 'source_group_id'),
    identities,
    allResolved: integer(row, 'all_resolved') === 1,
    payload: parseJson(text(row, 'payload'), 'payload'),
    attempts: integer(row, 'attempts'),
    nextAt: integer(row, 'next_at'),
    createdAt: integer(row, 'created_at'),
  };
}

const WORK_KINDS: ReadonlySet<string> = new Set<TriggerWorkKind>(['open', 'turn', 'resolved', 'note']);

function sessionKey(value: unknown): SessionKey {
  const v = value as Partial<Record<keyof SessionKey, unknown>> | null;
  if (
    v === null ||
    typeof v !== 'object' ||
    typeof v.surface !== 'string' ||
    typeof v.workspaceId !== 'string' ||
    typeof v.channelId !== 'string' ||
    typeof v.threadId !== 'string'
  )
    throw new StoreError('trigger group row has an invalid thread');
  return { surface: v.surface, workspaceId: v.workspaceId, channelId: v.channelId, threadId: v.threadId };
}

function parseJson(value: string, column: string): unknown {
  try {
    return JSON.parse(value) as unknown;
  } catch (cause) {
    throw new StoreError(`trigger row has invalid JSON in ${column}`, { cause });
  }
}

export function unique(values: string[]): string[] {
  return [...new Set(values)];
}

export function text(row: Row, column: string): string {
  const value = row[column];
  if (typeof value !== 'string')
    throw new StoreError(`trigger row has an invalid ${column} (${typeof value})`);
  return value;
}

export function textOrNull(row: Row, column: string): string | null {
  return row[column] === null || row[column] === undefined ? null : text(row, column);
}

/** SQLite gives numbers, PostgreSQL bigint and COUNT(*) as decimal strings. */
export function integer(row: Row, column: string): number {
  const value = row[column];
  const n =
    typeof value === 'number' || typeof value === 'bigint'
      ? Number(value)
      : typeof value === 'string' && /^-?\d+$/.test(value)
        ? Number(value)
        : Number.NaN;
  if (!Number.isSafeInteger(n))
    throw new StoreError(`trigger row has an invalid ${column} (${typeof value})`);
  return n;
}

export function integerOrNull(row: Row, column: string): number | null {
  return row[column] === null || row[column] === undefined ? null : integer(row, column);
}
