/**
 * The broker as production composes it behind Slack, for the benchmarks that drive it with
 * signed Events API requests (freshness, ack): src/app/broker.ts's openBroker and
 * compose (the measured store, observability, the Slack connection, the workspace gate, the
 * surface router, the running indicator and session statuses as event sinks) on a SQLite file,
 * with the Slack events served by the real Bolt HTTPReceiver on an HTTP server of its own, as
 * the controller mounts it on its events port. One Binding routes the given channels to the
 * bench agent. The parent side (the signed requests) is in signed-events.ts.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { A2AClient } from '../src/a2a/client.js';
import type { BrokerCore } from '../src/app/broker.js';
import { openBroker } from '../src/app/broker.js';
import { loadBrokerConfig } from '../src/config/broker.js';
import type { EngineEvent } from '../src/core/events.js';
import type { EventSink } from '../src/core/ports.js';
import { LiveRegistry } from '../src/core/registry.js';
import { TriggerDirectory } from '../src/core/triggers.js';
import { a2aDialect } from '../src/dialects/a2a.js';
import { createLogger } from '../src/observability/logging.js';
import { openStore } from '../src/store/open.js';
import type { MethodBudget } from '../src/surfaces/slack/web-api/budget.js';

export const SLACK_RIG_BINDING = 'bench/slack';

/**
 * Slack's tiers lifted for every method the path calls, for benchmarks that measure the broker
 * rather than Slack's allowances (Tier 2 lets one workspace start 20 streams a minute). The
 * budgets still run: every call takes its token.
 */
const UNLIMITED: MethodBudget = { scope: 'workspace', perMinute: 6_000_000, burst: 100_000 };
export const LIFTED_BUDGETS: Readonly<Record<string, MethodBudget>> = Object.fromEntries(
  [
    'chat.update',
    'chat.postMessage',
    'chat.startStream',
    'chat.appendStream',
    'chat.stopStream',
    'chat.delete',
    'reactions.add',
    'reactions.remove',
    'users.info',
    'conversations.replies',
    'agents.sessions.setStatus',
    'agents.sessions.rename',
  ].map((m) => [m, UNLIMITED]),
);

/** Counts the engine's turns, accepted and settled, and wakes a waiter when enough settled. */
export class TurnCount implements EventSink {
  settled = 0;
  /** turn.accepted, by turn id: a turn processed twice shows as a count above 1. */
  readonly accepted = new Map<string, number>();
  readonly outcomes = new Map<string, number>();
  #want = Number.POSITIVE_INFINITY;
  #resolve: (() => void) | undefined;

  emit(event: EngineEvent): void {
    if (event.type === 'turn.accepted') {
      this.accepted.set(event.turnId, (this.accepted.get(event.turnId) ?? 0) + 1);
      return;
    }
    if (event.type !== 'turn.settled') return;
    this.settled++;
    this.outcomes.set(event.outcome, (this.outcomes.get(event.outcome) ?? 0) + 1);
    if (this.settled >= this.#want) this.#resolve?.();
  }

  until(n: number): Promise<void> {
    if (this.settled >= n) return Promise.resolve();
    this.#want = n;
    return new Promise((resolve) => {
      this.#resolve = resolve;
    });
  }
}

export interface SlackBrokerOptions {
  /** The bench agent's A2A endpoint. */
  endpoint: string;
  fakeUrl: string;
  botToken: string;
  signingSecret: string;
  /** The channels the Binding routes to the agent. */
  channels: string[];
  dbPath: string;
  /** Per-method budgets overriding Slack's tiers (LIFTED_BUDGETS); none: the broker's own. */
  budgets?: Readonly<Record<string, MethodBudget>>;
}

export interface SlackBroker {
  /** Where Bolt takes the signed events: http://127.0.0.1:<port>/slack/events. */
  url: string;
  turns: TurnCount;
  core: BrokerCore;
  stop(): Promise<void>;
}

/** Opens the broker, serves Slack in HTTP mode, and returns once it takes events. */
export async function startSlackBroker(o: SlackBrokerOptions): Promise<SlackBroker> {
  const env = {
    SLACK_BOT_TOKEN: o.botToken,
    SLACK_SIGNING_SECRET: o.signingSecret,
    SLACK_API_URL: o.fakeUrl,
    LOG_LEVEL: 'info',
  };
  const config = loadBrokerConfig(env, { store: { kind: 'sqlite', path: o.dbPath }, httpPort: 0 });
  // The production logger at its default level, writing where the bench does not read.
  const logger = createLogger({
    level: config.logLevel,
    format: 'json',
    destination: pino.destination({ dest: '/dev/null', sync: true }),
  });
  const broker = openBroker({
    env,
    config,
    logger,
    ...(o.budgets === undefined ? {} : { slackBudgets: o.budgets }),
  });
  let server: Server | undefined;
  const stop = async (): Promise<void> => {
    await broker.stop();
    await new Promise<void>((resolve) => (server === undefined ? resolve() : server.close(() => resolve())));
  };
  try {
    const stores = await openStore(config.store, { logger });
    const client = new A2AClient({ endpoint: o.endpoint, identity: { kind: 'user-id', userId: 'bench' } });
    await client.card();
    const registry = new LiveRegistry();
    registry.upsert({
      ref: SLACK_RIG_BINDING,
      client,
      dialect: a2aDialect,
      settings: { questionTimeoutMs: null },
      routes: { slack: { channels: o.channels, allowDirectMessages: false } },
      toolApprovals: { enabled: false, approverGroups: [], approvers: [] },
    });
    const turns = new TurnCount();
    const core = await broker.compose({
      stores,
      registry,
      triggerDirectory: new TriggerDirectory(),
      sinks: [turns],
    });
    await broker.serve(core);
    const listener = core.slack?.requestListener;
    if (listener === undefined) throw new Error('Slack did not start in HTTP mode');
    const listening = createServer(listener);
    server = listening;
    await new Promise<void>((resolve) => listening.listen(0, '127.0.0.1', resolve));
    const { port } = listening.address() as AddressInfo;
    return { url: `http://127.0.0.1:${port}/slack/events`, turns, core, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
