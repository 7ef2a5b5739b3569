import pg from 'pg';
import { StoreError } from '../../core/errors.js';
import {
  type Commit,
  type LeaseTake,
  type NewSession,
  type NewTurn,
  sessionIdOf,
  type TurnRecord,
} from '../../core/store.js';
import { INBOUND_EVENT_TTL_MS } from '../migrations.js';
import { type Row, sessionsOf, textColumn, toJson } from '../rows.js';
import { Batcher } from './batches.js';
import { type Prepared, type PreparedSql, type Queryable, runPrepared } from './prepared.js';

/**
 * A statement the server refused (a deadlock, a bad value) wrote nothing: its calls are run
 * again one by one. A lost connection or a timeout is no refusal: a write may have landed.
 */
const isRefusal = (error: unknown): boolean => error instanceof pg.DatabaseError;

/** The most calls one batched statement carries. */
const BATCH_MAX = 500;

/** A new session and its first turn, for openSessionsWithTurns (the turn is of that session). */
export interface OpenWithTurn {
  init: NewSession;
  turn: NewTurn;
  event: string | null;
}

interface LeaseAsk {
  sessionId: string;
  owner: string;
  now: number;
  ttlMs: number;
}

/**
 * The PostgreSQL store's statements, batched (batches.ts): every kind of call the engine makes
 * per turn goes to the database as one statement over arrays, for all the calls made while the
 * previous one of its kind ran. Answers are rows (or what they say); PostgresStore reads them
 * into records and errors.
 */
export class BatchedStatements {
  readonly #pool: pg.Pool;
  readonly #sql: PreparedSql;
  /** The time a lease statement uses: the caller's, or null (the database's clock). */
  readonly #time: (now: number) => number | null;
  readonly #sessionReads: Batcher<string, Row | undefined>;
  readonly #turnReads: Batcher<string, Row | undefined>;
  readonly #openTurnReads: Batcher<string, Row[]>;
  readonly #answerRefs: Batcher<{ turnId: string; ref: string; now: number }, undefined>;
  /** One batcher per TTL: a batch of lease takes shares one (the engine uses one). */
  readonly #leaseTakes = new Map<number, Batcher<LeaseAsk, LeaseTake>>();
  readonly #leaseReleases: Batcher<{ sessionId: string; owner: string; seenSeq: number }, boolean>;
  readonly #sessionOpens: Batcher<NewSession, Row | undefined>;
  readonly #turnAdds: Batcher<{ turn: NewTurn; event: string | null }, Row>;
  readonly #sessionOpensWithTurns: Batcher<OpenWithTurn, Row>;
  readonly #commits: Batcher<Commit, Row>;

