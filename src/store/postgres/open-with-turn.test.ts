import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPostgres, type TestPostgres } from '../../../testkit/postgres.js';
import { queuedTurn } from '../../../testkit/turns.js';
import { StoreError } from '../../core/errors.js';
import { type NewSession, type NewTurn, type SessionRecord, sessionIdOf } from '../../core/store.js';
import { PostgresStore } from './postgres-store.js';

/**
 * PostgreSQL's openSessionAndAddTurn for new threads: the batched openSessionsWithTurns
 * statement (sql.ts), what sharing it costs the calls that share it, and another replica
 * opening the same thread between the store's read and its statement. The behaviour every
 * store shares is in the store contract (test/store/session-contract/open-with-turn.ts).
 */

let server: TestPostgres | undefined;
let schemas = 0;

beforeAll(async () => {
  server = await startPostgres();
}, 60_000);

afterAll(async () => {
  await server?.stop();
});

type QueryConfig = { name?: string; text: string; values?: unknown[] };

/** A pool that records the statements it runs, and lets a test act just before one runs. */
function recordingPool(before?: (statement: QueryConfig) => Promise<void>) {
  if (server === undefined) throw new Error('PostgreSQL did not start');
  const pool = new pg.Pool({ connectionString: server.connectionString });
  const statements: QueryConfig[] = [];
  const query = pool.query.bind(pool) as (config: unknown, values?: unknown) => Promise<unknown>;
  (pool as unknown as { query: typeof query }).query = async (config, values) => {
    if (typeof config === 'object' && config !== null && 'text' in config) {
      statements.push(config as QueryConfig);
      await before?.(config as QueryConfig);
    }
    return query(config, values);
  };
  return { pool, statements };
}

const T0 = 1_700_000_000_000;
const keyOf = (threadId: string) => ({ surface: 'slack', workspaceId: 'T01', channelId: 'C01', threadId });
const init = (threadId: string, binding = 'team-a/support'): NewSession => ({
  key: keyOf(threadId),
  binding,
  now: T0,
});
/** A first turn as the engine builds it: `sending` for a session its call opened. */
const firstTurn =
  (id: string, text = `text of ${id}`) =>
  (session: SessionRecord, opened: boolean): NewTurn =>
    queuedTurn({
      id,
      sessionId: session.id,
      chatMessageId: `chat-${id}`,
      text,
      now: T0,
      state: opened ? 'sending' : 'queued',
      attempts: opened ? 1 : 0,
      firstSentAt: opened ? T0 : null,
    });
const isOpenWithTurns = (s: QueryConfig) => s.text.includes('opened AS (');
/** How many calls a batched statement carried (its first parameter holds one value per call). */
/** How many calls a batched statement carried: the elements of its first array (sent as a literal). */
const callsIn = (s: QueryConfig): number => {
  const first = s.values?.[0];
  if (Array.isArray(first)) return first.length;
  if (typeof first !== 'string' || !first.startsWith('{')) return 0;
  if (first === '{}') return 0;
  let elements = 1;
  let quoted = false;
  for (let i = 1; i < first.length - 1; i++) {
    if (first[i] === '\\') i++;
    else if (first[i] === '"') quoted = !quoted;
    else if (first[i] === ',' && !quoted) elements++;
  }
  return elements;
};

async function storeOn(pool: pg.Pool, schema: string): Promise<PostgresStore> {
  const store = new PostgresStore({ pool, schema });
  await store.migrate();
  return store;
}

