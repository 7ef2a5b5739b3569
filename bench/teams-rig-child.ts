/**
 * The broker side of the Teams freshness bench, in a process of its own (as slack-rig-child.ts
 * for Slack), composed as production composes it: src/app/broker.ts's openBroker and compose
 * with Teams' settings in its environment, on a SQLite file; one Binding routes the given Teams
 * channels, and the tenant's personal chats, to the bench agent.
 *
 *   node bench/teams-rig-child.js <agent endpoint> <authority> <tenant> <app id> <app secret>
 *     <service URL host> <channels, comma-separated> <turns>
 *
 * Says `{"type":"ready","url":…}` (the messaging endpoint), waits until `<turns>` turns settled,
 * says `{"type":"done",…}` with the turns accepted and how often, and stops.
 */
import { pino } from 'pino';
import { A2AClient } from '../src/a2a/client.js';
import { openBroker } from '../src/app/broker.js';
import { loadBrokerConfig } from '../src/config/broker.js';
import { LiveRegistry } from '../src/core/registry.js';
import { TriggerDirectory } from '../src/core/triggers.js';
import { a2aDialect } from '../src/dialects/a2a.js';
import { createLogger } from '../src/observability/logging.js';
import { openStore } from '../src/store/open.js';
import { say, tempDb } from './engine-rig.js';
import { TurnCount } from './slack-rig.js';

const [
  endpoint = '',
  authority = '',
  tenant = '',
  appId = '',
  secret = '',
  host = '',
  channels = '',
  turns = '0',
] = process.argv.slice(2);
const db = tempDb();
try {
  const env = {
    TEAMS_APP_ID: appId,
    TEAMS_APP_SECRET: secret,
    TEAMS_APP_TENANT_ID: tenant,
    TEAMS_TENANTS: tenant,
    TEAMS_AUTHORITY: authority,
    TEAMS_SERVICE_URL_HOSTS: host,
    TEAMS_HOST: '127.0.0.1',
    TEAMS_PORT: '0',
    LOG_LEVEL: 'info',
  };
  const config = loadBrokerConfig(env, { store: { kind: 'sqlite', path: db.path }, httpPort: 0 });
  const logger = createLogger({
    level: config.logLevel,
    format: 'json',
    destination: pino.destination({ dest: '/dev/null', sync: true }),
  });
  const broker = openBroker({ env, config, logger });
  const stores = await openStore(config.store, { logger });
  const client = new A2AClient({ endpoint, identity: { kind: 'user-id', userId: 'bench' } });
  await client.card();
  const registry = new LiveRegistry();
  registry.upsert({
    ref: 'bench/teams',
    client,
    dialect: a2aDialect,
    settings: { questionTimeoutMs: null },
    routes: { teams: { channels: channels.split(','), allowDirectMessages: true, workspaceId: tenant } },
    toolApprovals: { enabled: false, approverGroups: [], approvers: [] },
  });
  const count = new TurnCount();
  const core = await broker.compose({
    stores,
    registry,
    triggerDirectory: new TriggerDirectory(),
    sinks: [count],
  });
  await broker.serve(core);
  say({ type: 'ready', url: core.teams?.url });
  await count.until(Number(turns));
  const counts = [...count.accepted.values()];
  say({
    type: 'done',
    accepted: counts.length,
    acceptedTwice: counts.filter((c) => c > 1).length,
    outcomes: Object.fromEntries(count.outcomes),
  });
  await broker.stop();
  db.remove();
  process.exit(0);
} catch (error) {
  process.stderr.write(
    `teams-rig-child: ${error instanceof Error ? (error.stack ?? error.message) : error}\n`,
  );
  db.remove();
  process.exit(1);
}
