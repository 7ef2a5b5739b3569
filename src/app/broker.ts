import type { Logger } from 'pino';
import type { BrokerConfig } from '../config/broker.js';
import { loadSlackConfig, type SlackConfig, slackRequested } from '../config/slack.js';
import { loadTeamsConfig, type TeamsConfig, teamsRequested } from '../config/teams.js';
import { systemClock } from '../core/clock.js';
import type { FeedbackRows } from '../core/feedback-store.js';
import type { IdentityLinkStore } from '../core/identity-link-store.js';
import type { ChatSurface, EventSink, SignOut } from '../core/ports.js';
import type { LiveRegistry } from '../core/registry.js';
import type { RetentionStore } from '../core/retention-store.js';
import { RetentionSweeper } from '../core/retention-sweeper.js';
import { WORKSPACE_REMOVED_REASON } from '../core/session/cancelling.js';
import { SessionEngine } from '../core/session/engine.js';
import type { SessionStore } from '../core/store.js';
import type { TriggerStore } from '../core/trigger-store.js';
import type { TriggerChat, TriggerDirectory } from '../core/triggers.js';
import { createLogger, Observability } from '../observability/index.js';
import type { StoreBundle } from '../store/open.js';
import { SurfaceRouter, TriggerChatRouter } from '../surfaces/router.js';
import { type ConnectOptions, SlackConnection } from '../surfaces/slack/index.js';
import { TeamsConnection } from '../surfaces/teams/index.js';
import { Triggers } from '../triggers/index.js';
import { gateInstalledWorkspaces } from './slack-workspaces.js';

/**
 * The broker's start-up, the part both modes share (`agentkourier controller`: ./controller.ts;
 * `agentkourier local`: ./local.ts): the logger, observability, the measured session and trigger
 * stores, Slack when its settings are in the environment, the engine and its event sinks, the
 * triggers, and the stop stack that undoes it all in reverse. Each mode adds its own part
 * between these steps: the controller its control plane, ports and wait for the store; local
 * mode its manifests, demo agent and web chat.
 *
 *   const broker = openBroker({ env, config, logger });          // logger, observability
 *   try {
 *     …the mode's own start: a control plane, a store…
 *     const core = await broker.compose({ stores, registry, triggerDirectory });
 *     …the mode's own ports…
 *     await broker.serve(core);                               // Slack listens, engine and triggers run
 *   } catch (error) {
 *     await broker.stop();
 *     throw error;
 *   }
 */

export type Env = Readonly<Record<string, string | undefined>>;

export interface BrokerOpenOptions {
  env: Env;
  config: BrokerConfig;
  /** Tests pass their own; otherwise one is made from LOG_LEVEL and LOG_FORMAT. */
  logger?: Logger;
  /** Runs once, first, when stop() is called (the controller marks itself draining). */
  onStop?: () => void;
  /**
   * Per-method Slack budgets overriding Slack's tiers. Only the bench sets them (it lifts them,
   * to measure the broker's own cost at a thousand threads rather than Slack's allowances).
   */
  slackBudgets?: ConnectOptions['budgets'];
}

export interface ComposeOptions {
  /** The mode's stores, created (the controller migrates them later) or already migrated (local). */
  stores: StoreBundle;
  registry: LiveRegistry;
  triggerDirectory: TriggerDirectory;
  /** The mode's chat surfaces besides Slack, by surface name (local mode: the web chat). */
  surfaces?: Record<string, ChatSurface>;
  /** Where triggers start threads when Slack does not take them (local mode: the web chat). */
  webchatTriggers?: TriggerChat;
  /** The mode's own listeners of the engine's events (local mode: the web chat's activity). */
  sinks?: EventSink[];
  /** This replica's name in session and work leases; default: the engine's own. */
  owner?: string | undefined;
  /** While true, trigger deliveries are answered 503 (the controller while it drains). */
  draining?: () => boolean;
  /**
   * How the wait for an unreachable Slack at start is seen and ended (the controller: its
   * readiness names the wait, SIGTERM ends it).
   */
  slackWait?: Pick<ConnectOptions, 'signal' | 'onUnreachable'>;
  /**
   * Runs at stop after the engine stopped, just before the store closes (local mode: the web
   * chat writes the last of what its threads show).
   */
  beforeStoreCloses?: () => Promise<void>;
}

