import { InvalidConfigError } from '../../core/errors.js';

/**
 * The statements of the PostgreSQL store, with table names qualified by its schema. The schema
 * name is the only thing ever spliced into SQL: it is validated against SCHEMA_NAME first and
 * quoted; every value travels as a parameter.
 */

export const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

export type PostgresSql = ReturnType<typeof postgresSql>;

export function postgresSql(schema: string) {
  if (!SCHEMA_NAME.test(schema))
    throw new InvalidConfigError(`invalid schema name ${JSON.stringify(schema)}`);
  const sessions = `"${schema}".sessions`;
  const turns = `"${schema}".turns`;
  const leases = `"${schema}".leases`;
  const events = `"${schema}".inbound_events`;

  /**
   * Lease times come from the database's clock, the one clock every replica shares, so a
   * replica whose own clock is off cannot take a live lease or renew one into the past. The
   * parameter is null then; the store's 'caller' mode passes its caller's time instead.
   */
  const clock = (param: string) =>
    `COALESCE(${param}::bigint, (extract(epoch from clock_timestamp()) * 1000)::bigint)`;

  /**
   * Named columns, never `*`: the statements are prepared once per connection, and a prepared
   * `SELECT *` fails ("cached plan must not change result type") once a newer replica's
   * migration adds a column during a rolling deploy.
   */
  const sessionColumns = `id, surface, workspace_id, channel_id, thread_id, binding, context_id, task, question,
    last_question_key, version, created_at, updated_at`;
  const turnColumns = `id, session_id, seq, kind, chat_message_id, text, label, metadata, task_id, state, outcome,
    attempts, first_sent_at, busy_notice_at, answer_ref, trace_context, created_at, updated_at`;

  return {
    /**
     * Opens the session in one round trip: inserts it, or reads the one already there. After DO
     * NOTHING waited for a concurrent insert of the same key, that row is not in this statement's
     * snapshot: no row comes back, and the caller reads it with selectSession (a new snapshot).
     */
    openSession: `
      WITH inserted AS (
        INSERT INTO ${sessions} (id, surface, workspace_id, channel_id, thread_id, binding, version,
                                 created_at, updated_at)
        VALUES ($1, $2, $3, $4, $5, $6, 1, $7, $7)
        ON CONFLICT DO NOTHING
        RETURNING ${sessionColumns}
      )
      SELECT ${sessionColumns} FROM inserted
      UNION ALL
      SELECT ${sessionColumns} FROM ${sessions} WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM inserted)`,
    selectSession: `SELECT ${sessionColumns} FROM ${sessions} WHERE id = $1`,
    /**
     * Adds a turn in one statement (one round trip, one commit): locks the session row, so seq is
     * handed out in order (a concurrent add waits, then reads the counter it left); claims the
     * inbound event ($17, when not null; $18 the cutoff of its TTL) only when the session exists,
     * so an event is never claimed for a turn that could not be stored; inserts the turn unless
     * its id or chat message is already there; moves the counter only when it did, so a repeat
     * does not use up a number. No row of the session: session_found is false and nothing is
     * written. A repeat: no turn columns; the caller reads the one it hit (selectDuplicateTurn).
     */
    addTurn: `
      WITH counter AS (
        SELECT turn_seq FROM ${sessions} WHERE id = $2 FOR NO KEY UPDATE
      ), claimed AS (
        INSERT INTO ${events} AS seen (event_key, created_at)
        SELECT $17::text, $15::bigint WHERE $17::text IS NOT NULL AND EXISTS (SELECT 1 FROM counter)
        ON CONFLICT (event_key) DO UPDATE SET created_at = EXCLUDED.created_at
        WHERE seen.created_at < $18::bigint
        RETURNING event_key
      ), inserted AS (
        INSERT INTO ${turns} (id, session_id, seq, kind, chat_message_id, text, metadata, task_id, state,
                             outcome, attempts, first_sent_at, busy_notice_at, answer_ref, created_at,
                             updated_at, trace_context, label)
        SELECT $1::text, $2::text, counter.turn_seq + 1, $3::text, $4::text, $5::text, $6::jsonb, $7::text,
               $8::text, $9::text, $10::integer, $11::bigint, $12::bigint, $13::text, $15::bigint,
               $15::bigint, $14::jsonb, $16::text
        FROM counter
        ON CONFLICT DO NOTHING
        RETURNING ${turnColumns}
      ), counted AS (
        UPDATE ${sessions} AS s SET turn_seq = inserted.seq FROM inserted WHERE s.id = $2
      )
      SELECT EXISTS (SELECT 1 FROM counter) AS session_found,
             (SELECT count(*) FROM claimed) AS claimed, inserted.*
      FROM (VALUES (1)) AS one LEFT JOIN inserted ON true`,
    selectDuplicateTurn: `
      SELECT ${turnColumns} FROM ${turns}
      WHERE id = $1 OR (session_id = $2 AND chat_message_id = $3)
      ORDER BY (id = $1) DESC
      LIMIT 1`,
    selectTurn: `SELECT ${turnColumns} FROM ${turns} WHERE id = $1`,
    updateAnswerRef: `UPDATE ${turns} SET answer_ref = $2, updated_at = $3 WHERE id = $1`,
    selectOpenTurns: `SELECT ${turnColumns} FROM ${turns} WHERE session_id = $1 AND state <> 'settled' ORDER BY seq`,
    /**
     * A commit in one statement: one round trip, one durable commit, all or nothing.
     *
     * - fence: locks the lease rows ($11, sorted) that $9 holds live at $10 (null: the
     *   database's clock) until the commit ends, so a takeover (an upsert of the same row) waits
     *   behind it: the old owner's write lands before the new owner starts, never after. `lost`
     *   lists the fenced sessions without such a lease (null when none, or when not fenced).
     * - missing: the commit's turns ($12…$23, one array per column) not in the table (turns are
     *   never deleted, so this statement's snapshot answers).
     * - Only when both are empty is anything written: the session ($1…$8; compared on version,
     *   bumped) and then the turns, these only if the session was written or none is given.
     *
     * The caller reads the outcome: `lost` → LeaseLostError, `missing` → StoreError, no session
     * columns while one was given → StaleWriteError (its version moved on).
     */
    commit: `
      WITH fence AS (
        SELECT session_id FROM ${leases}
        WHERE session_id = ANY($11::text[]) AND owner = $9::text AND expires_at > ${clock('$10')}
        ORDER BY session_id
        FOR UPDATE
      ), wanted AS (
        SELECT * FROM unnest($12::text[], $13::text[], $14::text[], $15::text[], $16::text[], $17::text[],
                             $18::text[], $19::text[], $20::integer[], $21::bigint[], $22::bigint[], $23::text[])
          AS w(id, session_id, kind, text, metadata, task_id, state, outcome, attempts, first_sent_at,
               busy_notice_at, answer_ref)
      ), checks AS (
        SELECT (SELECT array_agg(id ORDER BY id) FROM unnest($11::text[]) AS f(id)
                WHERE NOT EXISTS (SELECT 1 FROM fence WHERE fence.session_id = f.id)) AS lost,
               (SELECT array_agg(w.id) FROM wanted AS w
                WHERE NOT EXISTS (SELECT 1 FROM ${turns} AS t WHERE t.id = w.id AND t.session_id = w.session_id))
                 AS missing
      ), written AS (
        UPDATE ${sessions}
        SET binding = $3, context_id = $4, task = $5::jsonb, question = $6::jsonb, last_question_key = $7,
            version = version + 1, updated_at = $8
        WHERE id = $1 AND version = $2
          AND (SELECT lost IS NULL AND missing IS NULL FROM checks)
        RETURNING ${sessionColumns}
      ), turns_written AS (
        UPDATE ${turns} AS t
        SET kind = w.kind, text = w.text, metadata = w.metadata::jsonb, task_id = w.task_id, state = w.state,
            outcome = w.outcome, attempts = w.attempts, first_sent_at = w.first_sent_at,
            busy_notice_at = w.busy_notice_at, answer_ref = COALESCE(w.answer_ref, t.answer_ref), updated_at = $8
        FROM wanted AS w
        WHERE t.id = w.id AND t.session_id = w.session_id
          AND (SELECT lost IS NULL AND missing IS NULL FROM checks)
          AND ($1::text IS NULL OR EXISTS (SELECT 1 FROM written))
        RETURNING t.id
      )
      SELECT checks.lost, checks.missing, (SELECT count(*) FROM turns_written) AS turns_written, written.*
      FROM checks LEFT JOIN written ON true`,
    sessionsWithWork: `
      SELECT id FROM ${sessions} WHERE task IS NOT NULL OR question IS NOT NULL
      UNION
      SELECT session_id FROM ${turns} WHERE state <> 'settled'`,
    /**
     * The sessions with work that $1 can drive now: none under another owner's lease that is
     * live at $2 (null: the database's clock), so a replica's scan does not ask for the lease of
     * every session the others drive. An expired lease does not hide its session.
     */
    sessionsWithWorkFor: `
      SELECT work.id FROM (
        SELECT id FROM ${sessions} WHERE task IS NOT NULL OR question IS NOT NULL
        UNION
        SELECT session_id FROM ${turns} WHERE state <> 'settled'
      ) AS work
      WHERE NOT EXISTS (
        SELECT 1 FROM ${leases} AS l
        WHERE l.session_id = work.id AND l.owner <> $1 AND l.expires_at > ${clock('$2')}
      )`,
    /** A key older than the TTL ($3 is the cutoff) counts as new, whether or not it was pruned. */
    claimEvent: `
      INSERT INTO ${events} AS seen (event_key, created_at) VALUES ($1, $2)
      ON CONFLICT (event_key) DO UPDATE SET created_at = EXCLUDED.created_at
      WHERE seen.created_at < $3
      RETURNING event_key`,
    pruneEvents: `DELETE FROM ${events} WHERE created_at < $1`,
    /**
     * Takes a free or expired lease, or renews our own, in one statement: no read-then-write
     * race. $3 is the time (null: the database's), $4 the TTL; the new expiry minus the TTL is
     * the time the statement read.
     */
    acquireLease: `
      INSERT INTO ${leases} AS held (session_id, owner, expires_at) VALUES ($1, $2, ${clock('$3')} + $4)
      ON CONFLICT (session_id) DO UPDATE SET owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at
      WHERE held.expires_at <= EXCLUDED.expires_at - $4 OR held.owner = EXCLUDED.owner
      RETURNING session_id`,
    /** $2 is the time (null: the database's), $3 the TTL. */
    renewLeases: `
      UPDATE ${leases} SET expires_at = c.now + $3
      FROM (SELECT ${clock('$2')} AS now) AS c
      WHERE owner = $1 AND expires_at > c.now
      RETURNING session_id`,
    releaseLease: `DELETE FROM ${leases} WHERE session_id = $1 AND owner = $2`,
  };
}
