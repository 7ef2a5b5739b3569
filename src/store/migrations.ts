/**
 * The versioned schema of the session store, one entry per change, in order. Each store's
 * `migrate()` applies the entries its database has not recorded in `schema_migrations`, inside
 * one transaction, so a crash mid-migration leaves the previous version intact.
 *
 * Rules for adding an entry: never edit a released one (databases have recorded it as done);
 * append a new version instead, and keep it compatible with the previous build for the length of
 * a rolling deploy (add columns and tables, drop them a release later).
 *
 * Shape shared by both dialects (the row mappers in rows.ts read these column names):
 * - sessions: the key as four columns (unique together: the key IS the identity, and `id` is
 *   derived from it), the binding (indexed: a Binding's sessions are found when it changes),
 *   task and question as JSON, and `turn_seq`, the per-session counter that numbers turns. The
 *   counter lives on the session row so that numbering a turn locks that one row: concurrent
 *   adds to one session queue behind each other, adds to other sessions do not.
 * - turns: unique by id (the A2A messageId) and by (session, chat message), the two ways a
 *   repeat delivery is recognised; (session, seq) unique as a guard on the counter.
 * - Partial indexes hold exactly the rows `sessionsWithWork()` and `openTurns()` read, so both
 *   stay index lookups however many settled turns and idle sessions pile up.
 * - leases: one row per driven session (no foreign key: a lease names a session id, and taking
 *   one must not depend on the order in which a session and its lease are written), kept once
 *   released (expired) so that its first take can be told from the others (version 8).
 * - inbound_events: the event keys seen, with when, so old ones can be pruned.
 *
 * SQLite tables are STRICT so a value of the wrong type is refused rather than stored.
 */

import { chatAddressTables } from './chat-address-rows.js';
import { feedbackTables } from './feedback-rows.js';
import { identityLinkTables } from './identity-link-rows.js';
import { installationTables } from './installation-rows.js';

export interface Migration {
  version: number;
  name: string;
  sqlite: string;
  postgres: string;
}

