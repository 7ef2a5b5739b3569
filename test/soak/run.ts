/**
 * `npm run test:soak`: the fault matrix's SIGKILL scenario (test/crash/kill-run.ts), seeded,
 * hundreds of times per store, and the figures: runs, kills, turns, lost, duplicated. Not part
 * of CI (it takes a while); the matrix runs the same scenario with a few seeds.
 *
 *   SOAK_RUNS=200 (per store)  SOAK_STORES=sqlite,postgres  SOAK_VERSION=1.0  SOAK_SEED=1
 *
 * SOAK_POWER=1 runs the power-cut scenario instead (test/crash/power-run.ts, SQLite on the
 * power-cut file system; needs /dev/fuse): ./power.ts.
 *
 * Exits 1 when any turn was lost or duplicated, listing the seeds to replay with FAULT_SEEDS.
 */

import { startPostgres } from '../../testkit/postgres.js';
import { type KillFigures, type KillStore, killRun } from '../crash/kill-run.js';
import { powerSoak } from './power.js';

if (process.env.SOAK_POWER === '1') {
  process.exitCode = (await powerSoak()) ? 0 : 1;
  process.exit();
}

const runs = Number(process.env.SOAK_RUNS ?? 200);
const stores = (process.env.SOAK_STORES ?? 'sqlite,postgres').split(',') as KillStore[];
const version = process.env.SOAK_VERSION === '0.3' ? '0.3' : '1.0';
const firstSeed = Number(process.env.SOAK_SEED ?? 1);

const pg = stores.includes('postgres') ? await startPostgres() : undefined;
let failed = false;
try {
  for (const store of stores) {
    const total = { runs: 0, kills: 0, turns: 0, lost: 0, duplicated: 0, overlaps: 0, notices: 0 };
    const bad: KillFigures[] = [];
    const started = Date.now();
    for (let i = 0; i < runs; i++) {
      const seed = firstSeed + i;
      const f = await killRun({
        seed,
        store,
        version,
        ...(pg === undefined ? {} : { postgresUrl: pg.connectionString }),
      });
      total.runs++;
      total.kills += f.kills;
      total.turns += f.turns;
      total.lost += f.lost.length;
      total.duplicated += f.duplicated.length;
      total.overlaps += f.overlaps;
      total.notices += f.notices;
      if (f.lost.length + f.duplicated.length + f.overlaps > 0) bad.push(f);
      if ((i + 1) % 20 === 0 || i + 1 === runs) {
        const secs = Math.round((Date.now() - started) / 1000);
        console.log(
          `${store}: ${i + 1}/${runs} runs, ${total.kills} kills, ${total.turns} turns, ${total.lost} lost, ${total.duplicated} duplicated (${secs} s)`,
        );
      }
    }
    const replicas = store === 'sqlite' ? 'SQLite, one replica' : 'PostgreSQL, two replicas';
    console.log(
      `\n${replicas}, A2A ${version}: runs ${total.runs}, kills ${total.kills}, turns ${total.turns}, lost ${total.lost}, duplicated ${total.duplicated}` +
        ` (overlaps ${total.overlaps}, notices ${total.notices})`,
    );
    if (bad.length > 0) {
      failed = true;
      console.log(`  seeds with a lost or duplicated turn: ${bad.map((b) => b.seed).join(',')}`);
    }
  }
} finally {
  await pg?.stop();
}
process.exitCode = failed ? 1 : 0;
