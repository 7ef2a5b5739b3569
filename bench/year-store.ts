/**
 * The year benchmark's store (bench/year.ts): a year of settled threads written straight into the
 * store's own tables after migrate(), as the engine writes them (a session with its context, two
 * settled turns with a person's words under their label line, the answer's ref, the trace
 * context, the actor; an expired lease; in one thread of ten a feedback press), and the store's size on disk as each database counts
 * it. SQLite: prepared INSERTs in a few transactions; PostgreSQL: INSERT … SELECT over
 * generate_series.
 */
import { statSync } from 'node:fs';
import { DatabaseSync } from 'node:sqlite';
import pg from 'pg';
import { messageIdFor } from '../src/core/compose.js';
import { sessionIdOf } from '../src/core/store.js';
import { BINDING } from './engine-rig.js';

export const YEAR_KEY = { surface: 'bench', workspaceId: 'T1', channelId: 'C1' } as const;
const DAY_MS = 24 * 3600 * 1000;
/** Turns per settled thread: a question and a follow-up. */
export const TURNS_PER_THREAD = 2;
/** One thread in this many has a feedback press on its first answer, told to the agent in the second turn. */
export const FEEDBACK_EVERY = 10;

/** The i-th settled thread, oldest first. */
export const threadOf = (i: number): string => `y-${i}`;

export function quantileOf(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] as number;
}

/**
 * When thread i of n was last written: the first `old` spread over the year before the retention's
 * cut (365 to 91 days ago), the rest over the 89 days since.
 */
export function updatedAt(i: number, n: number, old: number, now: number): number {
  if (i < old) return Math.round(now - 365 * DAY_MS + (i * 274 * DAY_MS) / Math.max(1, old));
  return Math.round(now - 89 * DAY_MS + ((i - old) * 88 * DAY_MS) / Math.max(1, n - old));
}

/** Words of a person's message: a few hundred bytes cut from ordinary prose, different per thread. */
const PROSE =
  'the deploy to staging failed again after the config change this morning and the pods keep ' +
  'restarting with an out of memory error can you look at the last rollout and tell me which ' +
  'limit we should raise also check whether the database migration ran before the new image ' +
  'started because the logs show a missing column in the orders table and the alert fired twice ' +
  'in the night for the payment service latency which may be the same cause please summarise ' +
  'what changed since friday and propose a rollback plan if the fix is not obvious thanks ';
const PROSE2 = PROSE + PROSE;

export function wordsOf(i: number, seq: number): string {
  const from = (i * 37 + seq * 101) % PROSE.length;
  return PROSE2.slice(from, from + 260 + ((i + seq) % 80));
}

const LABEL = (i: number): string => {
  const user = `U0${(i % 5000).toString(36).toUpperCase().padStart(8, 'A')}`;
  return `[Slack: Person ${i % 5000} (${user}) <person${i % 5000}@example.com>]`;
};

// ---- SQLite -------------------------------------------------------------------------------------

/**
 * Writes `count` settled threads, numbered from `first`: the first `old` of them idle past the
 * retention's cut (see updatedAt).
 */
