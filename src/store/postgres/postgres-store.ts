import { createHash } from 'node:crypto';
import pg from 'pg';
import { InvalidConfigError, LeaseLostError, StaleWriteError, StoreError } from '../../core/errors.js';
import {
  type AddTurnOptions,
  type Commit,
  type LeaseHolder,
  type NewSession,
  type NewTurn,
  type SessionRecord,
  type SessionStore,
  sessionIdOf,
  type TurnRecord,
} from '../../core/store.js';
import type { TranscriptStore } from '../../core/transcript-store.js';
import type { TriggerStore } from '../../core/trigger-store.js';
import type { FeedbackRows } from '../feedback-rows.js';
import type { InstallationRows } from '../installation-rows.js';
import { INBOUND_EVENT_PRUNE_EVERY, INBOUND_EVENT_TTL_MS, migrations } from '../migrations.js';
import {
  parsedJson,
  type Row,
  sessionFromRow,
  sessionsOf,
  storeFailure,
  textColumn,
  toJson,
  turnFromRow,
} from '../rows.js';
import { StepsTranscriptStore } from '../transcript-queries.js';
import { Batcher } from './batches.js';
import { PostgresFeedbackRows } from './postgres-feedback-rows.js';
import { PostgresInstallationRows } from './postgres-installation-rows.js';
import { PostgresSteps, PostgresTriggerStore } from './postgres-trigger-store.js';
import { type PostgresSql, postgresSql, SCHEMA_NAME } from './sql.js';

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

type Queryable = Pick<pg.PoolClient, 'query'>;

/** The most calls one batched statement carries (batches.ts). */
const BATCH_MAX = 500;

interface LeaseAsk {
  sessionId: string;
  owner: string;
  now: number;
  ttlMs: number;
}

/** A statement prepared once per connection, under a name derived from its text. */
type Prepared = { readonly name: string; readonly text: string };
type PreparedSql = { readonly [K in keyof PostgresSql]: Prepared };

/**
 * Named statements: PostgreSQL parses and plans each once per connection, not at every call.
 * The name is a hash of the text (which holds the schema), so two stores sharing a pool on
 * different schemas never reuse one name for two statements.
 */