describe('PostgreSQL: opening new threads with their first turns', () => {
  it('opens new threads arriving together in one statement, each with its turn as built', async () => {
    const { pool, statements } = recordingPool();
    const store = await storeOn(pool, `o_${process.pid}_${++schemas}`);
    try {
      const threads = ['a', 'b', 'c', 'd', 'e'];
      const before = statements.length;
      const results = await Promise.all(
        threads.map((t) =>
          store.openSessionAndAddTurn(init(t), firstTurn(`m-${t}`), { inboundEvent: `Ev-${t}` }),
        ),
      );
      expect(results.map((r) => [r.created, r.turn.seq, r.turn.state])).toStrictEqual(
        threads.map(() => [true, 1, 'sending']),
      );
      // One read of the five sessions, one statement writing all five: two round trips (and
      // the first event claim's prune of old event keys).
      const ran = statements.slice(before).filter((s) => !s.text.startsWith('DELETE'));
      expect(ran.map((s) => (isOpenWithTurns(s) ? 'write' : 'read'))).toStrictEqual(['read', 'write']);
      expect(ran.map(callsIn)).toStrictEqual([5, 5]);
    } finally {
      await store.close();
      await pool.end();
    }
  });

  it('fails a call the server refuses alone: the batch is rerun call by call and the others are written', async () => {
    const { pool, statements } = recordingPool();
    const store = await storeOn(pool, `o_${process.pid}_${++schemas}`);
    try {
      const threads = ['a', 'b', 'c', 'd'];
      const results = await Promise.allSettled(
        threads.map((t) =>
          // A NUL character is text PostgreSQL refuses: the whole statement is refused.
          store.openSessionAndAddTurn(init(t), firstTurn(`m-${t}`, t === 'c' ? 'bad \u0000 text' : 'fine'), {
            inboundEvent: `Ev-${t}`,
          }),
        ),
      );
      expect(results.map((r) => r.status)).toStrictEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
      expect(results[2]).toMatchObject({ status: 'rejected', reason: expect.any(StoreError) });
      // The refused statement carried all four, then each ran alone.
      const sizes = statements.filter(isOpenWithTurns).map(callsIn);
      expect(sizes).toStrictEqual([4, 1, 1, 1, 1]);
      // Nothing of the refused call: no session, no turn, its event unclaimed.
      expect(await store.getSession(sessionIdOf(keyOf('c')))).toBeUndefined();
      expect(await store.getTurn('m-c')).toBeUndefined();
      expect(await store.claimInboundEvent('Ev-c', T0 + 1)).toBe(true);
      for (const t of ['a', 'b', 'd']) {
        expect(await store.getTurn(`m-${t}`)).toMatchObject({ seq: 1, state: 'sending', text: 'fine' });
        expect(await store.claimInboundEvent(`Ev-${t}`, T0 + 1)).toBe(false);
      }
    } finally {
      await store.close();
      await pool.end();
    }
  });

  it('adds the turn queued after the ones there when another replica opens the thread first', async () => {
    const schema = `o_${process.pid}_${++schemas}`;
    const other = recordingPool();
    const replicaB = await storeOn(other.pool, schema);
    let raced = false;
    // Replica B opens the thread, with its own first turn, after A found it missing and just
    // before A's statement runs.
    const { pool } = recordingPool(async (statement) => {
      if (!isOpenWithTurns(statement) || raced) return;
      raced = true;
      await replicaB.openSessionAndAddTurn(init('t', 'team-b/other'), firstTurn('from-b'));
    });
    const replicaA = await storeOn(pool, schema);
    try {
      const told: boolean[] = [];
      const result = await replicaA.openSessionAndAddTurn(
        init('t'),
        (session, opened) => {
          told.push(opened);
          return firstTurn('from-a')(session, opened);
        },
        { inboundEvent: 'Ev-a' },
      );
      expect(raced).toBe(true);
      // Built once, as the first turn of a new session; stored as a later message is.
      expect(told).toStrictEqual([true]);
      expect(result.created).toBe(true);
      expect(result.session.binding).toBe('team-b/other');
      expect(result.turn).toMatchObject({
        id: 'from-a',
        seq: 2,
        state: 'queued',
        attempts: 0,
        firstSentAt: null,
      });
      const open = await replicaA.openTurns(sessionIdOf(keyOf('t')));
      expect(open.map((t) => [t.id, t.seq, t.state])).toStrictEqual([
        ['from-b', 1, 'sending'],
        ['from-a', 2, 'queued'],
      ]);
      expect(await replicaA.claimInboundEvent('Ev-a', T0 + 1)).toBe(false);
    } finally {
      await replicaA.close();
      await replicaB.close();
      await pool.end();
      await other.pool.end();
    }
  });
});
