import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { DatabaseSync } from 'node:sqlite';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generatePostgres, generateSqlite } from '../../bench/year-store.js';
import type { StoreConfig } from '../../src/config/broker.js';
import { openStore } from '../../src/store/open.js';
import { startPostgres, type TestPostgres } from '../../testkit/postgres.js';
import { killChild } from '../crash/children.js';
import type { SweepChildConfig } from '../crash/sweep-child.js';
import { until } from '../triggers/harness.js';

/**
 * Fault matrix: the broker killed (SIGKILL) in the middle of a retention sweep, on SQLite and on
 * PostgreSQL. Each batch is one transaction, so what must hold after the kill is that every
 * thread is either whole or forgotten (gone with all its turns, feedback and lease, and marked),
 * never half; and the next sweep, after a restart, forgets the rest and nothing else.
 */

const THREADS = 4_000;
/** Idle past the 90 days kept: the oldest threads (bench/year-store.ts spreads them over the year). */
const OLD = 3_000;
const BATCH = 50;
/** Batches committed before the kill: well into the sweep, far from its end. */
const KILL_AFTER = 10;

function startSweep(config: SweepChildConfig): {
  child: ChildProcess;
  batches: () => number;
  done: Promise<string>;
} {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/crash/sweep-child.ts'], {
    env: { ...process.env, SWEEP_CONFIG: JSON.stringify(config) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let batches = 0;
  const done = new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
      if (line.startsWith('batch ')) batches += 1;
      if (line.startsWith('done ')) resolve(line.slice('done '.length));
    });
    child.on('exit', (code, signal) =>
      reject(new Error(`the sweep exited (${code ?? signal}) before its end`)),
    );
  });
  done.catch(() => undefined);
  return { child, batches: () => batches, done };
}

/** What the store holds, counted in its own tables. */
interface Census {
  sessions: number;
  oldSessions: number;
  forgotten: number;
  orphanTurns: number;
  orphanFeedback: number;
  orphanLeases: number;
  /** Forgotten threads whose session is still there (a mark without its deletion). */
  markedAlive: number;
  turns: number;
}

const CENSUS = (cut: number) => `SELECT
  (SELECT COUNT(*) FROM sessions) AS sessions,
  (SELECT COUNT(*) FROM sessions WHERE updated_at < ${cut}) AS old_sessions,
  (SELECT COUNT(*) FROM forgotten_threads) AS forgotten,
  (SELECT COUNT(*) FROM turns t WHERE NOT EXISTS (SELECT 1 FROM sessions s WHERE s.id = t.session_id)) AS orphan_turns,
  (SELECT COUNT(*) FROM answer_feedback f WHERE NOT EXISTS (SELECT 1 FROM sessions s WHERE s.id = f.session_id)) AS orphan_feedback,
  (SELECT COUNT(*) FROM leases l WHERE NOT EXISTS (SELECT 1 FROM sessions s WHERE s.id = l.session_id)) AS orphan_leases,
  (SELECT COUNT(*) FROM forgotten_threads m WHERE EXISTS (SELECT 1 FROM sessions s WHERE s.id = m.session_id)) AS marked_alive,
  (SELECT COUNT(*) FROM turns) AS turns`;

function censusOf(row: Record<string, unknown>): Census {
  const n = (k: string) => Number(row[k]);
  return {
    sessions: n('sessions'),
    oldSessions: n('old_sessions'),
    forgotten: n('forgotten'),
    orphanTurns: n('orphan_turns'),
    orphanFeedback: n('orphan_feedback'),
    orphanLeases: n('orphan_leases'),
    markedAlive: n('marked_alive'),
    turns: n('turns'),
  };
}

interface Backend {
  store: StoreConfig;
  generate(now: number): Promise<void>;
  census(cut: number): Promise<Census>;
  cleanup(): Promise<void>;
}

const DAY = 24 * 3600 * 1000;

describe.each(['sqlite', 'postgres'] as const)('a retention sweep killed midway, on %s', (kind) => {
  let server: TestPostgres | undefined;
  let backend: Backend;

  beforeAll(async () => {
    if (kind === 'sqlite') {
      const dir = await mkdtemp(join(tmpdir(), 'kourier-sweep-'));
      const path = join(dir, 'state.db');
      backend = {
        store: { kind: 'sqlite', path },
        generate: async (now) => generateSqlite(path, THREADS, OLD, now),
        census: async (cut) => {
          const db = new DatabaseSync(path);
          try {
            return censusOf(db.prepare(CENSUS(cut)).get() as Record<string, unknown>);
          } finally {
            db.close();
          }
        },
        cleanup: () => rm(dir, { recursive: true, force: true }),
      };
    } else {
      server = await startPostgres({ durable: true });
      const url = server.connectionString;
      const schema = `sweep_${process.pid}`;
      backend = {
        store: { kind: 'postgres', url, schema },
        generate: (now) => generatePostgres(url, schema, THREADS, OLD, now),
        census: async (cut) => {
          const client = new pg.Client({ connectionString: url });
          await client.connect();
          try {
            await client.query(`SET search_path TO "${schema}"`);
            return censusOf((await client.query(CENSUS(cut))).rows[0] as Record<string, unknown>);
          } finally {
            await client.end();
          }
        },
        cleanup: async () => undefined,
      };
    }
    // The tables as the broker's migration makes them, then a year of settled threads in them.
    const stores = await openStore(backend.store);
    await stores.sessions.close();
    await backend.generate(Date.now());
  }, 120_000);

  afterAll(async () => {
    await backend?.cleanup();
    await server?.stop();
  });

  it('leaves every thread whole or forgotten, and the next sweep forgets the rest', async () => {
    const config: SweepChildConfig = { store: backend.store, days: 90, batch: BATCH };
    const cut = Date.now() - 90 * DAY;
    expect(await backend.census(cut)).toMatchObject({ sessions: THREADS, oldSessions: OLD, forgotten: 0 });

    const first = startSweep(config);
    await until(`${KILL_AFTER} batches of the first sweep`, () => first.batches() >= KILL_AFTER, 60_000);
    await killChild(first.child);
    const killed = await backend.census(cut);
    // Killed midway: some old threads forgotten, some left; none of them half.
    expect(killed.oldSessions).toBeGreaterThan(0);
    expect(killed.forgotten).toBeGreaterThanOrEqual(KILL_AFTER * BATCH);
    expect(killed).toMatchObject({
      sessions: THREADS - killed.forgotten,
      oldSessions: OLD - killed.forgotten,
      orphanTurns: 0,
      orphanFeedback: 0,
      orphanLeases: 0,
      markedAlive: 0,
      turns: 2 * (THREADS - killed.forgotten),
    });

    // The broker started again: its sweep forgets the rest, and only the rest.
    const second = startSweep(config);
    const totals = JSON.parse(await second.done) as { threads: number };
    expect(totals.threads).toBe(OLD - killed.forgotten);
    expect(await backend.census(cut)).toEqual({
      sessions: THREADS - OLD,
      oldSessions: 0,
      forgotten: OLD,
      orphanTurns: 0,
      orphanFeedback: 0,
      orphanLeases: 0,
      markedAlive: 0,
      turns: 2 * (THREADS - OLD),
    });
  });
});