export function generateSqlite(path: string, count: number, old: number, now: number, first = 0): void {
  const n = count;
  const db = new DatabaseSync(path);
  try {
    db.exec('PRAGMA synchronous = OFF');
    const session = db.prepare(
      `INSERT INTO sessions (id, surface, workspace_id, channel_id, thread_id, binding, context_id,
         task, question, last_question_key, version, turn_seq, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, NULL, NULL, NULL, ?, ?, ?, ?)`,
    );
    const turn = db.prepare(
      `INSERT INTO turns (id, session_id, seq, kind, chat_message_id, text, metadata, task_id, state,
         outcome, attempts, first_sent_at, busy_notice_at, answer_ref, created_at, updated_at,
         trace_context, label)
       VALUES (?, ?, ?, 'message', ?, ?, ?, ?, 'settled', 'completed', 1, ?, NULL, ?, ?, ?, ?, ?)`,
    );
    const lease = db.prepare(
      `INSERT INTO leases (session_id, owner, expires_at, takes) VALUES (?, '', 0, 1)`,
    );
    const feedback = db.prepare(
      `INSERT INTO answer_feedback (turn_id, actor_id, session_id, task_id, value, presses, told_in, updated_at)
       VALUES (?, ?, ?, ?, 'positive', 1, ?, ?)`,
    );
    const step = 100_000;
    for (let from = 0; from < n; from += step) {
      db.exec('BEGIN');
      for (let k = from; k < Math.min(n, from + step); k++) {
        const i = first + k;
        const thread = threadOf(i);
        const id = sessionIdOf({ ...YEAR_KEY, threadId: thread });
        const at = updatedAt(k, n, old, now);
        const created = at - 600_000;
        session.run(
          id,
          YEAR_KEY.surface,
          YEAR_KEY.workspaceId,
          YEAR_KEY.channelId,
          thread,
          BINDING,
          `yctx-${i}`,
          2 + 4 * TURNS_PER_THREAD,
          TURNS_PER_THREAD,
          created,
          at,
        );
        for (let seq = 1; seq <= TURNS_PER_THREAD; seq++) {
          const label = LABEL(i);
          const t = created + (seq - 1) * 300_000;
          const turnId = messageIdFor(id, `${thread}.${seq}`, 'message');
          turn.run(
            turnId,
            id,
            seq,
            `${thread}.${seq}`,
            `${label}\n${wordsOf(i, seq)}`,
            JSON.stringify({ 'agentkourier.dev/actor': { id: `U${i % 5000}`, name: `Person ${i % 5000}` } }),
            `task-y-${i}-${seq}`,
            t,
            `1${String(t).slice(0, 9)}.${String(i).padStart(6, '0')}`,
            t,
            seq === TURNS_PER_THREAD ? at : t + 60_000,
            JSON.stringify({ traceparent: `00-${turnId.slice(3)}-${turnId.slice(3, 19)}-01` }),
            label,
          );
        }
        lease.run(id);
        if (i % FEEDBACK_EVERY === 0)
          feedback.run(
            messageIdFor(id, `${thread}.1`, 'message'),
            `U${i % 5000}`,
            id,
            `task-y-${i}-1`,
            messageIdFor(id, `${thread}.2`, 'message'),
            at,
          );
      }
      db.exec('COMMIT');
    }
    db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
  } finally {
    db.close();
  }
}

export interface SqliteSize {
  pages: number;
  free: number;
  pageSize: number;
  /** The file's size, its -wal beside it included. */
  fileBytes: number;
}

export function sqliteSize(path: string): SqliteSize {
  const db = new DatabaseSync(path);
  try {
    db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
    const get = (pragma: string): number =>
      Number(Object.values(db.prepare(`PRAGMA ${pragma}`).get() ?? {})[0]);
    const wal = (() => {
      try {
        return statSync(`${path}-wal`).size;
      } catch {
        return 0;
      }
    })();
    return {
      pages: get('page_count'),
      free: get('freelist_count'),
      pageSize: get('page_size'),
      fileBytes: statSync(path).size + wal,
    };
  } finally {
    db.close();
  }
}

export function sqliteExec(path: string, sql: string): void {
  const db = new DatabaseSync(path);
  try {
    db.exec(sql);
  } finally {
    db.close();
  }
}

// ---- PostgreSQL ---------------------------------------------------------------------------------

/**
 * The same rows as generateSqlite, in the given schema, by INSERT … SELECT over generate_series
 * (ids by md5 instead of SHA-256: the same length, nothing reads them as the engine's).
 */
