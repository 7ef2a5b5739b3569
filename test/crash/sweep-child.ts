import type { StoreConfig } from '../../src/config/broker.js';
import { systemClock } from '../../src/core/clock.js';
import { RetentionSweeper } from '../../src/core/retention-sweeper.js';
import { openStore } from '../../src/store/open.js';

/**
 * A broker's retention sweep alone, in a process of its own for the fault test that kills it
 * mid-sweep (test/faults/retention-restart.test.ts): the store from SWEEP_CONFIG, the sweeper
 * as the broker builds it, and one line on stdout per batch it commits ("batch <threads>"),
 * then "done <totals as JSON>" when the sweep ends.
 */

export interface SweepChildConfig {
  store: StoreConfig;
  days: number;
  batch: number;
}

const config = JSON.parse(process.env.SWEEP_CONFIG ?? '{}') as SweepChildConfig;
const stores = await openStore(config.store, { retryMaxMs: 1_000, signal: AbortSignal.timeout(30_000) });
const sweeper = new RetentionSweeper(
  stores.retention,
  { days: config.days, batch: config.batch },
  systemClock,
  {
    swept: (kind, rows) => {
      if (kind === 'threads') process.stdout.write(`batch ${rows}\n`);
    },
    measured: () => undefined,
    failed: (error) => {
      throw error;
    },
  },
);
const totals = await sweeper.sweep();
process.stdout.write(`done ${JSON.stringify(totals)}\n`);
await stores.sessions.close();
