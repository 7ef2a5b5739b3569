import { rm, writeFile } from 'node:fs/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { capturingLogger, eventually } from '../k8s/cluster-helpers.js';
import { LocalRun } from './local-run.js';

/**
 * Defect: with the SQLite file deleted while the broker ran (`rm state.db*`), new threads were
 * accepted and answered, nothing was logged and /readyz stayed 200; after a restart everything
 * acknowledged since was gone. SQLite writes on to the file it opened, so the broker now checks
 * that the file at the path is still that file: an error line, and readiness fails saying why.
 */
describe('local mode: the database file deleted under the running broker', () => {
  const local = new LocalRun('ak-deleted-db');
  afterEach(() => local.close());

  it('logs an error and fails readiness, naming the file', async () => {
    const log = capturingLogger();
    const { url } = await local.start({ logger: log.logger });
    const db = local.db;
    await eventually(async () => expect((await fetch(`${url}readyz`)).status).toBe(200));

    await rm(db, { force: true });
    await rm(`${db}-wal`, { force: true });
    await rm(`${db}-shm`, { force: true });

    const readyz = await fetch(`${url}readyz`);
    expect(readyz.status).toBe(503);
    expect(await readyz.text()).toContain(`${db} was deleted while open`);
    await eventually(() => {
      const errors = log.lines
        .map((l) => JSON.parse(l) as { level: number; msg: string })
        .filter((l) => l.level >= 50);
      expect(errors.map((e) => e.msg)).toEqual([expect.stringContaining('was deleted while open')]);
    });
    // Still alive: the person sees the broker is not ready rather than a dead process.
    expect((await fetch(`${url}healthz`)).status).toBe(200);
  });

  it('logs an error and fails readiness when the file is overwritten in place', async () => {
    const log = capturingLogger();
    const { url } = await local.start({ logger: log.logger });
    const db = local.db;
    await eventually(async () => expect((await fetch(`${url}readyz`)).status).toBe(200));

    // The same file (inode), other bytes: SQLite answers from its cache until it reads the file.
    await writeFile(db, 'not a database any more');

    const readyz = await fetch(`${url}readyz`);
    expect(readyz.status).toBe(503);
    expect(await readyz.text()).toContain(`${db} was overwritten while open`);
    await eventually(() => {
      const errors = log.lines
        .map((l) => JSON.parse(l) as { level: number; msg: string })
        .filter((l) => l.level >= 50);
      expect(errors.map((e) => e.msg)).toContainEqual(expect.stringContaining('was overwritten while open'));
    });
    expect((await fetch(`${url}healthz`)).status).toBe(200);
  });
});