/** What compose() built: the engine and what feeds it, for the mode to wire its ports to. */
export interface BrokerCore {
  /** The store, measured. */
  store: SessionStore;
  triggerStore: TriggerStore;
  /** Each person's latest feedback press per answer, on the same database. */
  feedbackRows: FeedbackRows;
  slack: SlackConnection | undefined;
  /** Microsoft Teams, when its settings are in the environment. */
  teams: TeamsConnection | undefined;
  engine: SessionEngine;
  triggers: Triggers;
  registry: LiveRegistry;
  /** Forgets threads idle longer than the retention setting, and measures the store. */
  retention: RetentionSweeper;
  /** Erases a person (Slack's deactivations). */
  erasure: Pick<RetentionStore, 'erasePerson'>;
  /** People's sign-in links at identity providers (src/identity/sign-in/). */
  identityLinks: IdentityLinkStore;
}

export interface ServeOptions {
  /** Slack's HTTP mode port of its own (local mode); the controller serves Slack on its events port. */
  slackPort?: number;
  /** The chat's "sign out" command: ends a person's sign-in links (src/identity/sign-in/). */
  signOut?: SignOut;
}

export interface Broker {
  readonly logger: Logger;
  /** Slack's settings, read once from the environment; undefined: no Slack. */
  readonly slackConfig: SlackConfig | undefined;
  /** Microsoft Teams' settings, read once from the environment; undefined: no Teams. */
  readonly teamsConfig: TeamsConfig | undefined;
  /** The process's metrics, traces and turn log; their close runs last of all. */
  readonly observability: Observability;
  /** Runs at stop, before everything pushed earlier (stops run in reverse order of pushing). */
  defer(stop: () => Promise<void>): void;
  compose(options: ComposeOptions): Promise<BrokerCore>;
  /** Starts what turns messages into turns: Slack's listener, the engine, the trigger worker. */
  serve(core: BrokerCore, options?: ServeOptions): Promise<void>;
  /** Runs every stop in reverse order of pushing; a failed one is logged and the rest still run. */
  stop(): Promise<void>;
}

