// A little over our ~400-line rule, as one piece: the session port is one class over one
// connection and one group commit, and its writes (open, add, commit, leases) share the private
// statements and the savepoint each runs in; split, each part would reach into the others'
// connection. What else lives in the same database file (triggers, transcripts, installations,
// feedback) has modules of its own.

import type { DatabaseSync, SQLInputValue } from 'node:sqlite';
import type { ChatAddressRows } from '../../core/chat-address-store.js';
import { LeaseLostError, StaleWriteError, StoreError } from '../../core/errors.js';
import type { FeedbackRows } from '../../core/feedback-store.js';
import type { IdentityLinkStore } from '../../core/identity-link-store.js';
import type { InstallationRows } from '../../core/installation-store.js';
import type { RetentionStore } from '../../core/retention-store.js';
import {
  type AddTurnOptions,
  type Commit,
  type LeaseHolder,
  type LeaseTake,
  type NewSession,
  type NewTurn,
  type SessionRecord,
  type SessionStore,
  sessionIdOf,
  type TurnRecord,
  type WorkMark,
} from '../../core/store.js';
import type { TranscriptStore } from '../../core/transcript-store.js';
import type { TriggerStore } from '../../core/trigger-store.js';
import { StepsChatAddressRows } from '../chat-address-rows.js';
import { markTold, StepsFeedbackRows } from '../feedback-rows.js';
import { StepsIdentityLinks } from '../identity-link-rows.js';
import { StepsInstallationRows } from '../installation-rows.js';
import { INBOUND_EVENT_PRUNE_EVERY, INBOUND_EVENT_TTL_MS } from '../migrations.js';
import { StepsRetentionStore } from '../retention-queries.js';
import {
  newSessionRecord,
  parseJsonText,
  type Row,
  sessionFromRow,
  sessionsOf,
  storeFailure,
  textColumn,
  toJson,
  turnFromRow,
} from '../rows.js';
import { StepsTranscriptStore } from '../transcript-queries.js';
import { StepsTriggerStore } from '../trigger-store.js';
import { newTurnRecord, writtenSessionRecord } from '../written-records.js';
import { durabilityOf, migrateDatabase, openDatabase, Statements } from './connection.js';
import { GroupCommit } from './group-commit.js';
import { SqliteSteps } from './steps-runner.js';

type Params = Record<string, SQLInputValue>;

/**
 * The session store in one SQLite file (`node:sqlite`, built into Node 24): the default, for one
 * replica. The database calls are synchronous. Reads run at once; writes run in the next group
 * commit (group-commit.ts), each start to finish without yielding, so calls from one process
 * never interleave, and each write's promise settles once it is durable.
 *
 * Write transactions start with BEGIN IMMEDIATE (./connection.ts: the file, its pragmas, its
 * migrations and its transactions, shared with the trigger store).
 */
export class SqliteStore implements SessionStore {
  readonly sharedByReplicas = false;
  readonly #db: DatabaseSync;
  readonly #statements: Statements;
  readonly #writes: GroupCommit;
  #claims = 0;
  #transcripts: TranscriptStore | undefined;
  #triggers: TriggerStore | undefined;
  #installations: InstallationRows | undefined;
  #feedback: FeedbackRows | undefined;
  #links: IdentityLinkStore | undefined;
  #addresses: ChatAddressRows | undefined;
  /** The feedback store's runner: also runs a turn's markTold inside the turn's own write. */
  readonly #feedbackSteps: SqliteSteps;
  #retention: RetentionStore | undefined;

  constructor(path: string) {
    const db = openDatabase(path);
    this.#db = db;
    this.#statements = new Statements(db);
    this.#feedbackSteps = new SqliteSteps(db, 'feedback store');
    this.#writes = new GroupCommit(db);
  }

