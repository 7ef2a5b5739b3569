import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chatAddressContract } from '../../../test/store/chat-address-contract.js';
import { feedbackContract } from '../../../test/store/feedback-contract.js';
import { installationContract } from '../../../test/store/installation-contract.js';
import { identityLinkContract, retentionContract } from '../../../test/store/retention-contract.js';
import { storeContract } from '../../../test/store/session-contract.js';
import { transcriptStoreContract } from '../../../test/store/transcript-contract.js';
import { triggerStoreContract } from '../../../test/store/trigger-contract.js';
import { startPostgres, type TestPostgres } from '../../../testkit/postgres.js';
import { queuedTurn } from '../../../testkit/turns.js';
import { InvalidConfigError, LeaseLostError, StaleWriteError, StoreError } from '../../core/errors.js';
import type { TurnRecord } from '../../core/store.js';
import { migrations } from '../migrations.js';
import { PostgresStore } from './postgres-store.js';

// One throwaway cluster for the file; every store gets a schema of its own, so tests start empty.
let server: TestPostgres | undefined;
let schemas = 0;

beforeAll(async () => {
  server = await startPostgres();
}, 60_000);

afterAll(async () => {
  await server?.stop();
});

function connectionString(): string {
  if (server === undefined) throw new Error('PostgreSQL did not start');
  return server.connectionString;
}

function freshSchema(): string {
  schemas += 1;
  return `t_${process.pid}_${schemas}`;
}

// The shared suite drives time by hand (`now` arguments), so here leases read the caller's
// clock; the database's clock, the default, has its own tests below (clock skew).
storeContract(
  'postgres',
  async () =>
    new PostgresStore({ connectionString: connectionString(), schema: freshSchema(), leaseClock: 'caller' }),
);

triggerStoreContract('postgres', async () => {
  const sessions = new PostgresStore({ connectionString: connectionString(), schema: freshSchema() });
  return { sessions, triggers: sessions.triggers() };
});

retentionContract('postgres', async () => {
  const sessions = new PostgresStore({ connectionString: connectionString(), schema: freshSchema() });
  return {
    sessions,
    retention: sessions.retention(),
    feedback: sessions.feedback(),
    transcripts: sessions.transcripts(),
    links: sessions.identityLinks(),
  };
});

identityLinkContract('postgres', async () => {
  const sessions = new PostgresStore({ connectionString: connectionString(), schema: freshSchema() });
  return {
    sessions,
    retention: sessions.retention(),
    feedback: sessions.feedback(),
    transcripts: sessions.transcripts(),
    links: sessions.identityLinks(),
  };
});

transcriptStoreContract('postgres', async () => {
  const sessions = new PostgresStore({ connectionString: connectionString(), schema: freshSchema() });
  return { sessions, transcripts: sessions.transcripts() };
});

chatAddressContract('postgres', async () => {
  const store = new PostgresStore({ connectionString: connectionString(), schema: freshSchema() });
  await store.migrate();
  return { rows: store.addresses(), close: () => store.close() };
});

installationContract('postgres', async () => {
  const store = new PostgresStore({ connectionString: connectionString(), schema: freshSchema() });
  await store.migrate();
  return { rows: store.installations(), close: () => store.close() };
});

feedbackContract('postgres', async () => {
  const store = new PostgresStore({ connectionString: connectionString(), schema: freshSchema() });
  await store.migrate();
  return { rows: store.feedback(), sessions: store, close: () => store.close() };
});

