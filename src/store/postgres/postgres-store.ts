import pg from 'pg';
import type { ChatAddressRows } from '../../core/chat-address-store.js';
import { InvalidConfigError, LeaseLostError, StaleWriteError, StoreError } from '../../core/errors.js';
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
import { StepsFeedbackRows } from '../feedback-rows.js';
import { StepsIdentityLinks } from '../identity-link-rows.js';
import { StepsInstallationRows } from '../installation-rows.js';
import { INBOUND_EVENT_PRUNE_EVERY, INBOUND_EVENT_TTL_MS, migrations } from '../migrations.js';
import { StepsRetentionStore } from '../retention-queries.js';
import { parsedJson, type Row, sessionFromRow, storeFailure, turnFromRow } from '../rows.js';
import { StepsTranscriptStore } from '../transcript-queries.js';
import { StepsTriggerStore } from '../trigger-store.js';
import { writtenSessionRecord } from '../written-records.js';
import { BatchedStatements } from './batched.js';
import { type PreparedSql, prepared, type Queryable, runPrepared } from './prepared.js';
import { postgresSql, SCHEMA_NAME } from './sql.js';
import { PostgresSteps } from './steps-runner.js';
import { TurnWrites } from './turn-writes.js';

export interface PostgresStoreOptions {
  /** Where to connect; the store then owns its pool and ends it on close(). */
  connectionString?: string;
  /** A pool the caller owns (and ends): close() leaves it open. */
  pool?: pg.Pool;
  /** The schema holding the tables, created by migrate() if missing. Default 'public'. */
  schema?: string;
  /**
   * Whose clock lease times are read from. 'database' (the default, and the only mode for
   * several replicas): PostgreSQL's, which every replica shares, so clock skew between replicas
   * cannot let one take another's live lease. 'caller': the `now` the engine passes, which lets
   * the shared store suite drive time by hand.
   */
  leaseClock?: 'database' | 'caller';
  /**
   * Bounds of the pool this store makes (not of a pool it is given): a query with no answer for
   * `queryMs` fails (a partition must not hang a write, or a lease renewal, for ever), a
   * connection not made in `connectMs` fails. Defaults 30 s and 10 s.
   */
  timeouts?: { queryMs?: number; connectMs?: number };
}

/**
 * The session store on PostgreSQL, for several replicas sharing one database: each session is
 * driven by one replica at a time through a lease row, and writes that must not outlive the
 * lease are fenced on it (Commit.fence). Transactions run at READ COMMITTED; the rows that need
 * ordering are locked explicitly instead (the session row to number turns, the lease rows of a
 * fenced commit), which is cheaper than SERIALIZABLE and needs no retry loop.
 */
export class PostgresStore implements SessionStore {
  readonly sharedByReplicas = true;
  readonly #pool: pg.Pool;
  readonly #ownsPool: boolean;
  readonly #schema: string;
  readonly #sql: PreparedSql;
  readonly #callerClock: boolean;
  #claims = 0;
  #closed = false;
  #transcripts: TranscriptStore | undefined;
  #retention: RetentionStore | undefined;
  #triggers: TriggerStore | undefined;
  #installations: InstallationRows | undefined;
  #feedback: FeedbackRows | undefined;
  #links: IdentityLinkStore | undefined;
  #addresses: ChatAddressRows | undefined;
  readonly #batched: BatchedStatements;
  readonly #turns: TurnWrites;

