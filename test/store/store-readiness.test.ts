import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { StoreReadiness } from '../../src/store/readiness.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { capturingLogger } from '../k8s/cluster-helpers.js';

/**
 * Defect: a store that refused every write (its fsync failed) still answered /readyz 200, so
 * traffic kept coming to a broker that could store none of it. Readiness now asks the store for
 * a write that changes nothing, every few seconds.
 */
describe('StoreReadiness', () => {
  const cleanups: Array<() => Promise<unknown> | unknown> = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  async function storeWithDisk(): Promise<{ store: SqliteStore; path: string; disk: { failing: boolean } }> {
    const dir = await mkdtemp(join(tmpdir(), 'ak-readiness-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    const disk = { failing: false };
    const path = join(dir, 'state.db');
    const store = new SqliteStore(path, {
      fsync: (_fd, done) => {
        if (disk.failing) done(Object.assign(new Error('EIO: i/o error, fsync'), { code: 'EIO' }));
        else done(null);
      },
    });
    await store.migrate();
    cleanups.push(() => store.close());
    return { store, path, disk };
  }

  it('is ready while the store takes writes, and says why not once it refuses them', async () => {
    const { store, path, disk } = await storeWithDisk();
    const log = capturingLogger();
    const readiness = new StoreReadiness(store, log.logger, path, 60_000);
    cleanups.push(() => readiness.close());
    await readiness.probe();
    expect(readiness.problem()).toBeUndefined();

    disk.failing = true;
    await readiness.probe();
    expect(readiness.problem()).toMatch(/^the session store refuses writes: .*EIO/);
    // After a failed fsync nothing written since can be trusted: it stays refused.
    disk.failing = false;
    await readiness.probe();
    expect(readiness.problem()).toMatch(/refuses writes/);
    const errors = log.lines
      .map((l) => JSON.parse(l) as { level: number; msg: string })
      .filter((l) => l.level >= 50);
    expect(errors.map((e) => e.msg)).toEqual([expect.stringMatching(/^the session store refuses writes/)]);
  });

  it('says nothing of a store that takes writes, and its probe changes nothing', async () => {
    const { store, path } = await storeWithDisk();
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
