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
  const turnColumns = `kind = $3, text = $4, metadata = $5::jsonb, task_id = $6, state = $7, outcome = $8,
    attempts = $9, first_sent_at = $10, busy_notice_at = $11, answer_ref = COALESCE($12, answer_ref), updated_at = $13`;

  /**
   * Lease times come from the database's clock, the one clock every replica shares, so a
   * replica whose own clock is off cannot take a live lease or renew one into the past. The
   * parameter is null then; the store's 'caller' mode passes its caller's time instead.
   */
  const clock = (param: string) =>
    `COALESCE(${param}::bigint, (extract(epoch from clock_timestamp()) * 1000)::bigint)`;

  return {
    insertSession: `
      INSERT INTO ${sessions} (id, surface, workspace_id, channel_id, thread_id, binding, version,
                               created_at, updated_at)
      VALUES ($1, $2, $3, $4, $5, $6, 1, $7, $7)
      ON CONFLICT DO NOTHING`,
    selectSession: `SELECT * FROM ${sessions} WHERE id = $1`,
    /** Locks the session row: adds to one session queue here, so seq is handed out in order. */
    lockSessionCounter: `SELECT turn_seq FROM ${sessions} WHERE id = $1 FOR NO KEY UPDATE`,
    /**
     * Inserts the turn unless its id or chat message is already there, and moves the session's
     * counter only when it did, so a repeat does not use up a number.
     */
    insertTurn: `
      WITH inserted AS (
        INSERT INTO ${turns} (id, session_id, seq, kind, chat_message_id, text, metadata, task_id, state,
                             outcome, attempts, first_sent_at, busy_notice_at, answer_ref, created_at,
                             updated_at, trace_context, label)
        VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, $8, $9, $10, $11, $12, $13, $14, $15, $15, $16::jsonb, $17)
        ON CONFLICT DO NOTHING
        RETURNING *
      ), counted AS (
        UPDATE ${sessions} SET turn_seq = $3 WHERE id = $2 AND EXISTS (SELECT 1 FROM inserted)
      )
      SELECT * FROM inserted`,
    /** The turn a repeat collides with: the same id first, else the same chat message. */
    selectDuplicateTurn: `
      SELECT * FROM ${turns}
      WHERE id = $1 OR (session_id = $2 AND chat_message_id = $3)
      ORDER BY (id = $1) DESC
      LIMIT 1`,
    selectTurn: `SELECT * FROM ${turns} WHERE id = $1`,
    updateAnswerRef: `UPDATE ${turns} SET answer_ref = $2, updated_at = $3 WHERE id = $1`,
    selectOpenTurns: `SELECT * FROM ${turns} WHERE session_id = $1 AND state <> 'settled' ORDER BY seq`,
    /**
     * Locks the lease rows a fenced commit depends on until it commits: a takeover (an upsert of
     * the same row) waits behind it, so the old owner's write lands before the new owner starts,
     * never after.
     */
    lockLeases: `
      SELECT session_id, owner, expires_at > ${clock('$2')} AS live FROM ${leases}
      WHERE session_id = ANY($1::text[])
      ORDER BY session_id
      FOR UPDATE`,
    updateSession: `
      UPDATE ${sessions}
      SET binding = $3, context_id = $4, task = $5::jsonb, question = $6::jsonb, last_question_key = $7,
          version = version + 1, updated_at = $8
      WHERE id = $1 AND version = $2
      RETURNING *`,
    updateTurn: `UPDATE ${turns} SET ${turnColumns} WHERE id = $1 AND session_id = $2`,
    sessionsWithWork: `
      SELECT id FROM ${sessions} WHERE task IS NOT NULL OR question IS NOT NULL
      UNION
      SELECT session_id FROM ${turns} WHERE state <> 'settled'`,
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