  constructor(pool: pg.Pool, sql: PreparedSql, time: (now: number) => number | null) {
    this.#pool = pool;
    this.#sql = sql;
    this.#time = time;
    const retryAlone = isRefusal;
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
    this.#sessionOpensWithTurns = new Batcher((opens) => this.#openSessionsWithTurns(opens), {
      max: BATCH_MAX,
      // An inbound event is a key too: one statement's upsert cannot claim an event twice.
      keysOf: (open) =>
        open.event === null ? [open.turn.sessionId] : [open.turn.sessionId, `event:${open.event}`],
      retryAlone,
    });
    this.#commits = new Batcher((commits) => this.#writeCommits(commits), {
      max: BATCH_MAX,
      keysOf: (commit) => sessionsOf(commit),
      retryAlone,
    });
    const byId = (statement: Prepared, column: string) => async (ids: string[]) => {
      const result = await runPrepared(this.#pool, statement, [ids]);
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
        const result = await runPrepared(this.#pool, this.#sql.selectOpenTurnsOf, [ids]);
        const bySession = new Map<string, Row[]>(ids.map((id) => [id, []]));
        for (const row of result.rows) bySession.get(String(row.session_id))?.push(row);
        return ids.map((id) => bySession.get(id) ?? []);
      },
      { max: BATCH_MAX, keysOf: (id) => [id], shared: true },
    );
    this.#answerRefs = new Batcher(
      async (refs) => {
        await runPrepared(this.#pool, this.#sql.updateAnswerRefs, [
          refs.map((r) => r.turnId),
          refs.map((r) => r.ref),
          refs.map((r) => r.now),
        ]);
        return refs.map(() => undefined);
      },
      { max: BATCH_MAX, keysOf: (r) => [r.turnId], retryAlone },
    );
    this.#leaseReleases = new Batcher(
      async (releases) => {
        const ids = releases.map((r) => r.sessionId);
        await runPrepared(this.#pool, this.#sql.releaseLeases, [ids, releases.map((r) => r.owner)]);
        // A second statement, not a CTE of the first: under READ COMMITTED it reads after the
        // release committed, so a turn whose replica was refused the lease before the release
        // is seen here (in one statement, the read's snapshot could predate that turn).
        const waiting = await runPrepared(this.#pool, this.#sql.turnsWaitingAfter, [
          ids,
          releases.map((r) => r.seenSeq),
        ]);
        const at = new Set(waiting.rows.map((row) => Number(row.ord)));
        return releases.map((_, i) => at.has(i + 1));
      },
      { max: BATCH_MAX, keysOf: (r) => [r.sessionId], retryAlone },
    );
  }

  /** The session's row, inserted or found; undefined when inserted meanwhile by someone else. */
  openSession(init: NewSession): Promise<Row | undefined> {
    return this.#sessionOpens.submit(init);
  }

  /** The addTurns row of the turn (session_found, and the turn's columns when it went in). */
  addTurn(turn: NewTurn, event: string | null): Promise<Row> {
    return this.#turnAdds.submit({ turn, event });
  }

  /**
   * The openSessionsWithTurns row of a new session and its first turn: `opened` true and both
   * written, or false and nothing written (the session was there).
   */
  openSessionWithTurn(open: OpenWithTurn): Promise<Row> {
    return this.#sessionOpensWithTurns.submit(open);
  }

  /** The commits row of the commit (lost, missing, and the session's columns when written). */
  commit(commit: Commit): Promise<Row> {
    return this.#commits.submit(commit);
  }

  session(id: string): Promise<Row | undefined> {
    return this.#sessionReads.submit(id);
  }

  turn(id: string): Promise<Row | undefined> {
    return this.#turnReads.submit(id);
  }

  openTurns(sessionId: string): Promise<Row[]> {
    return this.#openTurnReads.submit(sessionId);
  }

  async answerRef(turnId: string, ref: string, now: number): Promise<void> {
    await this.#answerRefs.submit({ turnId, ref, now });
  }

  takeLease(sessionId: string, owner: string, now: number, ttlMs: number): Promise<LeaseTake> {
    return this.#leaseTake(ttlMs).submit({ sessionId, owner, now, ttlMs });
  }

  releaseLease(sessionId: string, owner: string, seenSeq: number): Promise<boolean> {
    return this.#leaseReleases.submit({ sessionId, owner, seenSeq });
  }

  /** One session opened on `db` (a client inside the caller's transaction), unbatched. */
  async openSessionOn(db: Queryable, init: NewSession): Promise<Row | undefined> {
    return (await this.#openSessions([init], db))[0];
  }

  /** One turn added on `db` (a client inside the caller's transaction), unbatched. */
  async addTurnOn(db: Queryable, turn: NewTurn, event: string | null): Promise<Row> {
    const [row] = await this.#addTurns([{ turn, event }], db);
    if (row === undefined) throw new StoreError(`turn ${turn.id}: no answer from the statement`);
    return row;
  }

  async #openSessions(opens: NewSession[], db: Queryable = this.#pool): Promise<Array<Row | undefined>> {
    const ids = opens.map((open) => sessionIdOf(open.key));
    const result = await runPrepared(db, this.#sql.openSessions, [
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

  async #addTurns(
    adds: Array<{ turn: NewTurn; event: string | null }>,
    db: Queryable = this.#pool,
  ): Promise<Row[]> {
    const turns = adds.map((a) => a.turn);
    const result = await runPrepared(db, this.#sql.addTurns, [
      turns.map((t) => t.id),
      turns.map((t) => t.sessionId),
      ...turnColumns(turns),
      adds.map((a) => a.event),
      INBOUND_EVENT_TTL_MS,
    ]);
    return answersFor(
      result.rows,
      turns.map((t) => t.id),
      'turn',
    );
  }

  async #openSessionsWithTurns(opens: OpenWithTurn[]): Promise<Row[]> {
    const turns = opens.map((o) => o.turn);
    const result = await runPrepared(this.#pool, this.#sql.openSessionsWithTurns, [
      turns.map((t) => t.sessionId),
      opens.map((o) => o.init.key.surface),
      opens.map((o) => o.init.key.workspaceId),
      opens.map((o) => o.init.key.channelId),
      opens.map((o) => o.init.key.threadId),
      opens.map((o) => o.init.binding),
      opens.map((o) => o.init.now),
      turns.map((t) => t.id),
      ...turnColumns(turns),
      opens.map((o) => o.event),
      INBOUND_EVENT_TTL_MS,
    ]);
    return answersFor(
      result.rows,
      turns.map((t) => t.sessionId),
      'session',
    );
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
    const result = await runPrepared(this.#pool, this.#sql.commits, [
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

  #leaseTake(ttlMs: number): Batcher<LeaseAsk, LeaseTake> {
    let batcher = this.#leaseTakes.get(ttlMs);
    if (batcher === undefined) {
      batcher = new Batcher(
        async (asks) => {
          const result = await runPrepared(this.#pool, this.#sql.acquireLeases, [
            asks.map((a) => a.sessionId),
            asks.map((a) => a.owner),
            asks.map((a) => this.#time(a.now)),
            ttlMs,
          ]);
          const takes = new Map(result.rows.map((row) => [String(row.session_id), Number(row.takes)]));
          return asks.map((a): LeaseTake => {
            const count = takes.get(a.sessionId);
            return count === undefined ? false : count === 1 ? 'first' : 'taken';
          });
        },
        // One row per session in a statement: an upsert cannot touch a row twice.
        { max: BATCH_MAX, keysOf: (a) => [a.sessionId], retryAlone: isRefusal },
      );
      this.#leaseTakes.set(ttlMs, batcher);
    }
    return batcher;
  }
}

/**
 * A new turn's columns after its id (and session id), as arrays for a batched insert: the same
 * order in addTurns and openSessionsWithTurns, whose SQL reads them by position.
 */
function turnColumns(turns: readonly NewTurn[]): unknown[] {
  return [
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
  ];
}

/** A batch's answer rows (`asked` names the call) in the order of `asked`; a missing one fails. */
function answersFor(rows: readonly Row[], asked: readonly string[], what: string): Row[] {
  const by = new Map(rows.map((row) => [String(row.asked), row]));
  return asked.map((id) => {
    const row = by.get(id);
    if (row === undefined) throw new StoreError(`${what} ${id}: no answer from the batch`);
    return row;
  });
}
