/**
 * The broker side of the ack and freshness benches, in a process of its own so that the parent's
 * clock (the agent's tokens, the fake Slack's calls, the sender's acks) is not held up by the
 * broker's work:
 *
 *   node bench/slack-rig-child.js <endpoint> <fake Slack URL> <bot token> <signing secret>
 *     <channels, comma-separated> <turns> <tiers|lifted|{JSON}>
 *
 * It opens the broker behind Bolt (slack-rig.ts) with the broker's own budgets (`tiers`),
 * Slack's lifted (`lifted`), or the broker's own with some overridden (a JSON object of
 * MethodBudgets by method, to try a pacing policy without editing it), says `{"type":"ready","url":…}`, waits until `<turns>` turns have
 * settled (each answer's final text shown: `finish` resolves before a turn settles), says
 * `{"type":"done",…}` with the turns it accepted and how often, and stops.
 */
import type { MethodBudget } from '../src/surfaces/slack/web-api/budget.js';
import { say, tempDb } from './engine-rig.js';
import { LIFTED_BUDGETS, startSlackBroker } from './slack-rig.js';

const [endpoint = '', fakeUrl = '', botToken = '', signingSecret = '', channels = '', turns = '0', budgets] =
  process.argv.slice(2);
const overrides = (): Record<string, MethodBudget> | undefined => {
  if (budgets === 'lifted') return { ...LIFTED_BUDGETS };
  return undefined;
};
const chosen = overrides();
const db = tempDb();
try {
  const broker = await startSlackBroker({
    endpoint,
    fakeUrl,
    botToken,
    signingSecret,
    channels: channels.split(','),
    dbPath: db.path,
    ...(chosen === undefined ? {} : { budgets: chosen }),
  });
  say({ type: 'ready', url: broker.url });
  await broker.turns.until(Number(turns));
  const counts = [...broker.turns.accepted.values()];
  say({
    type: 'done',
    accepted: counts.length,
    acceptedTwice: counts.filter((c) => c > 1).length,
    outcomes: Object.fromEntries(broker.turns.outcomes),
  });
  // What is still pending (indicators, statuses) is abandoned: the bench has what it measures.
  await broker.stop();
  db.remove();
  process.exit(0);
} catch (error) {
  process.stderr.write(
    `slack-rig-child: ${error instanceof Error ? (error.stack ?? error.message) : error}\n`,
  );
  db.remove();
  process.exit(1);
}