export function openBroker(options: BrokerOpenOptions): Broker {
  const logger =
    options.logger ?? createLogger({ level: options.config.logLevel, format: options.config.logFormat });
  const stops: Array<() => Promise<void>> = [];
  // Read once, here: a bad Slack setting stops the start before anything else runs.
  const slackConfig = slackRequested(options.env) ? loadSlackConfig(options.env) : undefined;
  const teamsConfig = teamsRequested(options.env) ? loadTeamsConfig(options.env) : undefined;
  // First in, last out: spans of turns still open at stop are ended and flushed after all else.
  const observability = new Observability({ env: options.env, logger });
  stops.push(() => observability.close());
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      options.onStop?.();
      for (const s of stops.splice(0).reverse())
        await s().catch((error: unknown) => logger.error({ err: error }, 'stop failed'));
    })();
    return stopping;
  };
  // The start's wait for Slack (its signal, its report of each miss) goes on in Socket Mode's
  // listen (serve).
  let slackWait: ComposeOptions['slackWait'];

  return {
    logger,
    slackConfig,
    teamsConfig,
    observability,
    defer: (s) => {
      stops.push(s);
    },
    stop,
    compose: async (o) => {
      const obs = observability;
      const store = obs.store(o.stores.sessions);
      stops.push(() => store.close());
      if (o.beforeStoreCloses !== undefined) stops.push(o.beforeStoreCloses);
      const triggerStore = obs.triggerStore(o.stores.triggers);
      slackWait = o.slackWait;
      const slack =
        slackConfig === undefined
          ? undefined
          : await SlackConnection.connect({
              config: slackConfig,
              logger,
              bindings: o.registry,
              telemetry: obs.slack,
              approvals: { counters: obs.metrics, audit: obs.approvals },
              feedback: obs.metrics,
              ...(options.slackBudgets === undefined ? {} : { budgets: options.slackBudgets }),
              ...o.slackWait,
              // OAuth mode keeps each workspace's installation beside the sessions.
              ...(slackConfig.oauth === undefined ? {} : { installations: o.stores.installations }),
            });
      const teams =
        teamsConfig === undefined
          ? undefined
          : new TeamsConnection({
              config: teamsConfig,
              logger,
              bindings: o.registry,
              addresses: o.stores.addresses,
              audit: obs.approvals,
              counters: obs.metrics,
            });
      const gated = await gateInstalledWorkspaces(slack, o.registry, logger);
      stops.push(async () => gated.stop());
      // Each surface shows the agent working from the engine's events.
      const sinks: EventSink[] = [...(o.sinks ?? [])];
      if (slack !== undefined) sinks.push(slack.surface.activity, slack.surface.statuses);
      const engine = new SessionEngine({
        store,
        registry: gated.registry,
        surface: new SurfaceRouter({
          ...o.surfaces,
          ...(slack === undefined ? {} : { slack: slack.surface }),
          ...(teams === undefined ? {} : { teams: teams.surface }),
        }),
        events: obs.events(...sinks),
        tracer: obs.turns,
        forgotten: o.stores.retention,
        ...(o.owner === undefined ? {} : { owner: o.owner }),
      });
      gated.follow(engine, WORKSPACE_REMOVED_REASON);
      obs.metrics.countActiveSessions(() => engine.activeSessions);
      const triggers = new Triggers({
        directory: o.triggerDirectory,
        store: triggerStore,
        chat: new TriggerChatRouter({
          slack: slack?.triggers,
          teams: teams?.triggers,
          ...(o.webchatTriggers === undefined ? {} : { webchat: o.webchatTriggers }),
        }),
        engine,
        owner: engine.owner,
        logger,
        observer: obs.metrics,
        ...(o.draining === undefined ? {} : { draining: o.draining }),
      });
      const retention = new RetentionSweeper(
        o.stores.retention,
        { days: options.config.retentionDays },
        systemClock,
        {
          ...obs.metrics.retention,
          failed: (error) => {
            obs.metrics.retention.failed(error);
            // Only the error's class: a database error's words may hold its connection string.
            const err = error instanceof Error ? error.name : typeof error;
            logger.warn({ err }, 'the retention sweep failed; the next one tries again');
          },
        },
      );
      return {
        retention,
        erasure: o.stores.retention,
        store,
        triggerStore,
        feedbackRows: o.stores.feedback,
        identityLinks: o.stores.identityLinks,
        slack,
        teams,
        engine,
        triggers,
        registry: o.registry,
      };
    },
    serve: async (core, o = {}) => {
      const { slack, teams, engine, triggers } = core;
      if (teams !== undefined) {
        stops.push(() => teams.stop());
        await teams.listen({ inbound: engine, ...(o.signOut === undefined ? {} : { signOut: o.signOut }) });
      }
      if (slack !== undefined) {
        // Pushed first: a listen that ends early (the signal, in Socket Mode) still gets its stop.
        stops.push(() => slack.stop());
        await slack.listen({
          inbound: engine,
          feedbackRows: core.feedbackRows,
          erasure: core.erasure,
          ...(o.signOut === undefined ? {} : { signOut: o.signOut }),
          describeAgent: async (ref) => core.registry.get(ref)?.client.describe?.(),
          ...(o.slackPort === undefined ? {} : { port: o.slackPort }),
          ...slackWait,
        });
      }
      await engine.start();
      stops.push(async () => {
        // engine.stop() aborts every driver before it waits for them; Slack's waits for rate
        // budget are given up right after, or a driver with tool cards queued behind a channel's
        // limit would hold the stop for minutes, past SIGTERM's grace period.
        const drained = engine.stop();
        slack?.abandonPending();
        await drained;
      });
      triggers.start();
      stops.push(() => triggers.stop());
      core.retention.start();
      stops.push(() => core.retention.stop());
    },
  };
}