  constructor(options: PostgresStoreOptions) {
    const schema = options.schema ?? 'public';
    if (!SCHEMA_NAME.test(schema)) {
      throw new InvalidConfigError(
        `PostgreSQL schema name must match ${SCHEMA_NAME}: ${JSON.stringify(schema)}`,
      );
    }
    if ((options.pool === undefined) === (options.connectionString === undefined)) {
      throw new InvalidConfigError('PostgresStore needs exactly one of connectionString and pool');
    }
    this.#schema = schema;
    this.#sql = prepared(postgresSql(schema));
    this.#callerClock = options.leaseClock === 'caller';
    this.#ownsPool = options.pool === undefined;
    this.#pool =
      options.pool ??
      new pg.Pool({
        connectionString: options.connectionString,
        query_timeout: options.timeouts?.queryMs ?? 30_000,
        connectionTimeoutMillis: options.timeouts?.connectMs ?? 10_000,
      });
    this.#batched = new BatchedStatements(this.#pool, this.#sql, (now) => this.#time(now));
    this.#turns = new TurnWrites(this.#pool, this.#sql, this.#batched, (body) => this.#transaction(body));
    // An idle connection that breaks (the server restarts) is reported here; without a listener
    // it would crash the process. The next query gets a fresh connection or a StoreError.
    if (this.#ownsPool) this.#pool.on('error', () => {});
  }

  async migrate(): Promise<void> {
    const schema = `"${this.#schema}"`;
    await this.#guard('migrate', () =>
      this.#transaction(async (client) => {
        // Replicas starting together migrate one after the other; the lock ends with the
        // transaction. Taken first, so even the schema is created only once.
        await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [
          `agentkourier:migrate:${this.#schema}`,
        ]);
        // CREATE SCHEMA needs a privilege a deployment may not grant for an existing schema.
        const found = await client.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [this.#schema]);
        if (found.rowCount === 0) await client.query(`CREATE SCHEMA ${schema}`);
        // Migrations name tables unqualified; LOCAL keeps the setting to this transaction.
        await client.query(`SET LOCAL search_path TO ${schema}`);
        await client.query(
          `CREATE TABLE IF NOT EXISTS schema_migrations (
             version integer PRIMARY KEY, name text NOT NULL, applied_at bigint NOT NULL)`,
        );
        const applied = await client.query<Row>('SELECT version FROM schema_migrations');
        const done = new Set(applied.rows.map((row) => Number(row.version)));
        for (const migration of migrations) {
          if (done.has(migration.version)) continue;
          await client.query(migration.postgres);
          await client.query(
            'INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)',
            [migration.version, migration.name, Date.now()],
          );
        }
      }),
    );
  }

  /** The trigger store on the same pool and schema (its tables come with migrate()). */
  triggers(): TriggerStore {
    this.#triggers ??= new StepsTriggerStore(new PostgresSteps(this.#pool, this.#schema, 'trigger store'));
    return this.#triggers;
  }
  /** Slack installations in the same schema (their table comes with migrate()). */
  installations(): InstallationRows {
    this.#installations ??= new StepsInstallationRows(
      new PostgresSteps(this.#pool, this.#schema, 'installation store'),
    );
    return this.#installations;
  }

  /** How surfaces reach their conversations again, on the same database (their table comes with migrate()). */
  addresses(): ChatAddressRows {
    this.#addresses ??= new StepsChatAddressRows(
      new PostgresSteps(this.#pool, this.#schema, 'chat addresses'),
    );
    return this.#addresses;
  }

  /** People's sign-in links on the same database (their table comes with migrate()). */
  identityLinks(): IdentityLinkStore {
    this.#links ??= new StepsIdentityLinks(new PostgresSteps(this.#pool, this.#schema, 'identity links'));
    return this.#links;
  }

  /** Feedback on answers in the same schema (its table comes with migrate()). */
  feedback(): FeedbackRows {
    this.#feedback ??= new StepsFeedbackRows(new PostgresSteps(this.#pool, this.#schema, 'feedback store'));
    return this.#feedback;
  }

  /** Retention and erasure in the same schema; its size is every table's, indexes and TOAST included. */
  retention(): RetentionStore {
    this.#retention ??= new StepsRetentionStore(
      new PostgresSteps(this.#pool, this.#schema, 'retention'),
      async () => {
        const { rows } = await this.#pool.query<{ bytes: string }>(
          `SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0)::text AS bytes
           FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
           WHERE n.nspname = $1 AND c.relkind = 'r'`,
          [this.#schema],
        );
        return Number(rows[0]?.bytes ?? 0);
      },
    );
    return this.#retention;
  }

  /** The web chat's transcripts on the same database (their tables come with migrate()). */
  transcripts(): TranscriptStore {
    this.#transcripts ??= new StepsTranscriptStore(
      new PostgresSteps(this.#pool, this.#schema, 'transcript store'),
    );
    return this.#transcripts;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#ownsPool) await this.#pool.end();
  }

  async probeWrite(): Promise<void> {
    // A transaction that takes a transaction id writes its commit to PostgreSQL's log: refused
    // by a server that is read-only, in recovery or out of disk.
    await this.#guard('probeWrite', () =>
      this.#transaction((client) => client.query('SELECT pg_current_xact_id()')),
    );
  }

  async openSession(init: NewSession): Promise<SessionRecord> {
    return this.#guard('openSession', async () => {
      const id = sessionIdOf(init.key);
      const row =
        (await this.#batched.openSession(init)) ??
        // Inserted by someone else while the statement ran: read with a snapshot that has it.
        (await this.#one(this.#pool, this.#sql.selectSession, [id]));
      if (row === undefined) throw new StoreError(`session ${id} vanished right after it was opened`);
      return sessionFromRow(row, parsedJson);
    });
  }

  async getSession(id: string): Promise<SessionRecord | undefined> {
    return this.#guard('getSession', async () => {
      const row = await this.#batched.session(id);
      return row === undefined ? undefined : sessionFromRow(row, parsedJson);
    });
  }

  async addTurn(
    turn: NewTurn,
    options: AddTurnOptions = {},
  ): Promise<{ turn: TurnRecord; created: boolean }> {
    return this.#guard('addTurn', async () => {
      const event = options.inboundEvent ?? null;
      const added = await this.#turns.add(turn, event);
      if (event !== null) await this.#pruneEventsNow(this.#pool, turn.now);
      return added;
    });
  }

  async openSessionAndAddTurn(
    init: NewSession,
    build: (session: SessionRecord, opened: boolean) => NewTurn,
    options: AddTurnOptions = {},
  ): Promise<{ session: SessionRecord; turn: TurnRecord; created: boolean }> {
    // See TurnWrites.openAndAdd: a batched read, then one batched statement.
    return this.#guard('openSessionAndAddTurn', async () => {
      const event = options.inboundEvent ?? null;
      const done = await this.#turns.openAndAdd(init, build, event);
      if (event !== null) await this.#pruneEventsNow(this.#pool, init.now);
      // Right after the turn's batched statement (not in it): a crash between the two can have
      // a note told twice, never lost.
      if (done.created && options.feedbackTold !== undefined && options.feedbackTold.length > 0)
        await this.feedback().markTold(done.turn.sessionId, options.feedbackTold, done.turn.id);
      return done;
    });
  }

  async getTurn(id: string): Promise<TurnRecord | undefined> {
    return this.#guard('getTurn', async () => {
      const row = await this.#batched.turn(id);
      return row === undefined ? undefined : turnFromRow(row, parsedJson);
    });
  }

  async setAnswerRef(turnId: string, ref: string, now: number): Promise<void> {
    return this.#guard('setAnswerRef', () => this.#batched.answerRef(turnId, ref, now));
  }

  async openTurns(sessionId: string): Promise<TurnRecord[]> {
    return this.#guard('openTurns', async () => {
      const rows = await this.#batched.openTurns(sessionId);
      return rows.map((row) => turnFromRow(row, parsedJson));
    });
  }

  async commit(commit: Commit): Promise<SessionRecord | undefined> {
    return this.#guard('commit', async () => {
      const row = await this.#batched.commit(commit);
      const owner = commit.fence?.owner;
      const lost = row.lost as string[] | null;
      if (owner !== undefined && lost !== null && lost.length > 0) {
        throw new LeaseLostError(String(lost[0]), owner);
      }
      const missing = row.missing as string[] | null;
      if (missing !== null && missing.length > 0) {
        const ghost = commit.turns?.find((t) => t.id === missing[0]);
        throw new StoreError(`turn ${missing[0]} of session ${ghost?.sessionId} does not exist`);
      }
      if (commit.session === undefined) return undefined;
      if (row.id === null || row.id === undefined) throw new StaleWriteError(commit.session.id);
      // Written as the commit gave it, its version bumped: the record is built, not read back.
      return writtenSessionRecord(commit.session, commit.now);
    });
  }

  async sessionsWithWork(drivableBy?: LeaseHolder): Promise<string[]> {
    return (await this.#work('sessionsWithWork', drivableBy)).map((w) => w.id);
  }

  workToScan(drivableBy?: LeaseHolder): Promise<WorkMark[]> {
    return this.#work('workToScan', drivableBy);
  }

  #work(operation: string, drivableBy: LeaseHolder | undefined): Promise<WorkMark[]> {
    return this.#guard(operation, async () => {
      const result =
        drivableBy === undefined
          ? await runPrepared(this.#pool, this.#sql.sessionsWithWork, [])
          : await runPrepared(this.#pool, this.#sql.sessionsWithWorkFor, [
              drivableBy.owner,
              this.#time(drivableBy.now),
            ]);
      return result.rows
        .map((row) => ({ id: String(row.id), mark: `${String(row.version)}.${String(row.turn_seq)}` }))
        .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    });
  }

  async claimInboundEvent(eventKey: string, now: number): Promise<boolean> {
    return this.#guard('claimInboundEvent', async () => {
      const claimed = await runPrepared(this.#pool, this.#sql.claimEvent, [
        eventKey,
        now,
        now - INBOUND_EVENT_TTL_MS,
      ]);
      await this.#pruneEventsNow(this.#pool, now);
      return claimed.rowCount === 1;
    });
  }

  /** Every INBOUND_EVENT_PRUNE_EVERY claims, forgets the keys past their TTL. */
  async #pruneEventsNow(db: Queryable, now: number): Promise<void> {
    if (this.#claims++ % INBOUND_EVENT_PRUNE_EVERY !== 0) return;
    await runPrepared(db, this.#sql.pruneEvents, [now - INBOUND_EVENT_TTL_MS]);
  }

  async acquireLease(sessionId: string, owner: string, now: number, ttlMs: number): Promise<LeaseTake> {
    return this.#guard('acquireLease', () => this.#batched.takeLease(sessionId, owner, now, ttlMs));
  }

  async renewLeases(owner: string, now: number, ttlMs: number): Promise<string[]> {
    return this.#guard('renewLeases', async () => {
      // An expired lease is not renewed: it is no longer held, whether or not someone took it.
      const result = await runPrepared(this.#pool, this.#sql.renewLeases, [owner, this.#time(now), ttlMs]);
      return result.rows.map((row) => String(row.session_id)).sort();
    });
  }

  async revokeLease(sessionId: string): Promise<void> {
    await this.#guard('revokeLease', async () => {
      await runPrepared(this.#pool, this.#sql.revokeLease, [sessionId]);
    });
  }

  async releaseLease(sessionId: string, owner: string, seenSeq: number): Promise<boolean> {
    return this.#guard('releaseLease', () => this.#batched.releaseLease(sessionId, owner, seenSeq));
  }

  /** The time a lease statement uses: the caller's in 'caller' mode, else null (the database's). */
  #time(now: number): number | null {
    return this.#callerClock ? now : null;
  }

  async #transaction<T>(body: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const client = await this.#pool.connect();
    let broken: Error | undefined;
    try {
      await client.query('BEGIN');
      const result = await body(client);
      await client.query('COMMIT');
      return result;
    } catch (error) {
      // A connection that cannot even roll back is discarded rather than returned to the pool.
      await client.query('ROLLBACK').catch((rollbackError: unknown) => {
        broken = rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError));
      });
      throw error;
    } finally {
      client.release(broken);
    }
  }

  async #one(
    db: Queryable,
    statement: PreparedSql[keyof PreparedSql],
    values: unknown[],
  ): Promise<Row | undefined> {
    const result = await runPrepared(db, statement, values);
    return result.rows[0];
  }

  async #guard<T>(operation: string, body: () => Promise<T>): Promise<T> {
    try {
      return await body();
    } catch (cause) {
      throw storeFailure(`postgres store: ${operation}`, cause);
    }
  }
}