  async probeWrite(): Promise<void> {
    // Setting the header's user_version (which the store does not use) to the value it has is
    // a write of one page that changes nothing, through the same group commit as every write.
    await this.#writes.write('probeWrite', () => {
      const { user_version: version } = this.#db.prepare('PRAGMA user_version').get() as {
        user_version: number;
      };
      this.#db.exec(`PRAGMA user_version = ${Number(version)}`);
    });
  }

  /** The durability settings in force, as SQLite reports them (for diagnostics and tests). */
  get durability(): ReturnType<typeof durabilityOf> {
    return durabilityOf(this.#db);
  }

  async migrate(): Promise<void> {
    this.#guard('migrate', () => migrateDatabase(this.#db));
  }

  /** The trigger store on the same database (its tables come with migrate()). */
  triggers(): TriggerStore {
    this.#triggers ??= new StepsTriggerStore(new SqliteSteps(this.#db, 'trigger store'));
    return this.#triggers;
  }

  /** The web chat's transcripts on the same database (their tables come with migrate()). */
  transcripts(): TranscriptStore {
    this.#transcripts ??= new StepsTranscriptStore(new SqliteSteps(this.#db, 'transcript store'));
    return this.#transcripts;
  }

  /** Slack installations on the same database (their table comes with migrate()). */
  installations(): InstallationRows {
    this.#installations ??= new StepsInstallationRows(new SqliteSteps(this.#db, 'installation store'));
    return this.#installations;
  }

  /** How surfaces reach their conversations again, on the same database (their table comes with migrate()). */
  addresses(): ChatAddressRows {
    this.#addresses ??= new StepsChatAddressRows(new SqliteSteps(this.#db, 'chat addresses'));
    return this.#addresses;
  }

  /** People's sign-in links on the same database (their table comes with migrate()). */
  identityLinks(): IdentityLinkStore {
    this.#links ??= new StepsIdentityLinks(new SqliteSteps(this.#db, 'identity links'));
    return this.#links;
  }

  /** Feedback on answers on the same database (its table comes with migrate()). */
  feedback(): FeedbackRows {
    this.#feedback ??= new StepsFeedbackRows(this.#feedbackSteps);
    return this.#feedback;
  }

  /**
   * Retention and erasure on the same database. Its size is the database file's pages (free
   * pages included: SQLite reuses them before it grows the file; VACUUM gives them back).
   */
  retention(): RetentionStore {
    this.#retention ??= new StepsRetentionStore(new SqliteSteps(this.#db, 'retention'), async () => {
      const pages = this.#db.prepare('PRAGMA page_count').get() as { page_count: number };
      const size = this.#db.prepare('PRAGMA page_size').get() as { page_size: number };
      return Number(pages.page_count) * Number(size.page_size);
    });
    return this.#retention;
  }

  async close(): Promise<void> {
    // Writes already asked for are applied and made durable, not dropped.
    if (this.#db.isOpen) await this.#writes.drain();
    this.#statements.clear();
    if (this.#db.isOpen) this.#db.close();
  }

  async openSession(init: NewSession): Promise<SessionRecord> {
    // A thread's later messages find their session: read, without waiting for a group commit
    // (the insert below would change nothing).
    const id = sessionIdOf(init.key);
    const existing = this.#guard('openSession', () =>
      this.#get('SELECT * FROM sessions WHERE id = :id', { id }),
    );
    if (existing !== undefined) return sessionFromRow(existing, parseJsonText);
    return this.#writes.write('openSession', () => this.#openNow(init).session);
  }

  /**
   * Inserts the session unless its key is there, else reads it: inside a group write.
   * `turnSeq`: the counter a new session starts at (1 when its first turn is added in the same
   * write, which then need not move it).
   */
  #openNow(init: NewSession, turnSeq = 0): { session: SessionRecord; opened: boolean } {
    const id = sessionIdOf(init.key);
    // The key is unique, so a second open of the same thread changes nothing (binding kept).
    const inserted = this.#run(
      `INSERT INTO sessions (id, surface, workspace_id, channel_id, thread_id, binding, version,
                             turn_seq, created_at, updated_at)
       VALUES (:id, :surface, :workspace_id, :channel_id, :thread_id, :binding, 1, :turn_seq, :now, :now)
       ON CONFLICT DO NOTHING`,
      {
        turn_seq: turnSeq,
        id,
        surface: init.key.surface,
        workspace_id: init.key.workspaceId,
        channel_id: init.key.channelId,
        thread_id: init.key.threadId,
        binding: init.binding,
        now: init.now,
      },
    );
    // Inserted: the row is what was just written, so it is not read back.
    if (Number(inserted.changes) === 1) return { session: newSessionRecord(id, init), opened: true };
    const row = this.#get('SELECT * FROM sessions WHERE id = :id', { id });
    if (row === undefined) throw new StoreError(`session ${id} vanished right after it was opened`);
    return { session: sessionFromRow(row, parseJsonText), opened: false };
  }

  async getSession(id: string): Promise<SessionRecord | undefined> {
    return this.#guard('getSession', () => {
      const row = this.#get('SELECT * FROM sessions WHERE id = :id', { id });
      return row === undefined ? undefined : sessionFromRow(row, parseJsonText);
    });
  }

  async addTurn(
    turn: NewTurn,
    options: AddTurnOptions = {},
  ): Promise<{ turn: TurnRecord; created: boolean }> {
    // The same steps as the PostgreSQL store (there the order matters for concurrency; here
    // the write lock of BEGIN IMMEDIATE already serialises every add).
    return this.#writes.write('addTurn', () => this.#addNow(turn, options));
  }

  async openSessionAndAddTurn(
    init: NewSession,
    build: (session: SessionRecord, opened: boolean) => NewTurn,
    options: AddTurnOptions = {},
  ): Promise<{ session: SessionRecord; turn: TurnRecord; created: boolean }> {
    // One savepoint of one group write: a failure of the add leaves no session behind either.
    return this.#writes.write('openSessionAndAddTurn', () => {
      // A session this write inserts has no turn yet, and its counter already counts the one
      // added next (as the PostgreSQL store's opening statement does): a statement fewer for
      // every new thread. Should that turn not be added, the counter is put back.
      const { session, opened } = this.#openNow(init, 1);
      return { session, ...this.#addNow(build(session, opened), options, opened ? 0 : undefined, opened) };
    });
  }

  /**
   * addTurn's steps, inside a group write; `lastSeq`: the session's counter, when known;
   * `counted`: the counter already counts this turn (a session just opened with it).
   */
  #addNow(
    turn: NewTurn,
    options: AddTurnOptions,
    lastSeq?: number,
    counted = false,
  ): { turn: TurnRecord; created: boolean } {
    if (options.inboundEvent !== undefined) this.#claim(options.inboundEvent, turn.now);
    let last = lastSeq;
    if (last === undefined) {
      const counter = this.#get('SELECT turn_seq FROM sessions WHERE id = :id', { id: turn.sessionId });
      if (counter === undefined) throw new StoreError(`session ${turn.sessionId} does not exist`);
      last = Number(counter.turn_seq);
    }
    const seq = last + 1;
    const inserted = this.#run(
      `INSERT INTO turns (id, session_id, seq, kind, chat_message_id, text, metadata, task_id, state,
                            outcome, attempts, first_sent_at, busy_notice_at, answer_ref,
                            created_at, updated_at, trace_context, label)
         VALUES (:id, :session_id, :seq, :kind, :chat_message_id, :text, :metadata, :task_id, :state,
                 :outcome, :attempts, :first_sent_at, :busy_notice_at, :answer_ref, :now, :now,
                 :trace_context, :label)
         ON CONFLICT DO NOTHING`,
      {
        ...turnParams(turn),
        session_id: turn.sessionId,
        chat_message_id: turn.chatMessageId,
        seq,
        now: turn.now,
        // Written once, here: a commit never changes a turn's trace context or label.
        trace_context: toJson(turn.traceContext),
        label: turn.label,
      },
    );
    if (Number(inserted.changes) === 1) {
      // Moved only when a turn was added, so a repeat does not use up a number.
      if (!counted)
        this.#run('UPDATE sessions SET turn_seq = :seq WHERE id = :id', { seq, id: turn.sessionId });
      // The note's presses are told in this very turn: one write, so never told twice.
      if (options.feedbackTold !== undefined && options.feedbackTold.length > 0)
        this.#feedbackSteps.inside(markTold(turn.sessionId, options.feedbackTold, turn.id));
      // The row is what was just written: it is not read back.
      return { turn: newTurnRecord(turn, seq), created: true };
    }
    if (counted)
      this.#run('UPDATE sessions SET turn_seq = :last WHERE id = :id', { last, id: turn.sessionId });
    const existing = this.#get(
      `SELECT * FROM turns
         WHERE id = :id OR (session_id = :session_id AND chat_message_id = :chat_message_id)
         ORDER BY id = :id DESC LIMIT 1`,
      { id: turn.id, session_id: turn.sessionId, chat_message_id: turn.chatMessageId },
    );
    if (existing === undefined) throw new StoreError(`turn ${turn.id} was neither inserted nor found`);
    return { turn: turnFromRow(existing, parseJsonText), created: false };
  }

  async getTurn(id: string): Promise<TurnRecord | undefined> {
    return this.#guard('getTurn', () => {
      const row = this.#get('SELECT * FROM turns WHERE id = :id', { id });
      return row === undefined ? undefined : turnFromRow(row, parseJsonText);
    });
  }

  async setAnswerRef(turnId: string, ref: string, now: number): Promise<void> {
    return this.#writes.write('setAnswerRef', () => {
      this.#run('UPDATE turns SET answer_ref = :ref, updated_at = :now WHERE id = :id', {
        id: turnId,
        ref,
        now,
      });
    });
  }

  async openTurns(sessionId: string): Promise<TurnRecord[]> {
    return this.#guard('openTurns', () =>
      this.#all(`SELECT * FROM turns WHERE session_id = :session_id AND state <> 'settled' ORDER BY seq`, {
        session_id: sessionId,
      }).map((row) => turnFromRow(row, parseJsonText)),
    );
  }

  async commit(commit: Commit): Promise<SessionRecord | undefined> {
    return this.#writes.write('commit', () => {
      if (commit.fence !== undefined) this.#checkFence(commit, commit.fence.owner);
      let written: SessionRecord | undefined;
      if (commit.session !== undefined) {
        const session = commit.session;
        const params = {
          id: session.id,
          version: session.version,
          binding: session.binding,
          context_id: session.contextId,
          task: toJson(session.task),
          question: toJson(session.question),
          last_question_key: session.lastQuestionKey,
          now: commit.now,
        };
        // The binding changes only when a thread is handed over: every other write leaves the
        // column, and its index entry, as they are. A write that matches no row either way has
        // a stale version (or binding) and is refused as before.
        let result = this.#run(
          `UPDATE sessions
             SET context_id = :context_id, task = :task, question = :question,
                 last_question_key = :last_question_key, version = version + 1, updated_at = :now
             WHERE id = :id AND version = :version AND binding = :binding`,
          params,
        );
        if (Number(result.changes) === 0) {
          result = this.#run(
            `UPDATE sessions
               SET binding = :binding, context_id = :context_id, task = :task, question = :question,
                   last_question_key = :last_question_key, version = version + 1, updated_at = :now
               WHERE id = :id AND version = :version`,
            params,
          );
        }
        if (Number(result.changes) === 0) throw new StaleWriteError(session.id);
        // Written from this record, whose other columns (key, creation) never change: it is
        // what a read would return, without reading and parsing the row back.
        written = writtenSessionRecord(session, commit.now);
      }
      for (const turn of commit.turns ?? []) {
        const result = this.#run(
          `UPDATE turns
             SET kind = :kind, text = :text, metadata = :metadata, task_id = :task_id, state = :state,
                 outcome = :outcome, attempts = :attempts, first_sent_at = :first_sent_at,
                 busy_notice_at = :busy_notice_at, answer_ref = COALESCE(:answer_ref, answer_ref), updated_at = :now
             WHERE id = :id AND session_id = :session_id`,
          { ...turnParams(turn), session_id: turn.sessionId, now: commit.now },
        );
        if (Number(result.changes) !== 1) {
          throw new StoreError(`turn ${turn.id} of session ${turn.sessionId} does not exist`);
        }
      }
      return written;
    });
  }

  async sessionsWithWork(drivableBy?: LeaseHolder): Promise<string[]> {
    return (await this.#work('sessionsWithWork', drivableBy)).map((w) => w.id);
  }

  async workToScan(drivableBy?: LeaseHolder): Promise<WorkMark[]> {
    return this.#work('workToScan', drivableBy);
  }

  /** Sessions with work (each side of the union walks its partial index), with their marks. */
  #work(operation: string, drivableBy: LeaseHolder | undefined): WorkMark[] {
    const withWork = `SELECT id FROM sessions WHERE task IS NOT NULL OR question IS NOT NULL
         UNION
         SELECT session_id FROM turns WHERE state <> 'settled'`;
    const drivable =
      drivableBy === undefined
        ? ''
        : `AND NOT EXISTS (SELECT 1 FROM leases
                           WHERE session_id = s.id AND owner <> :owner AND expires_at > :now)`;
    return this.#guard(operation, () =>
      this.#all(
        `SELECT s.id, s.version, s.turn_seq FROM sessions s WHERE s.id IN (${withWork}) ${drivable}`,
        drivableBy === undefined ? {} : { owner: drivableBy.owner, now: drivableBy.now },
      )
        .map((row) => ({ id: String(row.id), mark: `${String(row.version)}.${String(row.turn_seq)}` }))
        .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)),
    );
  }

  async claimInboundEvent(eventKey: string, now: number): Promise<boolean> {
    return this.#writes.write('claimInboundEvent', () => this.#claim(eventKey, now));
  }

  #claim(eventKey: string, now: number): boolean {
    const cutoff = now - INBOUND_EVENT_TTL_MS;
    // A key older than the TTL counts as new even before the pruning below has removed it,
    // so what a claim answers does not depend on when pruning last ran.
    const claimed = this.#get(
      `INSERT INTO inbound_events (event_key, created_at) VALUES (:event_key, :now)
       ON CONFLICT (event_key) DO UPDATE SET created_at = excluded.created_at
       WHERE inbound_events.created_at < :cutoff
       RETURNING event_key`,
      { event_key: eventKey, now, cutoff },
    );
    if (this.#claims++ % INBOUND_EVENT_PRUNE_EVERY === 0) {
      this.#run('DELETE FROM inbound_events WHERE created_at < :cutoff', { cutoff });
    }
    return claimed !== undefined;
  }

  async acquireLease(sessionId: string, owner: string, now: number, ttlMs: number): Promise<LeaseTake> {
    return this.#writes.write('acquireLease', () => {
      // The row is inserted with one take; every take after it (the row is kept on release)
      // counts one more, so one take means this statement inserted it.
      const row = this.#get(
        `INSERT INTO leases (session_id, owner, expires_at, takes) VALUES (:session_id, :owner, :expires_at, 1)
         ON CONFLICT (session_id) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at,
           takes = leases.takes + 1
         WHERE leases.expires_at <= :now OR leases.owner = excluded.owner
         RETURNING takes`,
        { session_id: sessionId, owner, now, expires_at: now + ttlMs },
      );
      if (row === undefined) return false;
      return Number(row.takes) === 1 ? 'first' : 'taken';
    });
  }

  async renewLeases(owner: string, now: number, ttlMs: number): Promise<string[]> {
    return this.#writes.write('renewLeases', () =>
      // An expired lease is not renewed: it is no longer held, whether or not someone took it.
      this.#all(
        `UPDATE leases SET expires_at = :expires_at WHERE owner = :owner AND expires_at > :now
         RETURNING session_id`,
        { owner, now, expires_at: now + ttlMs },
      )
        .map((row) => String(row.session_id))
        .sort(),
    );
  }

  async releaseLease(sessionId: string, owner: string, seenSeq: number): Promise<boolean> {
    return this.#writes.write('releaseLease', () => {
      // Expired, not deleted: the row says the session was driven before (LeaseTake).
      this.#run('UPDATE leases SET expires_at = 0 WHERE session_id = :session_id AND owner = :owner', {
        session_id: sessionId,
        owner,
      });
      return (
        this.#get(
          `SELECT 1 AS waiting FROM turns
           WHERE session_id = :session_id AND seq > :seen AND state <> 'settled' AND kind <> 'context' LIMIT 1`,
          { session_id: sessionId, seen: seenSeq },
        ) !== undefined
      );
    });
  }

  async revokeLease(sessionId: string): Promise<void> {
    await this.#writes.write('revokeLease', () => {
      this.#run('UPDATE leases SET expires_at = 0 WHERE session_id = :session_id', { session_id: sessionId });
    });
  }

  /** Throws LeaseLostError unless `owner` holds a live lease on every session the commit writes. */
  #checkFence(commit: Commit, owner: string): void {
    for (const sessionId of sessionsOf(commit)) {
      const lease = this.#get('SELECT owner, expires_at FROM leases WHERE session_id = :session_id', {
        session_id: sessionId,
      });
      if (lease === undefined || lease.owner !== owner || Number(lease.expires_at) <= commit.now) {
        throw new LeaseLostError(sessionId, owner);
      }
    }
  }

  #get(sql: string, params: Params): Row | undefined {
    return this.#statements.get(sql).get(params);
  }

  #all(sql: string, params: Params): Row[] {
    return this.#statements.get(sql).all(params);
  }

  #run(sql: string, params: Params): { changes: number | bigint } {
    return this.#statements.get(sql).run(params);
  }

  #guard<T>(operation: string, body: () => T): T {
    try {
      return body();
    } catch (cause) {
      throw storeFailure(`sqlite store: ${operation}`, cause);
    }
  }
}

/** The id and the columns a commit may change (session, chat message, seq, createdAt are fixed). */
function turnParams(turn: NewTurn | TurnRecord): Params {
  return {
    id: turn.id,
    kind: turn.kind,
    text: textColumn(turn),
    metadata: toJson(turn.metadata),
    task_id: turn.taskId,
    state: turn.state,
    outcome: turn.outcome,
    attempts: turn.attempts,
    first_sent_at: turn.firstSentAt,
    busy_notice_at: turn.busyNoticeAt,
    answer_ref: turn.answerRef,
  };
}
