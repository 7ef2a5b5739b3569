import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../../src/core/clock.js';
import { messageIdFor } from '../../../src/core/compose.js';
import { SessionEngine } from '../../../src/core/session/engine.js';
import type { SessionStore } from '../../../src/core/store.js';
import { SqliteStore } from '../../../src/store/sqlite/sqlite-store.js';
import { InboundRouter } from '../../../src/surfaces/slack/inbound/events.js';
import { People } from '../../../src/surfaces/slack/inbound/people.js';
import { BudgetBook } from '../../../src/surfaces/slack/web-api/budget.js';
import { createWebApiCaller, SlackApi } from '../../../src/surfaces/slack/web-api/client.js';
import { type FakeSlack, startFakeSlack } from '../../../testkit/slack/index.js';
import { MapRegistry } from '../../helpers/engine-harness.js';
import { FakeSurface } from '../../helpers/fake-surface.js';

/**
 * Defect: a Slack event was claimed as seen before its turn was stored. A broker that died in
 * between had the claim and not the message; Slack's redelivery of the event was then taken
 * for a duplicate and the message was lost. The claim now lives in the turn's own transaction.
 *
 * The crash: the broker process dies after the event reached it and before the turn was stored.
 * In-process, that is a store whose first write of a turn never happens (the seam is the store port;
 * the store underneath is a real SQLite file that outlives the "process").
 */

const silent = pino({ level: 'silent' });

/** The real store, except that the process "dies" at the first write of a turn. */
function dyingAtFirstAdd(store: SessionStore): SessionStore {
  let died = false;
  return new Proxy(store, {
    get(target, prop, receiver) {
      if ((prop === 'addTurn' || prop === 'openSessionAndAddTurn') && !died) {
        return () => {
          died = true;
          return Promise.reject(new Error('the broker was killed here'));
        };
      }
      const value = Reflect.get(target, prop, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

describe('a Slack event and its turn are stored together', () => {
  let fake: FakeSlack | undefined;
  let budgets: BudgetBook | undefined;
  let dir: string | undefined;
  afterEach(async () => {
    budgets?.close();
    await fake?.close();
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  it('[S-2][R-8] a message whose broker died between receiving and storing it is taken on redelivery, not lost', async () => {
    fake = await startFakeSlack({});
    budgets = new BudgetBook(systemClock);
    dir = await mkdtemp(join(tmpdir(), 'ak-inbound-'));
    const file = join(dir, 'state.db');
    const api = new SlackApi(
      createWebApiCaller({ token: fake.botToken, apiUrl: fake.url, logger: silent }),
      budgets,
    );
    const bindings = {
      forChannel: () => ({ ref: 'team-a/support' }),
      forDirectMessages: () => undefined,
    };
    const envelope = {
      team_id: 'T0001',
      event_id: 'Ev0CRASH',
      event: {
        type: 'app_mention',
        user: 'U0ADA',
        text: '<@UBOT> restart the api',
        ts: '1700000000.000100',
        channel: 'C1',
      },
    };

    // First delivery: the process dies before the turn is stored.
    const real = new SqliteStore(file);
    await real.migrate();
    const first = dyingAtFirstAdd(real);
    const router = (store: SessionStore) =>
      new InboundRouter({
        inbound: new SessionEngine({ store, registry: new MapRegistry(), surface: new FakeSurface() }),
        bindings,
        people: new People(api, systemClock, silent),
        api,
        clock: systemClock,
        logger: silent,
        botUserId: 'UBOT',
        teamId: 'T0001',
      });
    await router(first).handle(envelope);
    await real.close();

    // The broker restarts on the same file; Slack redelivers the event it never saw acknowledged.
    const restarted = new SqliteStore(file);
    await restarted.migrate();
    await router(restarted).handle(envelope);
    const sessionId = 'slack:T0001:C1:1700000000.000100';
    const stored = await restarted.getTurn(messageIdFor(sessionId, '1700000000.000100', 'message'));
    expect(stored?.text).toContain('restart the api');
    await restarted.close();
  });
});