export async function generatePostgres(
  connectionString: string,
  schema: string,
  count: number,
  old: number,
  now: number,
  first = 0,
): Promise<void> {
  const n = count;
  const client = new pg.Client({ connectionString });
  await client.connect();
  try {
    await client.query(`SET search_path TO "${schema}"`);
    await client.query('SET synchronous_commit = off');
    await client.query("SET maintenance_work_mem = '256MB'");
    const step = 250_000;
    const k = `(i - ${first})`;
    const at = `(CASE WHEN ${k} < ${old} THEN ${now - 365 * DAY_MS} + (${k}::bigint * ${274 * DAY_MS}) / ${Math.max(1, old)}
       ELSE ${now - 89 * DAY_MS} + ((${k} - ${old})::bigint * ${88 * DAY_MS}) / ${Math.max(1, n - old)} END)`;
    const prose = PROSE.replaceAll("'", "''");
    for (let from = first; from < first + n; from += step) {
      const to = Math.min(first + n, from + step) - 1;
      await client.query('BEGIN');
      await client.query(
        `INSERT INTO sessions (id, surface, workspace_id, channel_id, thread_id, binding, context_id,
           task, question, last_question_key, version, turn_seq, created_at, updated_at)
         SELECT 'bench:T1:C1:y-' || i, 'bench', 'T1', 'C1', 'y-' || i, $1, 'yctx-' || i,
           NULL, NULL, NULL, ${2 + 4 * TURNS_PER_THREAD}, ${TURNS_PER_THREAD}, ${at} - 600000, ${at}
         FROM generate_series(${from}, ${to}) AS i`,
        [BINDING],
      );
      await client.query(
        `INSERT INTO turns (id, session_id, seq, kind, chat_message_id, text, metadata, task_id, state,
           outcome, attempts, first_sent_at, busy_notice_at, answer_ref, created_at, updated_at,
           trace_context, label)
         SELECT 'ak-' || md5(i || '.' || seq), 'bench:T1:C1:y-' || i, seq, 'message', 'y-' || i || '.' || seq,
           label || E'\\n' || substr(repeat('${prose}', 2), 1 + ((i * 37 + seq * 101) % ${PROSE.length}), 260 + ((i + seq) % 80)),
           jsonb_build_object('agentkourier.dev/actor', jsonb_build_object('id', 'U' || (i % 5000), 'name', 'Person ' || (i % 5000))),
           'task-y-' || i || '-' || seq, 'settled', 'completed', 1, t, NULL,
           '1' || substr(t::text, 1, 9) || '.' || lpad(i::text, 6, '0'), t,
           CASE WHEN seq = ${TURNS_PER_THREAD} THEN ${at} ELSE t + 60000 END,
           jsonb_build_object('traceparent', '00-' || md5(i || '.' || seq) || '-' || substr(md5(i || '.' || seq), 1, 16) || '-01'),
           label
         FROM generate_series(${from}, ${to}) AS i,
           generate_series(1, ${TURNS_PER_THREAD}) AS seq,
           LATERAL (SELECT ${at} - 600000 + (seq - 1) * 300000 AS t,
             '[Slack: Person ' || (i % 5000) || ' (U0' || (i % 5000) || ') <person' || (i % 5000) || '@example.com>]' AS label) AS x`,
      );
      await client.query(
        `INSERT INTO answer_feedback (turn_id, actor_id, session_id, task_id, value, presses, told_in, updated_at)
         SELECT 'ak-' || md5(i || '.1'), 'U' || (i % 5000), 'bench:T1:C1:y-' || i, 'task-y-' || i || '-1',
           'positive', 1, 'ak-' || md5(i || '.2'), ${at}
         FROM generate_series(${from}, ${to}) AS i WHERE i % ${FEEDBACK_EVERY} = 0`,
      );
      await client.query(
        `INSERT INTO leases (session_id, owner, expires_at, takes)
         SELECT 'bench:T1:C1:y-' || i, '', 0, 1 FROM generate_series(${from}, ${to}) AS i`,
      );
      await client.query('COMMIT');
    }
    await client.query('ANALYZE');
  } finally {
    await client.end();
  }
}

/** Every table of the schema with its indexes and TOAST, as the store's own size() counts it. */
export async function postgresBytes(connectionString: string, schema: string): Promise<number> {
  const client = new pg.Client({ connectionString });
  await client.connect();
  try {
    const { rows } = await client.query<{ bytes: string }>(
      `SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0)::text AS bytes
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
       WHERE n.nspname = $1 AND c.relkind = 'r'`,
      [schema],
    );
    return Number(rows[0]?.bytes ?? 0);
  } finally {
    await client.end();
  }
}

export async function postgresExec(connectionString: string, schema: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString });
  await client.connect();
  try {
    await client.query(`SET search_path TO "${schema}"`);
    await client.query(sql);
  } finally {
    await client.end();
  }
}
