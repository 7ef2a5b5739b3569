import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, describe, expect, it } from 'vitest';
import { StoreReadiness } from '../../src/store/readiness.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { capturingLogger } from '../k8s/cluster-helpers.js';

/**
 * Defect: a store that refused every write still answered /readyz 200, so traffic kept coming to
 * a broker that could store none of it. Readiness now asks the store for a write that changes
 * nothing, every few seconds. Here the refusal is real: another process holds the file's write
 * lock, and the store's write gives up after its busy timeout (SQLITE_BUSY).
 */
describe('StoreReadiness', () => {
  const cleanups: Array<() => Promise<unknown> | unknown> = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  async function storeOnDisk(): Promise<{ store: SqliteStore; path: string }> {
    const dir = await mkdtemp(join(tmpdir(), 'ak-readiness-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    const path = join(dir, 'state.db');
    const store = new SqliteStore(path);
    await store.migrate();
    cleanups.push(() => store.close());
    return { store, path };
  }

  it('is ready while the store takes writes, says why not while it refuses them, and is ready again after', async () => {
    const { store, path } = await storeOnDisk();
    const log = capturingLogger();
    const readiness = new StoreReadiness(store, log.logger, path, 60_000);
    cleanups.push(() => readiness.close());
    await readiness.probe();
    expect(readiness.problem()).toBeUndefined();

    const locker = new DatabaseSync(path);
    locker.exec('BEGIN IMMEDIATE');
    await readiness.probe();
    expect(readiness.problem()).toMatch(/^the session store refuses writes: .*locked/);
    locker.exec('ROLLBACK');
    locker.close();
    await readiness.probe();
    expect(readiness.problem()).toBeUndefined();
    const lines = log.lines.map((l) => JSON.parse(l) as { level: number; msg: string });
    expect(lines.filter((l) => l.level >= 50).map((e) => e.msg)).toEqual([
      expect.stringMatching(/^the session store refuses writes/),
    ]);
    expect(lines.map((l) => l.msg)).toContain('the session store takes writes again');
  }, 20_000);

  it('says nothing of a store that takes writes, and its probe changes nothing', async () => {
    const { store, path } = await storeOnDisk();
    const log = capturingLogger();
    const readiness = new StoreReadiness(store, log.logger, path, 60_000);
    cleanups.push(() => readiness.close());
    await readiness.probe();
    await readiness.probe();
    expect(readiness.problem()).toBeUndefined();
    expect(await store.sessionsWithWork()).toEqual([]);
    expect(log.lines.filter((l) => (JSON.parse(l) as { level: number }).level >= 40)).toEqual([]);
  });
});
