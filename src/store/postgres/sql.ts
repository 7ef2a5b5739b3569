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
   * The inbound events of the `wanted` rows that `join` keeps, claimed in a batched turn insert:
   * a key seen within the TTL ($ttl, in ms) stays claimed and is not returned; an older one
   * counts as new and is claimed again (as claimEvent, for one key).
   */
  const claimEvents = (join: string, ttl: string) => `
        INSERT INTO ${events} AS seen (event_key, created_at)
        SELECT w.event, w.now FROM wanted AS w ${join}
        WHERE w.event IS NOT NULL
        ON CONFLICT (event_key) DO UPDATE SET created_at = EXCLUDED.created_at
        WHERE seen.created_at < EXCLUDED.created_at - ${ttl}::bigint
        RETURNING event_key`;

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
     * Opens sessions (batched: one array per column, an id at most once): inserts those that are
     * new, reads those already there. After DO NOTHING waited for a concurrent insert of the same
     * key, that row is not in this statement's snapshot: no row comes back for it, and the caller
     * reads it with selectSession (a new snapshot). `opened`: this statement inserted the row.
     */
    openSessions: `
      WITH wanted AS (
        SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bigint[])
          AS w(id, surface, workspace_id, channel_id, thread_id, binding, now)
      ), inserted AS (
        INSERT INTO ${sessions} (id, surface, workspace_id, channel_id, thread_id, binding, version,
                                 created_at, updated_at)
        SELECT id, surface, workspace_id, channel_id, thread_id, binding, 1, now, now FROM wanted ORDER BY id
        ON CONFLICT DO NOTHING
        RETURNING ${sessionColumns}
      )
      SELECT ${sessionColumns}, true AS opened FROM inserted
      UNION ALL
      SELECT ${sessionColumns}, false AS opened FROM ${sessions} AS s
      WHERE s.id = ANY($1::text[]) AND NOT EXISTS (SELECT 1 FROM inserted WHERE inserted.id = s.id)`,
    selectSession: `SELECT ${sessionColumns} FROM ${sessions} WHERE id = $1`,
    /** The batched reads (batches.ts): the rows of every id asked for in one statement. */
    selectSessions: `SELECT ${sessionColumns} FROM ${sessions} WHERE id = ANY($1::text[])`,
    selectTurns: `SELECT ${turnColumns} FROM ${turns} WHERE id = ANY($1::text[])`,
    selectOpenTurnsOf: `
      SELECT ${turnColumns} FROM ${turns}
      WHERE session_id = ANY($1::text[]) AND state <> 'settled'
      ORDER BY session_id, seq`,
    /**
     * Adds turns (batched: one array per column, a session at most once) in one statement: locks
     * their session rows in id order, so seq is handed out in order (a concurrent add waits,
     * then reads the counter it left); claims each turn's inbound event ($17, when not null;
     * $18 the TTL) only when its session exists, so an event is never claimed for a turn that
     * could not be stored; inserts each turn unless its id or chat message is already there;
     * moves a counter only when its turn went in, so a repeat does not use up a number. Per
     * turn asked for: session_found false when its session does not exist (nothing written for
     * it); the new turn's id and seq when it went in, no id for a repeat (the caller reads the
     * one it hit, selectDuplicateTurn). Only what the statement decided comes back: the caller
     * builds the rest of the record from what it wrote (written-records.ts).
     */
    addTurns: `
      WITH wanted AS (
        SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
                             $8::text[], $9::text[], $10::integer[], $11::bigint[], $12::bigint[], $13::text[],
                             $14::text[], $15::bigint[], $16::text[], $17::text[])
          AS w(id, session_id, kind, chat_message_id, text, metadata, task_id, state, outcome, attempts,
               first_sent_at, busy_notice_at, answer_ref, trace_context, now, label, event)
      ), counter AS (
        SELECT id, turn_seq FROM ${sessions} WHERE id = ANY($2::text[]) ORDER BY id FOR NO KEY UPDATE
      ), claimed AS (${claimEvents('JOIN counter AS c ON c.id = w.session_id', '$18')}
      ), inserted AS (
        INSERT INTO ${turns} (id, session_id, seq, kind, chat_message_id, text, metadata, task_id, state,
                             outcome, attempts, first_sent_at, busy_notice_at, answer_ref, created_at,
                             updated_at, trace_context, label)
        SELECT w.id, w.session_id, c.turn_seq + 1, w.kind, w.chat_message_id, w.text, w.metadata::jsonb,
               w.task_id, w.state, w.outcome, w.attempts, w.first_sent_at, w.busy_notice_at, w.answer_ref,
               w.now, w.now, w.trace_context::jsonb, w.label
        FROM wanted AS w JOIN counter AS c ON c.id = w.session_id
        ON CONFLICT DO NOTHING
        RETURNING id, session_id, seq
      ), counted AS (
        UPDATE ${sessions} AS s SET turn_seq = inserted.seq FROM inserted WHERE s.id = inserted.session_id
      )
      SELECT w.id AS asked, c.id IS NOT NULL AS session_found, (SELECT count(*) FROM claimed) AS claimed,
             inserted.id, inserted.seq
      FROM wanted AS w
      LEFT JOIN counter AS c ON c.id = w.session_id
      LEFT JOIN inserted ON inserted.id = w.id`,
    /**
     * Opens new sessions with their first turns (batched: one array per column, a session at
     * most once), each call all or nothing: its session goes in with version 1, its turn as
     * seq 1 (the counter at 1), its inbound event ($23, when not null; $24 the TTL) claimed.
     * Meant for sessions the caller found missing: a session that is there (or inserted by a
     * concurrent statement meanwhile, which DO NOTHING waited for) stops its call, and nothing
     * of that call is written — `opened` false, no turn id — so the caller reads the
     * session and adds its turn the ordinary way. A turn whose id is taken (by another
     * session's turn: this one is new) is not inserted and uses up no number, as addTurns
     * would: `opened` true, no turn id, and the caller reads the turn that holds the id. An
     * opened call's session and turn are what the caller wrote (version 1, seq 1): only the
     * turn's id comes back, and the caller builds both records (written-records.ts, rows.ts).
     */
    openSessionsWithTurns: `
      WITH wanted AS (
        SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bigint[],
                             $8::text[], $9::text[], $10::text[], $11::text[], $12::text[], $13::text[],
                             $14::text[], $15::text[], $16::integer[], $17::bigint[], $18::bigint[], $19::text[],
                             $20::text[], $21::bigint[], $22::text[], $23::text[])
          AS w(sid, surface, workspace_id, channel_id, thread_id, binding, opened_at, id, kind, chat_message_id,
               text, metadata, task_id, state, outcome, attempts, first_sent_at, busy_notice_at, answer_ref,
               trace_context, now, label, event)
      ), taken AS (
        SELECT w.sid FROM wanted AS w WHERE EXISTS (SELECT 1 FROM ${turns} AS t WHERE t.id = w.id)
      ), opened AS (
        INSERT INTO ${sessions} (id, surface, workspace_id, channel_id, thread_id, binding, version, turn_seq,
                                 created_at, updated_at)
        SELECT sid, surface, workspace_id, channel_id, thread_id, binding, 1,
               CASE WHEN sid IN (SELECT sid FROM taken) THEN 0 ELSE 1 END, opened_at, opened_at
        FROM wanted ORDER BY sid
        ON CONFLICT DO NOTHING
        RETURNING id
      ), claimed AS (${claimEvents('JOIN opened AS o ON o.id = w.sid', '$24')}
      ), added AS (
        INSERT INTO ${turns} (id, session_id, seq, kind, chat_message_id, text, metadata, task_id, state,
                             outcome, attempts, first_sent_at, busy_notice_at, answer_ref, created_at,
                             updated_at, trace_context, label)
        SELECT w.id, w.sid, 1, w.kind, w.chat_message_id, w.text, w.metadata::jsonb, w.task_id, w.state,
               w.outcome, w.attempts, w.first_sent_at, w.busy_notice_at, w.answer_ref, w.now, w.now,
               w.trace_context::jsonb, w.label
        FROM wanted AS w JOIN opened AS o ON o.id = w.sid
        WHERE w.sid NOT IN (SELECT sid FROM taken)
        ON CONFLICT DO NOTHING
        RETURNING id, session_id
      )
      SELECT w.sid AS asked, o.id IS NOT NULL AS opened, (SELECT count(*) FROM claimed) AS claimed, added.id
      FROM wanted AS w
      LEFT JOIN opened AS o ON o.id = w.sid
      LEFT JOIN added ON added.session_id = w.sid`,
    selectDuplicateTurn: `
      SELECT ${turnColumns} FROM ${turns}
      WHERE id = $1 OR (session_id = $2 AND chat_message_id = $3)
      ORDER BY (id = $1) DESC
      LIMIT 1`,
    /** Batched: one answer ref per turn ($1 ids, $2 refs, $3 times; an id at most once). */
    updateAnswerRefs: `
      UPDATE ${turns} AS t SET answer_ref = r.ref, updated_at = r.now
      FROM unnest($1::text[], $2::text[], $3::bigint[]) AS r(id, ref, now)
      WHERE t.id = r.id`,
    /**
     * Commits (batched: a commit at most once per session), in one statement, each all or
     * nothing on its own. Per commit (`ord`, $1): its session ($2…$9, null id when it writes
     * none), its fence owner ($10, null when not fenced) and lease time ($11, null: the
     * database's clock); its fenced sessions ($12 ords, $13 ids); its turns ($14 ords, $15…$26
     * one array per column).
     *
     * - fence: locks, in id order, the lease rows the commits' owners hold live, until the
     *   statement commits, so a takeover (an upsert of the same row) waits behind it: the old
     *   owner's write lands before the new owner starts, never after. `lost`: a commit's fenced
     *   sessions without such a lease.
     * - missing: a commit's turns not in the table (turns are never deleted, so this
     *   statement's snapshot answers).
     * - Only a commit with neither is written: its session (compared on version, bumped; the
     *   session rows are locked in id order first) and then its turns, these only if its session
     *   was written or it gives none.
     *
     * The caller reads each commit's outcome: `lost` → LeaseLostError, `missing` → StoreError,
     * no session id while it gave one → StaleWriteError (the version moved on). A written
     * session is the caller's with its version bumped and its update time: only its id comes
     * back, and the caller builds the record (written-records.ts).
     *
     * The fence and the locked sessions are joins with the commits, not `EXISTS`/`IN` over a
     * CTE: the planner estimates those as one row and ran them as a scan of the CTE per lease
     * and per session (for 500 commits, 250,000 comparisons: 80 of a statement's 120 ms).
     */
    commits: `
      WITH items AS (
        SELECT * FROM unnest($1::integer[], $2::text[], $3::integer[], $4::text[], $5::text[], $6::text[],
                             $7::text[], $8::text[], $9::bigint[], $10::text[], $11::bigint[])
          AS i(ord, sid, version, binding, context_id, task, question, last_question_key, now, owner, at)
      ), fenced AS (
        SELECT f.ord, f.sid, i.owner, i.at FROM unnest($12::integer[], $13::text[]) AS f(ord, sid)
        JOIN items AS i ON i.ord = f.ord
      ), fence AS (
        SELECT l.session_id, l.owner FROM ${leases} AS l
        JOIN fenced AS f ON f.sid = l.session_id AND f.owner = l.owner
        WHERE l.session_id = ANY($13::text[]) AND l.expires_at > ${clock('f.at')}
        ORDER BY l.session_id
        FOR UPDATE OF l
      ), wanted AS (
        SELECT * FROM unnest($14::integer[], $15::text[], $16::text[], $17::text[], $18::text[], $19::text[],
                             $20::text[], $21::text[], $22::text[], $23::integer[], $24::bigint[], $25::bigint[],
                             $26::text[])
          AS w(ord, id, session_id, kind, text, metadata, task_id, state, outcome, attempts, first_sent_at,
               busy_notice_at, answer_ref)
      ), lost AS (
        SELECT f.ord, array_agg(f.sid ORDER BY f.sid) AS ids FROM fenced AS f
        WHERE NOT EXISTS (SELECT 1 FROM fence WHERE fence.session_id = f.sid AND fence.owner = f.owner)
        GROUP BY f.ord
      ), missing AS (
        SELECT w.ord, array_agg(w.id ORDER BY w.id) AS ids FROM wanted AS w
        WHERE NOT EXISTS (SELECT 1 FROM ${turns} AS t WHERE t.id = w.id AND t.session_id = w.session_id)
        GROUP BY w.ord
      ), ok AS (
        SELECT i.ord, i.sid FROM items AS i
        WHERE NOT EXISTS (SELECT 1 FROM lost WHERE lost.ord = i.ord)
          AND NOT EXISTS (SELECT 1 FROM missing WHERE missing.ord = i.ord)
      ), locked AS (
        SELECT s.id, ok.ord FROM ${sessions} AS s JOIN ok ON ok.sid = s.id ORDER BY s.id FOR NO KEY UPDATE OF s
      ), written AS (
        UPDATE ${sessions} AS s
        SET binding = i.binding, context_id = i.context_id, task = i.task::jsonb, question = i.question::jsonb,
            last_question_key = i.last_question_key, version = s.version + 1, updated_at = i.now
        FROM locked AS k JOIN items AS i ON i.ord = k.ord
        WHERE s.id = k.id AND s.version = i.version
        RETURNING i.ord AS written_ord, s.id
      ), turns_written AS (
        UPDATE ${turns} AS t
        SET kind = w.kind, text = w.text, metadata = w.metadata::jsonb, task_id = w.task_id, state = w.state,
            outcome = w.outcome, attempts = w.attempts, first_sent_at = w.first_sent_at,
            busy_notice_at = w.busy_notice_at, answer_ref = COALESCE(w.answer_ref, t.answer_ref),
            updated_at = i.now
        FROM wanted AS w JOIN items AS i ON i.ord = w.ord
        WHERE t.id = w.id AND t.session_id = w.session_id AND w.ord IN (SELECT ord FROM ok)
          AND (i.sid IS NULL OR EXISTS (SELECT 1 FROM written WHERE written.written_ord = w.ord))
        RETURNING t.id
      )
      SELECT i.ord AS asked, lost.ids AS lost, missing.ids AS missing,
             (SELECT count(*) FROM turns_written) AS turns_written, written.id
      FROM items AS i
      LEFT JOIN lost ON lost.ord = i.ord
      LEFT JOIN missing ON missing.ord = i.ord
      LEFT JOIN written ON written.written_ord = i.ord`,
    sessionsWithWork: `
      SELECT s.id, s.version, s.turn_seq FROM ${sessions} AS s WHERE s.id IN (
        SELECT id FROM ${sessions} WHERE task IS NOT NULL OR question IS NOT NULL
        UNION
        SELECT session_id FROM ${turns} WHERE state <> 'settled')`,
    /**
     * The sessions with work that $1 can drive now: none under another owner's lease that is
     * live at $2 (null: the database's clock), so a replica's scan does not ask for the lease of
     * every session the others drive. An expired lease does not hide its session.
     */
    sessionsWithWorkFor: `
      SELECT s.id, s.version, s.turn_seq FROM ${sessions} AS s WHERE s.id IN (
        SELECT id FROM ${sessions} WHERE task IS NOT NULL OR question IS NOT NULL
        UNION
        SELECT session_id FROM ${turns} WHERE state <> 'settled')
      AND NOT EXISTS (
        SELECT 1 FROM ${leases} AS l
        WHERE l.session_id = s.id AND l.owner <> $1 AND l.expires_at > ${clock('$2')}
      )`,
    /** A key older than the TTL ($3 is the cutoff) counts as new, whether or not it was pruned. */
    claimEvent: `
      INSERT INTO ${events} AS seen (event_key, created_at) VALUES ($1, $2)
      ON CONFLICT (event_key) DO UPDATE SET created_at = EXCLUDED.created_at
      WHERE seen.created_at < $3
      RETURNING event_key`,
    pruneEvents: `DELETE FROM ${events} WHERE created_at < $1`,
    /**
     * Takes free or expired leases, or renews our own, in one statement: no read-then-write
     * race. Batched: $1 the sessions (each at most once), $2 their owners, $3 the times (null:
     * the database's), $4 the TTL, one for the batch; the new expiry minus the TTL is the time
     * the statement read. Rows go in in id order, the order a fenced commit locks them in.
     * Returns the sessions whose lease was taken, with the row's takes: 1 when this statement
     * inserted it (rows are kept on release, so nobody held that lease before).
     */
    acquireLeases: `
      INSERT INTO ${leases} AS held (session_id, owner, expires_at, takes)
      SELECT a.id, a.owner, ${clock('a.at')} + $4::bigint, 1
      FROM unnest($1::text[], $2::text[], $3::bigint[]) AS a(id, owner, at)
      ORDER BY a.id
      ON CONFLICT (session_id) DO UPDATE
        SET owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at, takes = held.takes + 1
      WHERE held.expires_at <= EXCLUDED.expires_at - $4::bigint OR held.owner = EXCLUDED.owner
      RETURNING session_id, takes`,
    /** $2 is the time (null: the database's), $3 the TTL. */
    renewLeases: `
      UPDATE ${leases} SET expires_at = c.now + $3
      FROM (SELECT ${clock('$2')} AS now) AS c
      WHERE owner = $1 AND expires_at > c.now
      RETURNING session_id`,
    /**
     * Batched: $1 the sessions, $2 their owners. The row is expired, not deleted: it stays as
     * the record that the session was driven (acquireLeases' takes).
     */
    /** $1 the session: whoever holds its lease loses it (the row stays on record). */
    revokeLease: `UPDATE ${leases} SET expires_at = 0 WHERE session_id = $1`,
    releaseLeases: `
      UPDATE ${leases} AS l SET expires_at = 0 FROM unnest($1::text[], $2::text[]) AS r(id, owner)
      WHERE l.session_id = r.id AND l.owner = r.owner`,
    /**
     * Batched, run after releaseLeases has committed (a snapshot of its own, so it sees every
     * turn added before the release): $1 the sessions, $2 the highest seq each driver read.
     * Returns the 1-based positions of those with a newer turn that is neither settled nor a
     * reply kept as context.
     */
    turnsWaitingAfter: `
      SELECT r.ord FROM unnest($1::text[], $2::bigint[]) WITH ORDINALITY AS r(id, seen, ord)
      WHERE EXISTS (
        SELECT 1 FROM ${turns} AS t
        WHERE t.session_id = r.id AND t.seq > r.seen AND t.state <> 'settled' AND t.kind <> 'context'
      )`,
  };
}
