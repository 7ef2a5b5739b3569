import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPostgres, type TestPostgres } from '../../testkit/postgres.js';
import { killRun } from '../crash/kill-run.js';
import { faultSeeds } from './seeds.js';

/**
 * Fault matrix: the broker killed with SIGKILL at random points, seeded, on SQLite (one
 * replica) and on PostgreSQL with two replicas, either of which is killed and comes back. What
 * must hold: no lost turn, no turn run twice on 1.0, no answer shown twice, no message sent into
 * a context while another ran, nothing for the thread to be told. `npm run test:soak`
 * runs the same scenario hundreds of times and prints the figures.
 */

const SEEDS = faultSeeds();

describe('SIGKILL at random points', () => {
  let pg: TestPostgres;
  beforeAll(async () => {
    pg = await startPostgres();
  });
  afterAll(async () => pg?.stop());

  for (const [store, version, polling] of [
    ['sqlite', '1.0', false],
    ['postgres', '1.0', false],
    ['postgres', '0.3', false],
    // P-9: an agent that does not stream, polled; killed mid-send and mid-poll.
    ['sqlite', '1.0', true],
    ['postgres', '0.3', true],
  ] as const) {
    it.each(SEEDS)(
      `${polling ? '[P-9][R-8]' : '[R-7][R-8][S-2]'} ${store === 'sqlite' ? 'SQLite, one replica' : 'PostgreSQL, two replicas'}, A2A ${version}${polling ? ', polled' : ''}: nothing lost, nothing twice (seed %i)`,
      async (seed) => {
        const figures = await killRun({ seed, store, version, postgresUrl: pg.connectionString, polling });
        expect(figures.lost).toEqual([]);
        expect(figures.duplicated).toEqual([]);
        expect(figures.overlaps).toBe(0);
        expect(figures.notices).toBe(0);
      },
      90_000,
    );
  }
});