describe('PostgresStore', () => {
  const T0 = 1_700_000_000_000;
  const key = { surface: 'slack', workspaceId: 'T01', channelId: 'C01', threadId: '1.2' };

  async function withClient<T>(use: (client: pg.Client) => Promise<T>): Promise<T> {
    const client = new pg.Client({ connectionString: connectionString() });
    await client.connect();
    try {
      return await use(client);
    } finally {
      await client.end();
    }
  }

  describe('leases on the database clock, whatever the replicas’ clocks say', () => {
    const HOUR = 3_600_000;
    async function replicas(): Promise<[PostgresStore, PostgresStore]> {
      const schema = freshSchema();
      const a = new PostgresStore({ connectionString: connectionString(), schema });
      const b = new PostgresStore({ connectionString: connectionString(), schema });
      await a.migrate();
      return [a, b];
    }

    it('a replica whose clock runs an hour ahead cannot take a live lease', async () => {
      const [a, b] = await replicas();
      try {
        expect(await a.acquireLease('s1', 'a', Date.now(), 30_000)).toBe('first');
        expect(await b.acquireLease('s1', 'b', Date.now() + HOUR, 30_000)).toBe(false);
      } finally {
        await Promise.all([a.close(), b.close()]);
      }
    });

    it('a replica whose clock runs an hour behind renews its lease for real, not into the past', async () => {
      const [a, b] = await replicas();
      try {
        expect(await a.acquireLease('s1', 'a', Date.now() - HOUR, 30_000)).toBe('first');
        expect(await a.renewLeases('a', Date.now() - HOUR, 30_000)).toStrictEqual(['s1']);
        expect(await b.acquireLease('s1', 'b', Date.now(), 30_000)).toBe(false);
      } finally {
        await Promise.all([a.close(), b.close()]);
      }
    });

    it('scans on the database clock: a replica an hour ahead does not see a live lease as expired', async () => {
      const [a, b] = await replicas();
      try {
        const s = await a.openSession({ key, binding: 'team-a/support', now: Date.now() });
        await a.addTurn(
          queuedTurn({ id: 'm1', sessionId: s.id, chatMessageId: 'm1', text: 'hi', now: Date.now() }),
        );
        expect(await a.acquireLease(s.id, 'a', Date.now(), 30_000)).toBe('first');
        expect(await b.sessionsWithWork({ owner: 'b', now: Date.now() + HOUR })).toStrictEqual([]);
        expect(await a.sessionsWithWork({ owner: 'a', now: Date.now() - HOUR })).toStrictEqual([s.id]);
      } finally {
        await Promise.all([a.close(), b.close()]);
      }
    });

    it('fences on the database clock: a lease that expired fails the commit, even from a slow clock', async () => {
      const [a, b] = await replicas();
      try {
        const s = await a.openSession({ key, binding: 'team-a/support', now: Date.now() });
        expect(await a.acquireLease(s.id, 'a', Date.now(), 200)).toBe('first');
        await new Promise((resolve) => setTimeout(resolve, 400));
        const late = a.commit({
          session: { ...s, contextId: 'late' },
          now: Date.now() - HOUR,
          fence: { owner: 'a' },
        });
        await expect(late).rejects.toMatchObject({ code: 'lease_lost' });
        // And the lease is free for the other replica, however its clock reads.
        expect(await b.acquireLease(s.id, 'b', Date.now() - HOUR, 30_000)).toBe('taken');
      } finally {
        await Promise.all([a.close(), b.close()]);
      }
    });
  });

  it('answers each of the calls that share one batched statement with its own outcome', async () => {
    const store = new PostgresStore({ connectionString: connectionString(), schema: freshSchema() });
    await store.migrate();
    try {
      const now = Date.now();
      const keyOf = (i: number) => ({ ...key, threadId: `batch-${i}` });
      // Opened at once: one statement; each caller gets its own session.
      const sessions = await Promise.all(
        Array.from({ length: 6 }, (_, i) => store.openSession({ key: keyOf(i), binding: 'b/a', now })),
      );
      expect(sessions.map((s) => s.key.threadId)).toStrictEqual([0, 1, 2, 3, 4, 5].map((i) => `batch-${i}`));
      const turn = (i: number, id = `m${i}`) =>
        queuedTurn({ id, sessionId: sessions[i]?.id ?? '', chatMessageId: id, text: 'hi', now });
      const added = await Promise.allSettled([
        ...[0, 1, 2, 3, 4].map((i) => store.addTurn(turn(i), { inboundEvent: `T01:Ev${i}` })),
        store.addTurn({ ...turn(5), sessionId: 'slack:T01:C01:nowhere' }, { inboundEvent: 'T01:Ev5' }),
      ]);
      expect(added.slice(0, 5).map((r) => r.status === 'fulfilled' && r.value.created)).toStrictEqual(
        Array(5).fill(true),
      );
      expect(added[5]).toMatchObject({ status: 'rejected', reason: expect.any(StoreError) });
      // Its event was not claimed: both or neither.
      expect(await store.claimInboundEvent('T01:Ev5', now)).toBe(true);
      expect(await store.claimInboundEvent('T01:Ev0', now)).toBe(false);
      for (const i of [0, 1, 2, 3])
        expect(await store.acquireLease(sessions[i]?.id ?? '', 'a', now, 60_000)).toBe('first');
      // Its turn m2 is open and newer than nothing read.
      expect(await store.releaseLease(sessions[2]?.id ?? '', 'a', 0)).toBe(true);
      const [s0, s1, s2, s3, s4] = sessions as [
        (typeof sessions)[0],
        (typeof sessions)[0],
        (typeof sessions)[0],
        (typeof sessions)[0],
        (typeof sessions)[0],
      ];
      const stored = async (id: string): Promise<TurnRecord> => {
        const found = await store.getTurn(id);
        if (found === undefined) throw new Error(`no turn ${id}`);
        return found;
      };
      const [m0, m1, m2, m4] = (await Promise.all(['m0', 'm1', 'm2', 'm4'].map(stored))) as [
        TurnRecord,
        TurnRecord,
        TurnRecord,
        TurnRecord,
      ];
      const results = await Promise.allSettled([
        // Fine, fenced.
        store.commit({
          session: { ...s0, contextId: 'ok' },
          turns: [{ ...m0, state: 'sending' }],
          now,
          fence: { owner: 'a' },
        }),
        // Stale version.
        store.commit({
          session: { ...s1, version: 7 },
          turns: [{ ...m1, state: 'sending' }],
          now,
          fence: { owner: 'a' },
        }),
        // Lease released.
        store.commit({
          session: { ...s2, contextId: 'x' },
          turns: [{ ...m2, state: 'sending' }],
          now,
          fence: { owner: 'a' },
        }),
        // A turn that does not exist.
        store.commit({
          session: { ...s3, contextId: 'x' },
          turns: [{ ...m0, id: 'ghost', sessionId: s3.id }],
          now,
        }),
        // Turns alone, unfenced.
        store.commit({ turns: [{ ...m4, state: 'accepted', taskId: 't4' }], now }),
      ]);
      expect(results[0]).toMatchObject({ status: 'fulfilled', value: { contextId: 'ok', version: 2 } });
      expect(results[1]).toMatchObject({ status: 'rejected', reason: expect.any(StaleWriteError) });
      expect(results[2]).toMatchObject({ status: 'rejected', reason: expect.any(LeaseLostError) });
      expect(results[3]).toMatchObject({ status: 'rejected', reason: expect.any(StoreError) });
      expect(results[4]).toMatchObject({ status: 'fulfilled', value: undefined });
      // What was refused wrote nothing; what was not, everything.
      expect((await stored('m0')).state).toBe('sending');
      expect((await stored('m1')).state).toBe('queued');
      expect((await stored('m2')).state).toBe('queued');
      expect(await store.getSession(s3.id)).toStrictEqual(s3);
      expect(await stored('m4')).toMatchObject({ state: 'accepted', taskId: 't4' });
      expect(await store.getSession(s4.id)).toMatchObject({ version: 1 });
    } finally {
      await store.close();
    }
  });

  it('lets replicas migrate a fresh schema at the same time, applying each migration once', async () => {
    const schema = freshSchema();
    const replicas = Array.from(
      { length: 4 },
      () => new PostgresStore({ connectionString: connectionString(), schema }),
    );
    try {
      await Promise.all(replicas.map((store) => store.migrate()));
      await replicas[0]?.migrate();
    } finally {
      await Promise.all(replicas.map((store) => store.close()));
    }
    const rows = await withClient(
      async (client) =>
        (await client.query(`SELECT version, name FROM "${schema}".schema_migrations ORDER BY version`)).rows,
    );
    expect(rows).toStrictEqual(migrations.map((m) => ({ version: m.version, name: m.name })));
  });

  describe("a lease's first take, across builds", () => {
    it("migration 9 lets a lease row go with its session: the thread's next session takes its lease as a first", async () => {
      const schema = freshSchema();
      const store = new PostgresStore({ connectionString: connectionString(), schema });
      await store.migrate();
      try {
        const s = await store.openSession({ key, binding: 'team-a/support', now: Date.now() });
        expect(await store.acquireLease(s.id, 'old', Date.now(), 30_000)).toBe('first');
        // What the retention sweep does to a forgotten thread's lease (retention-queries.ts).
        const deleted = await withClient((client) =>
          client.query(`DELETE FROM "${schema}".leases WHERE session_id = $1`, [s.id]),
        );
        expect(deleted.rowCount).toBe(1);
        expect(await store.acquireLease(s.id, 'new', Date.now(), 30_000)).toBe('first');
      } finally {
        await store.close();
      }
    });

    it('a session opened before migration 8 has had its lease released on record: its next take is no first', async () => {
      const schema = freshSchema();
      const store = new PostgresStore({ connectionString: connectionString(), schema });
      await store.migrate();
      try {
        const before = await store.openSession({ key, binding: 'team-a/support', now: Date.now() });
        // The schema as migration 7 left it (8 and 9 undone), with that session's lease released
        // (deleted) by the build of the time.
        await withClient((client) =>
          client.query(`
            DROP TABLE "${schema}".forgotten_threads;
            DROP INDEX "${schema}".sessions_updated_at;
            DROP INDEX "${schema}".transcript_threads_updated_at;
            DROP INDEX "${schema}".answer_feedback_session;
            DROP INDEX "${schema}".turns_words;
            DELETE FROM "${schema}".leases;
            ALTER TABLE "${schema}".leases DROP COLUMN takes;
            DELETE FROM "${schema}".schema_migrations WHERE version IN (8, 9);
          `),
        );
        await store.migrate();
        expect(await store.acquireLease(before.id, 'a', Date.now(), 30_000)).toBe('taken');
        const after = await store.openSession({
          key: { ...key, threadId: '9.9' },
          binding: 'team-a/support',
          now: Date.now(),
        });
        expect(await store.acquireLease(after.id, 'a', Date.now(), 30_000)).toBe('first');
      } finally {
        await store.close();
      }
    });
  });

  it('keeps the data for the next store on the same schema, and leaves a borrowed pool open', async () => {
    const schema = freshSchema();
    const pool = new pg.Pool({ connectionString: connectionString(), max: 2 });
    try {
      const first = new PostgresStore({ pool, schema });
      await first.migrate();
      const session = await first.openSession({ key, binding: 'ns/b', now: T0 });
      const written = await first.commit({ session: { ...session, contextId: 'ctx' }, now: T0 + 1 });
      await first.close();
      expect((await pool.query('SELECT 1 AS one')).rows).toStrictEqual([{ one: 1 }]);

      const second = new PostgresStore({ connectionString: connectionString(), schema });
      try {
        await second.migrate();
        expect(await second.getSession(session.id)).toStrictEqual(written);
      } finally {
        await second.close();
      }
    } finally {
      await pool.end();
    }
  });

  it('answers sessionsWithWork and openTurns from the partial indexes', async () => {
    const schema = freshSchema();
    const store = new PostgresStore({ connectionString: connectionString(), schema });
    await store.migrate();
    await store.close();
    const plans = await withClient(async (client) => {
      // Tiny tables are cheaper to scan; forbid that to see which index the planner can use.
      await client.query('SET enable_seqscan = off');
      const explain = async (sql: string) =>
        (await client.query(`EXPLAIN ${sql}`)).rows.map((row) => String(row['QUERY PLAN'])).join('\n');
      return {
        work: await explain(
          `SELECT s.id, s.version, s.turn_seq FROM "${schema}".sessions AS s WHERE s.id IN (
             SELECT id FROM "${schema}".sessions WHERE task IS NOT NULL OR question IS NOT NULL
             UNION SELECT session_id FROM "${schema}".turns WHERE state <> 'settled')`,
        ),
        open: await explain(
          `SELECT * FROM "${schema}".turns WHERE session_id = 'x' AND state <> 'settled' ORDER BY seq`,
        ),
      };
    });
    expect(plans.work).toContain('sessions_with_work');
    expect(plans.work).toContain('turns_open');
    expect(plans.work).not.toContain('Seq Scan');
    expect(plans.open).toContain('turns_open');
    expect(plans.open).not.toContain('Seq Scan');
  });

  it('refuses a schema name that is not a plain identifier, before any I/O', () => {
    for (const schema of ['Public', 'a-b', 'x"; DROP TABLE y; --', '1abc', '']) {
      expect(() => new PostgresStore({ connectionString: connectionString(), schema })).toThrow(
        InvalidConfigError,
      );
    }
  });

  it('needs exactly one of connectionString and pool', () => {
    expect(() => new PostgresStore({})).toThrow(InvalidConfigError);
  });

  it('reports an unreachable database as StoreError', async () => {
    const store = new PostgresStore({ connectionString: 'postgresql://postgres@127.0.0.1:1/none' });
    try {
      const failed = store.getSession('x');
      await expect(failed).rejects.toBeInstanceOf(StoreError);
      await expect(failed).rejects.toMatchObject({
        code: 'store_error',
        message: expect.stringContaining('ECONNREFUSED'),
      });
    } finally {
      await store.close();
    }
  });

  it('reports a query on an unmigrated schema as StoreError with the driver error as cause', async () => {
    const store = new PostgresStore({ connectionString: connectionString(), schema: freshSchema() });
    try {
      const failed = store.getSession('x');
      await expect(failed).rejects.toBeInstanceOf(StoreError);
      await expect(failed).rejects.toMatchObject({ cause: { code: '42P01' } });
    } finally {
      await store.close();
    }
  });
});
