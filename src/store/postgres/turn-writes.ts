import type pg from 'pg';
import { StoreError } from '../../core/errors.js';
import {
  type NewSession,
  type NewTurn,
  type SessionRecord,
  sessionIdOf,
  type TurnRecord,
} from '../../core/store.js';
import { newSessionRecord, parsedJson, type Row, sessionFromRow, turnFromRow } from '../rows.js';
import { newTurnRecord } from '../written-records.js';
import type { BatchedStatements } from './batched.js';
import { type PreparedSql, type Queryable, runPrepared } from './prepared.js';

type Added = { turn: TurnRecord; created: boolean };
type Opened = { session: SessionRecord; turn: TurnRecord; created: boolean };

/**
 * How the PostgreSQL store adds turns: addTurn, and openSessionAndAddTurn, the write every chat
 * message makes. Its caller claims and prunes inbound events around these and wraps errors.
 */
export class TurnWrites {
  readonly #pool: pg.Pool;
  readonly #sql: PreparedSql;
  readonly #batched: BatchedStatements;
  readonly #transaction: <T>(body: (client: pg.PoolClient) => Promise<T>) => Promise<T>;
  /** The last openSessionAndAddTurn of each session still running (see #oneAtATime). */
  readonly #opening = new Map<string, Promise<undefined>>();

  constructor(
    pool: pg.Pool,
    sql: PreparedSql,
    batched: BatchedStatements,
    transaction: <T>(body: (client: pg.PoolClient) => Promise<T>) => Promise<T>,
  ) {
    this.#pool = pool;
    this.#sql = sql;
    this.#batched = batched;
    this.#transaction = transaction;
  }

  /** The turn added by the batched addTurns statement, or the one a repeat hit. */
  async add(turn: NewTurn, event: string | null): Promise<Added> {
    const row = await this.#batched.addTurn(turn, event);
    if (row.session_found !== true) throw new StoreError(`session ${turn.sessionId} does not exist`);
    if (row.id !== null && row.id !== undefined)
      return { turn: newTurnRecord(turn, Number(row.seq)), created: true };
    // A conflict: the row it hit is committed by now (DO NOTHING waits), and this statement's
    // new snapshot sees it.
    return { turn: await this.#duplicateOf(this.#pool, turn), created: false };
  }

  /**
   * The session is read first (a batched read). A known thread: its turn is added by the
   * batched addTurns statement — opening a session that is there writes nothing. A new thread:
   * its session and first turn go in together, in one batched statement (openSessionsWithTurns)
   * shared with the other new threads of the moment, each call all or nothing. Calls for one
   * session run one after the other in this store, so only the first of several messages of a
   * new thread is told it opened the session. Should another replica open it between the read
   * and the statement, the statement writes nothing for this call, and the turn goes in as a
   * later message's would: after the ones there, `queued` even when built `sending` (it may no
   * longer be the session's first).
   */
  openAndAdd(
    init: NewSession,
    build: (session: SessionRecord, opened: boolean) => NewTurn,
    event: string | null,
  ): Promise<Opened> {
    const id = sessionIdOf(init.key);
    return this.#oneAtATime(id, () => this.#openAndAdd(id, init, build, event));
  }

  async #openAndAdd(
    id: string,
    init: NewSession,
    build: (session: SessionRecord, opened: boolean) => NewTurn,
    event: string | null,
  ): Promise<Opened> {
    const found = await this.#batched.session(id);
    if (found !== undefined) {
      const session = sessionFromRow(found, parsedJson);
      return { session, ...(await this.add(build(session, false), event)) };
    }
    const opened = newSessionRecord(id, init);
    const turn = build(opened, true);
    // A turn of another session (the port allows it): the session and it in one transaction.
    if (turn.sessionId !== id) return this.#openAndAddInTransaction(init, turn, event);
    const row = await this.#batched.openSessionWithTurn({ init, turn, event });
    if (row.opened === true) {
      // The statement wrote the session as `opened` and the turn as its first (seq 1).
      if (row.id !== null && row.id !== undefined)
        return { session: opened, turn: newTurnRecord(turn, 1), created: true };
      // Its id is another turn's: that one is the answer, as addTurn gives it.
      return { session: opened, turn: await this.#duplicateOf(this.#pool, turn), created: false };
    }
    const there = await this.#one(this.#pool, this.#sql.selectSession, [id]);
    if (there === undefined) throw new StoreError(`session ${id} vanished right after it was opened`);
    const later: NewTurn =
      turn.state === 'sending' ? { ...turn, state: 'queued', attempts: 0, firstSentAt: null } : turn;
    return { session: sessionFromRow(there, parsedJson), ...(await this.add(later, event)) };
  }

  /**
   * The batched open and add statements, each for this one call, in one transaction: the
   * session and the turn commit together or not at all. Unbatched, because two calls sharing a
   * transaction would share its fate; used only for a turn built for another session.
   */
  async #openAndAddInTransaction(init: NewSession, turn: NewTurn, event: string | null): Promise<Opened> {
    return this.#transaction(async (client) => {
      const id = sessionIdOf(init.key);
      // No row: another transaction inserted it meanwhile; a new statement's snapshot has it.
      const row =
        (await this.#batched.openSessionOn(client, init)) ??
        (await this.#one(client, this.#sql.selectSession, [id]));
      if (row === undefined) throw new StoreError(`session ${id} vanished right after it was opened`);
      const session = sessionFromRow(row, parsedJson);
      const added = await this.#batched.addTurnOn(client, turn, event);
      if (added.session_found !== true) throw new StoreError(`session ${turn.sessionId} does not exist`);
      if (added.id !== null && added.id !== undefined)
        return { session, turn: newTurnRecord(turn, Number(added.seq)), created: true };
      return { session, turn: await this.#duplicateOf(client, turn), created: false };
    });
  }

  /** The stored turn a turn that was not inserted ran into (its id, or its chat message). */
  async #duplicateOf(db: Queryable, turn: NewTurn): Promise<TurnRecord> {
    const existing = await this.#one(db, this.#sql.selectDuplicateTurn, [
      turn.id,
      turn.sessionId,
      turn.chatMessageId,
    ]);
    if (existing === undefined) throw new StoreError(`turn ${turn.id} was neither inserted nor found`);
    return turnFromRow(existing, parsedJson);
  }

  async #one(
    db: Queryable,
    statement: PreparedSql[keyof PreparedSql],
    values: unknown[],
  ): Promise<Row | undefined> {
    return (await runPrepared(db, statement, values)).rows[0];
  }

  /** Runs `body` after every earlier call for `key` in this store has ended. */
  async #oneAtATime<T>(key: string, body: () => Promise<T>): Promise<T> {
    const before = this.#opening.get(key);
    const run = before === undefined ? body() : before.then(body);
    const tail = run.then(
      () => undefined,
      () => undefined,
    );
    this.#opening.set(key, tail);
    try {
      return await run;
    } finally {
      if (this.#opening.get(key) === tail) this.#opening.delete(key);
    }
  }
}