export const migrations: readonly Migration[] = [
  {
    version: 1,
    name: 'sessions, turns, leases, inbound events',
    sqlite: `
      CREATE TABLE sessions (
        id TEXT PRIMARY KEY,
        surface TEXT NOT NULL,
        workspace_id TEXT NOT NULL,
        channel_id TEXT NOT NULL,
        thread_id TEXT NOT NULL,
        binding TEXT NOT NULL,
        context_id TEXT,
        task TEXT,
        question TEXT,
        last_question_key TEXT,
        version INTEGER NOT NULL,
        turn_seq INTEGER NOT NULL DEFAULT 0,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        UNIQUE (surface, workspace_id, channel_id, thread_id)
      ) STRICT;
      CREATE INDEX sessions_binding ON sessions (binding);
      CREATE INDEX sessions_with_work ON sessions (id) WHERE task IS NOT NULL OR question IS NOT NULL;

      CREATE TABLE turns (
        id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL REFERENCES sessions (id),
        seq INTEGER NOT NULL,
        kind TEXT NOT NULL,
        chat_message_id TEXT NOT NULL,
        text TEXT NOT NULL,
        metadata TEXT,
        task_id TEXT,
        state TEXT NOT NULL,
        outcome TEXT,
        attempts INTEGER NOT NULL,
        first_sent_at INTEGER,
        busy_notice_at INTEGER,
        answer_ref TEXT,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        UNIQUE (session_id, chat_message_id),
        UNIQUE (session_id, seq)
      ) STRICT;
      CREATE INDEX turns_open ON turns (session_id, seq) WHERE state <> 'settled';

      CREATE TABLE leases (
        session_id TEXT PRIMARY KEY,
        owner TEXT NOT NULL,
        expires_at INTEGER NOT NULL
      ) STRICT;
      CREATE INDEX leases_owner ON leases (owner);

      CREATE TABLE inbound_events (
        event_key TEXT PRIMARY KEY,
        created_at INTEGER NOT NULL
      ) STRICT;
      CREATE INDEX inbound_events_created_at ON inbound_events (created_at);
    `,
    postgres: `
      CREATE TABLE sessions (
        id text PRIMARY KEY,
        surface text NOT NULL,
        workspace_id text NOT NULL,
        channel_id text NOT NULL,
        thread_id text NOT NULL,
        binding text NOT NULL,
        context_id text,
        task jsonb,
        question jsonb,
        last_question_key text,
        version integer NOT NULL,
        turn_seq integer NOT NULL DEFAULT 0,
        created_at bigint NOT NULL,
        updated_at bigint NOT NULL,
        UNIQUE (surface, workspace_id, channel_id, thread_id)
      );
      CREATE INDEX sessions_binding ON sessions (binding);
      CREATE INDEX sessions_with_work ON sessions (id) WHERE task IS NOT NULL OR question IS NOT NULL;

      CREATE TABLE turns (
        id text PRIMARY KEY,
        session_id text NOT NULL REFERENCES sessions (id),
        seq integer NOT NULL,
        kind text NOT NULL,
        chat_message_id text NOT NULL,
        text text NOT NULL,
        metadata jsonb,
        task_id text,
        state text NOT NULL,
        outcome text,
        attempts integer NOT NULL,
        first_sent_at bigint,
        busy_notice_at bigint,
        answer_ref text,
        created_at bigint NOT NULL,
        updated_at bigint NOT NULL,
        UNIQUE (session_id, chat_message_id),
        UNIQUE (session_id, seq)
      );
      CREATE INDEX turns_open ON turns (session_id, seq) WHERE state <> 'settled';

      CREATE TABLE leases (
        session_id text PRIMARY KEY,
        owner text NOT NULL,
        expires_at bigint NOT NULL
      );
      CREATE INDEX leases_owner ON leases (owner);

      CREATE TABLE inbound_events (
        event_key text PRIMARY KEY,
        created_at bigint NOT NULL
      );
      CREATE INDEX inbound_events_created_at ON inbound_events (created_at);
    `,
  },
  {
    version: 2,
    // The W3C trace context of a turn's span (JSON: traceparent, tracestate), written once
    // with the turn, so a replica that takes the turn over links its span to the first one.
    name: 'turns: trace context',
    sqlite: `ALTER TABLE turns ADD COLUMN trace_context TEXT;`,
    postgres: `ALTER TABLE turns ADD COLUMN trace_context jsonb;`,
  },
  {
    version: 3,
    // Triggers (src/store/trigger-queries.ts reads and writes these; one text for both dialects).
    name: 'triggers: alert groups, alert claims, work, activity, schedules',
    sqlite: triggerTables('INTEGER', ' STRICT'),
    postgres: triggerTables('bigint', ''),
  },
  {
    version: 4,
    // A person's label line (S-6) apart from their text. The text column keeps the line in
    // front while a label is set, so a build before this one reads what it always did
    // (rows.ts, textColumn); rows written before it have no label and the line in the text.
    name: "turns: the person's label",
    sqlite: `ALTER TABLE turns ADD COLUMN label TEXT;`,
    postgres: `ALTER TABLE turns ADD COLUMN label text;`,
  },
  {
    version: 5,
    // What the web chat showed, per thread (src/store/transcript-queries.ts): the thread list and
    // each thread's messages come back after a restart. Bounded by the writer (kept messages per
    // thread, text per message); one text for both dialects, JSON kept as text.
    name: 'transcripts: web chat threads and messages',
    sqlite: transcriptTables('INTEGER', ' STRICT'),
    postgres: transcriptTables('bigint', ''),
  },
  {
    version: 6,
    // Slack installations of the OAuth install flow (installation-rows.ts): ids in clear, the
    // tokens sealed (src/surfaces/slack/installations/keyring.ts).
    name: 'slack installations',
    sqlite: installationTables('INTEGER', ' STRICT'),
    postgres: installationTables('bigint', ''),
  },
  {
    version: 7,
    // Feedback on answers (feedback-rows.ts): each person's latest press per answer, and
    // whether the agent was told of it on a later turn.
    name: 'answer feedback',
    sqlite: feedbackTables('INTEGER', ' STRICT'),
    postgres: feedbackTables('bigint', ''),
  },
  {
    version: 8,
    // A session's lease row outlives its release (the release expires it), and counts its
    // takes: a take that inserts the row is the session's first (LeaseTake), which tells the
    // replica that opened a thread that no other replica has driven it since. Sessions opened
    // before this version get an expired row now, so their next take is not a first. On
    // PostgreSQL a build before this one still deletes the row on release during a rolling
    // deploy: a trigger turns that delete into the same expiry.
    name: 'leases: kept after release, takes counted',
    sqlite: `
      ALTER TABLE leases ADD COLUMN takes INTEGER NOT NULL DEFAULT 1;
      INSERT INTO leases (session_id, owner, expires_at) SELECT id, '', 0 FROM sessions WHERE true
        ON CONFLICT (session_id) DO NOTHING;
    `,
    postgres: `
      ALTER TABLE leases ADD COLUMN takes bigint NOT NULL DEFAULT 1;
      INSERT INTO leases (session_id, owner, expires_at) SELECT id, '', 0 FROM sessions
        ON CONFLICT (session_id) DO NOTHING;
      CREATE FUNCTION leases_expire_on_delete() RETURNS trigger LANGUAGE plpgsql
        SET search_path FROM CURRENT AS $$
        BEGIN
          UPDATE leases SET expires_at = 0 WHERE session_id = OLD.session_id;
          RETURN NULL;
        END $$;
      CREATE TRIGGER leases_kept BEFORE DELETE ON leases
        FOR EACH ROW EXECUTE FUNCTION leases_expire_on_delete();
    `,
  },
  {
    version: 9,
    // Retention (retention-queries.ts): a thread idle longer than the setting is forgotten,
    // its session, turns, feedback and lease deleted, and only its key is remembered, with
    // when, so a reply there is told that it starts a new conversation. The sweep finds idle
    // sessions by updated_at, and a batch's feedback by session (the feedback table's own
    // index holds only the presses not yet told). A forgotten session's lease row goes with
    // it (a new session of the same thread takes its lease as a first): on PostgreSQL the
    // trigger that kept lease rows for builds before version 8 goes (the build before this
    // one never deletes them).
    // The words of a settled turn are cleared an hour after it settled: the partial index holds
    // only the turns still to clear.
    name: 'retention: forgotten threads',
    sqlite: `
      CREATE TABLE forgotten_threads (
        session_id TEXT PRIMARY KEY,
        forgotten_at INTEGER NOT NULL
      ) STRICT;
      CREATE INDEX forgotten_threads_at ON forgotten_threads (forgotten_at);
      CREATE INDEX sessions_updated_at ON sessions (updated_at);
      CREATE INDEX transcript_threads_updated_at ON transcript_threads (updated_at);
      CREATE INDEX answer_feedback_session ON answer_feedback (session_id);
      CREATE INDEX turns_words ON turns (updated_at) WHERE state = 'settled' AND text <> '';
    `,
    postgres: `
      CREATE TABLE forgotten_threads (
        session_id text PRIMARY KEY,
        forgotten_at bigint NOT NULL
      );
      CREATE INDEX forgotten_threads_at ON forgotten_threads (forgotten_at);
      CREATE INDEX sessions_updated_at ON sessions (updated_at);
      CREATE INDEX transcript_threads_updated_at ON transcript_threads (updated_at);
      CREATE INDEX answer_feedback_session ON answer_feedback (session_id);
      CREATE INDEX turns_words ON turns (updated_at) WHERE state = 'settled' AND text <> '';
      DROP TRIGGER leases_kept ON leases;
      DROP FUNCTION leases_expire_on_delete();
    `,
  },
  {
    version: 10,
    // People's sign-in links at an identity provider (identity-link-rows.ts): the refresh token
    // sealed, the person's chat id and email in clear for erasure.
    name: 'identity: sign-in links',
    sqlite: identityLinkTables('INTEGER', ' STRICT'),
    postgres: identityLinkTables('bigint', ''),
  },
  {
    version: 11,
    // An erasure that finds a thread of the person's still answering leaves it (and any of
    // their turns not settled) until the answer ends: the erasure is kept here, the person as
    // 'user:<id>' or 'email:<address in lower case>', and the retention sweep runs it again
    // until nothing of theirs waits (retention-queries.ts).
    name: 'retention: pending erasures',
    sqlite: 'CREATE TABLE pending_erasures (person TEXT PRIMARY KEY, requested_at INTEGER NOT NULL) STRICT;',
    postgres: 'CREATE TABLE pending_erasures (person text PRIMARY KEY, requested_at bigint NOT NULL);',
  },
  {
    version: 12,
    // How a surface reaches a conversation again (chat-address-rows.ts): Microsoft Teams' conversation
    // references, written from each inbound activity and read for every answer, alert and
    // proactive message; removed with the app's removal from the conversation or its team.
    name: 'chat addresses',
    sqlite: chatAddressTables('INTEGER', ' STRICT'),
    postgres: chatAddressTables('bigint', ''),
  },
];