function prepared(sql: PostgresSql): PreparedSql {
  const entries = Object.entries(sql).map(([key, text]) => [
    key,
    { name: `ak_${createHash('sha256').update(text).digest('hex').slice(0, 24)}`, text },
  ]);
  return Object.fromEntries(entries) as PreparedSql;
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
  #triggers: PostgresTriggerStore | undefined;
  #installations: PostgresInstallationRows | undefined;
  #feedback: PostgresFeedbackRows | undefined;
  readonly #sessionReads: Batcher<string, Row | undefined>;
  readonly #turnReads: Batcher<string, Row | undefined>;
  readonly #openTurnReads: Batcher<string, Row[]>;
  readonly #answerRefs: Batcher<{ turnId: string; ref: string; now: number }, undefined>;
  /** One batcher per TTL: a batch of lease takes shares one (the engine uses one). */
  readonly #leaseTakes = new Map<number, Batcher<LeaseAsk, boolean>>();
  readonly #leaseReleases: Batcher<{ sessionId: string; owner: string }, undefined>;
  readonly #sessionOpens: Batcher<NewSession, Row | undefined>;
  readonly #turnAdds: Batcher<{ turn: NewTurn; event: string | null }, Row>;
  readonly #commits: Batcher<Commit, Row>;

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
    // A statement the server refused wrote nothing: its calls are run again one by one.
    const retryAlone = (error: unknown) => error instanceof pg.DatabaseError;
    this.#sessionOpens = new Batcher((opens) => this.#openSessions(opens), {
      max: BATCH_MAX,
      keysOf: (open) => [sessionIdOf(open.key)],
      retryAlone,
    });
    this.#turnAdds = new Batcher((adds) => this.#addTurns(adds), {
      max: BATCH_MAX,
      keysOf: (add) => [add.turn.sessionId],
      retryAlone,
    });
    this.#commits = new Batcher((commits) => this.#writeCommits(commits), {
      max: BATCH_MAX,
      keysOf: (commit) => sessionsOf(commit),
      retryAlone,
    });
    const byId = (statement: Prepared, column: string) => async (ids: string[]) => {
      const result = await this.#query(this.#pool, statement, [ids]);
      const rows = new Map<string, Row>();
      for (const row of result.rows) rows.set(String(row[column]), row);
      return ids.map((id) => rows.get(id));
    };
    this.#sessionReads = new Batcher(byId(this.#sql.selectSessions, 'id'), {
      max: BATCH_MAX,
      keysOf: (id) => [id],
      shared: true,
    });
    this.#turnReads = new Batcher(byId(this.#sql.selectTurns, 'id'), {
      max: BATCH_MAX,
      keysOf: (id) => [id],
      shared: true,
    });
    this.#openTurnReads = new Batcher(
      async (ids: string[]) => {
        const result = await this.#query(this.#pool, this.#sql.selectOpenTurnsOf, [ids]);
        const bySession = new Map<string, Row[]>(ids.map((id) => [id, []]));
        for (const row of result.rows) bySession.get(String(row.session_id))?.push(row);
        return ids.map((id) => bySession.get(id) ?? []);
      },
      { max: BATCH_MAX, keysOf: (id) => [id], shared: true },
    );
    this.#answerRefs = new Batcher(
      async (refs) => {
        await this.#query(this.#pool, this.#sql.updateAnswerRefs, [
          refs.map((r) => r.turnId),
          refs.map((r) => r.ref),
          refs.map((r) => r.now),
        ]);
        return refs.map(() => undefined);
      },
      { max: BATCH_MAX, keysOf: (r) => [r.turnId] },
    );
    this.#leaseReleases = new Batcher(
      async (releases) => {
        await this.#query(this.#pool, this.#sql.releaseLeases, [
          releases.map((r) => r.sessionId),
          releases.map((r) => r.owner),
        ]);
        return releases.map(() => undefined);
      },
      { max: BATCH_MAX, keysOf: (r) => [r.sessionId] },
    );
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
    this.#triggers ??= new PostgresTriggerStore(this.#pool, this.#schema);
    return this.#triggers;
  }
  /** Slack installations in the same schema (their table comes with migrate()). */
  installations(): InstallationRows {
    this.#installations ??= new PostgresInstallationRows(this.#pool, this.#schema);
    return this.#installations;
  }

  /** Feedback on answers in the same schema (its table comes with migrate()). */
  feedback(): FeedbackRows {
    this.#feedback ??= new PostgresFeedbackRows(this.#pool, this.#schema);
    return this.#feedback;
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

  async openSession(init: NewSession): Promise<SessionRecord> {
    return this.#guard('openSession', async () => {
      const id = sessionIdOf(init.key);
      const row =
        (await this.#sessionOpens.submit(init)) ??
        // Inserted by someone else while the statement ran: read with a snapshot that has it.
        (await this.#one(this.#pool, this.#sql.selectSession, [id]));
      if (row === undefined) throw new StoreError(`session ${id} vanished right after it was opened`);
      return sessionFromRow(row, parsedJson);
    });
  }

  async #openSessions(opens: NewSession[]): Promise<Array<Row | undefined>> {
    const ids = opens.map((open) => sessionIdOf(open.key));
    const result = await this.#query(this.#pool, this.#sql.openSessions, [
      ids,
      opens.map((o) => o.key.surface),
      opens.map((o) => o.key.workspaceId),
      opens.map((o) => o.key.channelId),
      opens.map((o) => o.key.threadId),
      opens.map((o) => o.binding),
      opens.map((o) => o.now),
    ]);
    const rows = new Map(result.rows.map((row) => [String(row.id), row]));
    return ids.map((id) => rows.get(id));
  }

  async getSession(id: string): Promise<SessionRecord | undefined> {
    return this.#guard('getSession', async () => {
      const row = await this.#sessionReads.submit(id);
      return row === undefined ? undefined : sessionFromRow(row, parsedJson);
    });
  }

  async addTurn(
    turn: NewTurn,
    options: AddTurnOptions = {},
  ): Promise<{ turn: TurnRecord; created: boolean }> {
    return this.#guard('addTurn', async () => {
      const event = options.inboundEvent ?? null;
      const row = await this.#turnAdds.submit({ turn, event });
      if (row.session_found !== true) throw new StoreError(`session ${turn.sessionId} does not exist`);
      if (event !== null) await this.#pruneEventsNow(this.#pool, turn.now);
      if (row.id !== null && row.id !== undefined)
        return { turn: turnFromRow(row, parsedJson), created: true };
      // A conflict: the row it hit is committed by now (DO NOTHING waits), and this statement's
      // new snapshot sees it.
      const existing = await this.#one(this.#pool, this.#sql.selectDuplicateTurn, [
        turn.id,
        turn.sessionId,
        turn.chatMessageId,
      ]);
      if (existing === undefined) throw new StoreError(`turn ${turn.id} was neither inserted nor found`);
      return { turn: turnFromRow(existing, parsedJson), created: false };
    });
  }

  async #addTurns(adds: Array<{ turn: NewTurn; event: string | null }>): Promise<Row[]> {
    const turns = adds.map((a) => a.turn);
    const result = await this.#query(this.#pool, this.#sql.addTurns, [
      turns.map((t) => t.id),
      turns.map((t) => t.sessionId),
      turns.map((t) => t.kind),
      turns.map((t) => t.chatMessageId),
      turns.map((t) => textColumn(t)),
      turns.map((t) => toJson(t.metadata)),
      turns.map((t) => t.taskId),
      turns.map((t) => t.state),
      turns.map((t) => t.outcome),
      turns.map((t) => t.attempts),
      turns.map((t) => t.firstSentAt),
      turns.map((t) => t.busyNoticeAt),
      turns.map((t) => t.answerRef),
      turns.map((t) => toJson(t.traceContext)),
      turns.map((t) => t.now),
      turns.map((t) => t.label),
      adds.map((a) => a.event),
      INBOUND_EVENT_TTL_MS,
    ]);
    const rows = new Map(result.rows.map((row) => [String(row.asked), row]));
    return turns.map((t) => {
      const row = rows.get(t.id);
      if (row === undefined) throw new StoreError(`turn ${t.id}: no answer from the batch`);
      return row;
    });
  }

  async getTurn(id: string): Promise<TurnRecord | undefined> {
    return this.#guard('getTurn', async () => {
      const row = await this.#turnReads.submit(id);
      return row === undefined ? undefined : turnFromRow(row, parsedJson);
    });
  }

  async setAnswerRef(turnId: string, ref: string, now: number): Promise<void> {
    return this.#guard('setAnswerRef', () => this.#answerRefs.submit({ turnId, ref, now }));
  }

  async openTurns(sessionId: string): Promise<TurnRecord[]> {
    return this.#guard('openTurns', async () => {
      const rows = await this.#openTurnReads.submit(sessionId);
      return rows.map((row) => turnFromRow(row, parsedJson));
    });
  }

  async commit(commit: Commit): Promise<SessionRecord | undefined> {
    return this.#guard('commit', async () => {
      const row = await this.#commits.submit(commit);
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
      return sessionFromRow(row, parsedJson);
    });
  }

  async #writeCommits(commits: Commit[]): Promise<Row[]> {
    const fenced: Array<[number, string]> = [];
    const turns: Array<[number, TurnRecord]> = [];
    commits.forEach((commit, ord) => {
      if (commit.fence !== undefined) for (const id of sessionsOf(commit)) fenced.push([ord, id]);
      // One write per turn: a turn listed twice is written as its last entry says.
      const once = new Map((commit.turns ?? []).map((turn) => [turn.id, turn]));
      for (const turn of once.values()) turns.push([ord, turn]);
    });
    const session = (c: Commit) => c.session;
    const result = await this.#query(this.#pool, this.#sql.commits, [
      commits.map((_, ord) => ord),
      commits.map((c) => session(c)?.id ?? null),
      commits.map((c) => session(c)?.version ?? null),
      commits.map((c) => session(c)?.binding ?? null),
      commits.map((c) => session(c)?.contextId ?? null),
      commits.map((c) => toJson(session(c)?.task)),
      commits.map((c) => toJson(session(c)?.question)),
      commits.map((c) => session(c)?.lastQuestionKey ?? null),
      commits.map((c) => c.now),
      commits.map((c) => c.fence?.owner ?? null),
      commits.map((c) => this.#time(c.now)),
      fenced.map(([ord]) => ord),
      fenced.map(([, id]) => id),
      turns.map(([ord]) => ord),
      turns.map(([, t]) => t.id),
      turns.map(([, t]) => t.sessionId),
      turns.map(([, t]) => t.kind),
      turns.map(([, t]) => textColumn(t)),
      turns.map(([, t]) => toJson(t.metadata)),
      turns.map(([, t]) => t.taskId),
      turns.map(([, t]) => t.state),
      turns.map(([, t]) => t.outcome),
      turns.map(([, t]) => t.attempts),
      turns.map(([, t]) => t.firstSentAt),
      turns.map(([, t]) => t.busyNoticeAt),
      turns.map(([, t]) => t.answerRef),
    ]);
    const rows = new Map(result.rows.map((row) => [Number(row.asked), row]));
    return commits.map((_, ord) => {
      const row = rows.get(ord);
      if (row === undefined) throw new StoreError(`commit ${ord}: no answer from the batch`);
      return row;
    });
  }

  async sessionsWithWork(drivableBy?: LeaseHolder): Promise<string[]> {
    return this.#guard('sessionsWithWork', async () => {
      const result =
        drivableBy === undefined
          ? await this.#query(this.#pool, this.#sql.sessionsWithWork, [])
          : await this.#query(this.#pool, this.#sql.sessionsWithWorkFor, [
              drivableBy.owner,
              this.#time(drivableBy.now),
            ]);
      return result.rows.map((row) => String(row.id)).sort();
    });
  }

  async claimInboundEvent(eventKey: string, now: number): Promise<boolean> {
    return this.#guard('claimInboundEvent', async () => {
      const claimed = await this.#query(this.#pool, this.#sql.claimEvent, [
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
    await this.#query(db, this.#sql.pruneEvents, [now - INBOUND_EVENT_TTL_MS]);
  }

  async acquireLease(sessionId: string, owner: string, now: number, ttlMs: number): Promise<boolean> {
    return this.#guard('acquireLease', () => this.#leaseTake(ttlMs).submit({ sessionId, owner, now, ttlMs }));
  }

  #leaseTake(ttlMs: number): Batcher<LeaseAsk, boolean> {
    let batcher = this.#leaseTakes.get(ttlMs);
    if (batcher === undefined) {
      batcher = new Batcher(
        async (asks) => {
          const result = await this.#query(this.#pool, this.#sql.acquireLeases, [
            asks.map((a) => a.sessionId),
            asks.map((a) => a.owner),
            asks.map((a) => this.#time(a.now)),
            ttlMs,
          ]);
          const taken = new Set(result.rows.map((row) => String(row.session_id)));
          return asks.map((a) => taken.has(a.sessionId));
        },
        // One row per session in a statement: an upsert cannot touch a row twice.
        { max: BATCH_MAX, keysOf: (a) => [a.sessionId] },
      );
      this.#leaseTakes.set(ttlMs, batcher);
    }
    return batcher;
  }

  async renewLeases(owner: string, now: number, ttlMs: number): Promise<string[]> {
    return this.#guard('renewLeases', async () => {
      // An expired lease is not renewed: it is no longer held, whether or not someone took it.
      const result = await this.#query(this.#pool, this.#sql.renewLeases, [owner, this.#time(now), ttlMs]);
      return result.rows.map((row) => String(row.session_id)).sort();
    });
  }

  async releaseLease(sessionId: string, owner: string): Promise<void> {
    await this.#guard('releaseLease', () => this.#leaseReleases.submit({ sessionId, owner }));
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

  async #one(db: Queryable, statement: Prepared, values: unknown[]): Promise<Row | undefined> {
    const result = await this.#query(db, statement, values);
    return result.rows[0];
  }

  #query(db: Queryable, statement: Prepared, values: unknown[]): Promise<pg.QueryResult<Row>> {
    return db.query<Row>({ name: statement.name, text: statement.text, values });
  }

  async #guard<T>(operation: string, body: () => Promise<T>): Promise<T> {
    try {
      return await body();
    } catch (cause) {
      throw storeFailure(`postgres store: ${operation}`, cause);
    }
  }
}
