import { StoreError } from '../core/errors.js';

/**
 * The one SQL runner's language, shared by every store but the session store's hot path: a
 * store method is written once for both databases as a generator of statements — each `yield`
 * hands a statement to the database's runner and gets its rows back — and the runner runs one
 * method's steps as one transaction. SQLite runs them synchronously inside one BEGIN IMMEDIATE
 * for a write (nothing else can interleave), PostgreSQL awaits each inside one transaction
 * (./sqlite/steps-runner.ts, ./postgres/steps-runner.ts). The triggers, the transcripts, the
 * feedback and the Slack installations are written this way.
 *
 * Statements use $1, $2 … (SQLite reads them as ?1, ?2) and name tables as @groups, @feedback …
 * (the runner puts in the real, schema-qualified names).
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

/** The feedback, installation, sign-in link and chat address tables (feedback-rows.ts, installation-rows.ts, identity-link-rows.ts, chat-address-rows.ts). */
export const ROW_TABLES = {
  feedback: 'answer_feedback',
  installations: 'slack_installations',
  links: 'identity_links',
  addresses: 'chat_addresses',
} as const;

/** The session store's own tables, as the retention sweep and erasure (retention-queries.ts) read them. */
export const SESSION_TABLES = {
  sessions: 'sessions',
  turns: 'turns',
  leases: 'leases',
  forgotten: 'forgotten_threads',
  erasures: 'pending_erasures',
} as const;

const TABLES: Record<string, string> = {
  ...TRIGGER_TABLES,
  ...TRANSCRIPT_TABLES,
  ...ROW_TABLES,
  ...SESSION_TABLES,
};

/** Every table above by its @name. */
const TABLE_NAMES = new RegExp(`@(${Object.keys(TABLES).join('|')})\\b`, 'g');

/** Replaces @groups … with the dialect's table names and, for SQLite, $n with ?n. */
export function render(sql: string, table: (name: string) => string, numbered: '$' | '?'): string {
  const withTables = sql.replace(TABLE_NAMES, (_m, name: string) => table(TABLES[name] ?? name));
  return numbered === '$' ? withTables : withTables.replace(/\$(\d+)/g, '?$1');
}

export const q = (sql: string, ...params: Param[]): Query => ({ sql, params });

export interface StepsRun {
  /** The steps change rows: SQLite takes its write lock for them up front. */
  write: boolean;
  /** Replicas serialise on this Binding (PostgreSQL's advisory lock; SQLite's write lock is one already). */
  lockBinding?: string;
}

/** Runs one store method's steps as one transaction, on one database. */
export interface StepsRunner {
  run<T>(operation: string, steps: Steps<T>, how: StepsRun): Promise<T>;
}

// ---- column readers -----------------------------------------------------------------------------

export function unique(values: string[]): string[] {
  return [...new Set(values)];
}

export function text(row: Row, column: string): string {
  const value = row[column];
  if (typeof value !== 'string') throw new StoreError(`row has an invalid ${column} (${typeof value})`);
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
  if (!Number.isSafeInteger(n)) throw new StoreError(`row has an invalid ${column} (${typeof value})`);
  return n;
}

export function integerOrNull(row: Row, column: string): number | null {
  return row[column] === null || row[column] === undefined ? null : integer(row, column);
}