/**
 * A thread's row (its key: surface, workspace, thread) and its messages by seq; the index on
 * (surface, workspace, updated_at) serves "the newest threads".
 */
function transcriptTables(int: string, strict: string): string {
  return `
    CREATE TABLE transcript_threads (
      surface TEXT NOT NULL,
      workspace_id TEXT NOT NULL,
      thread_id TEXT NOT NULL,
      binding TEXT NOT NULL,
      title TEXT NOT NULL,
      created_at ${int} NOT NULL,
      updated_at ${int} NOT NULL,
      PRIMARY KEY (surface, workspace_id, thread_id)
    )${strict};
    CREATE INDEX transcript_threads_recent ON transcript_threads (surface, workspace_id, updated_at);

    CREATE TABLE transcript_messages (
      surface TEXT NOT NULL,
      workspace_id TEXT NOT NULL,
      thread_id TEXT NOT NULL,
      seq ${int} NOT NULL,
      body TEXT NOT NULL,
      updated_at ${int} NOT NULL,
      PRIMARY KEY (surface, workspace_id, thread_id, seq)
    )${strict};
  `;
}

/**
 * The trigger tables, the same in both dialects but for the integer type and SQLite's STRICT.
 * JSON is kept as text in both: nothing queries inside it, and one text of every statement then
 * serves both (trigger-queries.ts).
 * - trigger_groups: an alert group (or a schedule's run, or a storm thread) and its thread.
 *   `opened_at` is when its current thread was opened: the storm limit counts those. A lease
 *   (owner, until) says which replica is doing its work.
 * - trigger_alerts: one row per alert claimed, unique per group and identity: the claim.
 * - trigger_work: the outbox, in seq order per group; partial indexes hold the pending rows.
 * - trigger_activity: each trigger's last delivery, for status.
 * - trigger_schedules: each schedule's anchor and last tick run; the tick is claimed by moving
 *   last_run_at forward in one conditional update.
 */
function triggerTables(int: string, strict: string): string {
  return `
    CREATE TABLE trigger_groups (
      id TEXT PRIMARY KEY,
      workspace_id TEXT NOT NULL,
      binding TEXT NOT NULL,
      trigger_name TEXT NOT NULL,
      group_key TEXT NOT NULL,
      episode ${int} NOT NULL,
      storm ${int} NOT NULL,
      storm_of TEXT,
      thread TEXT,
      state TEXT NOT NULL,
      resolved_at ${int},
      opened_at ${int} NOT NULL,
      work_seq ${int} NOT NULL DEFAULT 0,
      lease_owner TEXT,
      lease_until ${int},
      created_at ${int} NOT NULL,
      updated_at ${int} NOT NULL
    )${strict};
    CREATE INDEX trigger_groups_opened ON trigger_groups (binding, opened_at) WHERE storm = 0 AND storm_of IS NULL;
    CREATE INDEX trigger_groups_storm ON trigger_groups (workspace_id, binding, trigger_name, updated_at) WHERE storm = 1;

    CREATE TABLE trigger_alerts (
      group_id TEXT NOT NULL,
      identity TEXT NOT NULL,
      state TEXT NOT NULL,
      created_at ${int} NOT NULL,
      PRIMARY KEY (group_id, identity)
    )${strict};

    CREATE TABLE trigger_work (
      id TEXT PRIMARY KEY,
      group_id TEXT NOT NULL,
      seq ${int} NOT NULL,
      kind TEXT NOT NULL,
      source_group_id TEXT NOT NULL,
      identities TEXT NOT NULL,
      all_resolved ${int} NOT NULL,
      payload TEXT NOT NULL,
      state TEXT NOT NULL,
      attempts ${int} NOT NULL,
      next_at ${int} NOT NULL,
      created_at ${int} NOT NULL,
      updated_at ${int} NOT NULL,
      UNIQUE (group_id, seq)
    )${strict};
    CREATE INDEX trigger_work_due ON trigger_work (next_at) WHERE state = 'pending';
    CREATE INDEX trigger_work_pending ON trigger_work (group_id, seq) WHERE state = 'pending';

    CREATE TABLE trigger_activity (
      binding TEXT NOT NULL,
      trigger_name TEXT NOT NULL,
      at ${int} NOT NULL,
      result TEXT NOT NULL,
      PRIMARY KEY (binding, trigger_name)
    )${strict};

    CREATE TABLE trigger_schedules (
      binding TEXT NOT NULL,
      trigger_name TEXT NOT NULL,
      fingerprint TEXT NOT NULL,
      anchor_at ${int} NOT NULL,
      last_run_at ${int},
      PRIMARY KEY (binding, trigger_name)
    )${strict};
  `;
}

/** How long an inbound event key is remembered: Slack retries within minutes, not days. */
export const INBOUND_EVENT_TTL_MS = 24 * 60 * 60 * 1000;

/** Old event keys are deleted on one claim in this many, to keep the table small cheaply. */
export const INBOUND_EVENT_PRUNE_EVERY = 1000;
