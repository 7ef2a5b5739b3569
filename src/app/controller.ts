import { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { loadBrokerConfig } from '../config/broker.js';
import { loadSlackConfig, slackRequested } from '../config/slack.js';
import { loadWebChatSettings } from '../config/webchat.js';
import { LiveRegistry } from '../core/registry.js';
import { TriggerDirectory } from '../core/triggers.js';
import { Controller, ControllerConfigError, loadControllerSettings } from '../k8s/index.js';
import { opsRoutes } from '../observability/index.js';
import { createStore, migrateWhenReachable } from '../store/open.js';
import { StoreReadiness, sqliteFileOf } from '../store/readiness.js';
import { type Env, openBroker } from './broker.js';
import { eventsListener, listen, notFound } from './controller-http.js';
import { ControllerWebChat } from './controller-webchat.js';

/**
 * `agentkourier controller`: one process in the cluster — the control plane (AgentBackends and
 * Bindings into live clients) added to the broker both modes share (./broker.ts: the store,
 * Slack, the engine, triggers). /healthz, /readyz and /metrics on the metrics port; Slack's HTTP
 * events and the trigger webhooks on the HTTP port; opt-in, the web chat on a port of its own
 * (./controller-webchat.ts), on loopback for kubectl port-forward.
 *
 * Starting: the metrics port opens first, so /healthz answers at once whatever else waits. The
 * start then waits, as long as it takes and without exiting, for Slack's Web API (auth.test),
 * then the session store, then the first list of AgentBackends and Bindings; /readyz answers
 * 503 naming the wait until the events port (and the web chat's, when on) serves. A token Slack
 * refuses stops the start.
 *
 * Stopping (SIGTERM) drains in this order: /readyz says so and new Slack events are refused
 * with 503 (Slack delivers them again), the engine stops starting turns, cuts its streams, lets
 * the writes in flight finish and releases its session leases (another replica takes those
 * sessions over at once), the Slack surface closes, the controller releases its Lease, then
 * the servers and the store close.
 */

export const CONTROLLER_HELP = `Usage: agentkourier controller

Runs in a cluster: AgentBackends and Bindings into live A2A clients, Slack, the session engine.
Settings come from the environment; a bad value stops the start with a message naming it.

  AGENTKOURIER_NAMESPACE           (required) the controller's namespace: its Lease lives there
  POD_NAME                         this replica's name in the Lease, Events and session leases
                                   (default: the hostname)
  AGENTKOURIER_LEASE_NAME          the leader-election Lease (default agentkourier-controller)
  AGENTKOURIER_WATCH_NAMESPACES    comma list of namespaces to watch; unset: every namespace
  AGENTKOURIER_NAMESPACE_CHANNELS  JSON {"namespace": ["C…"]}: the Slack channels each may claim
  AGENTKOURIER_STORE               sqlite:<path> (default sqlite:/var/lib/agentkourier/state.db)
                                   or a postgres:// URL (several replicas)
  AGENTKOURIER_PG_SCHEMA           PostgreSQL schema (default agentkourier)
  AGENTKOURIER_HTTP_PORT           Slack's events, POST /slack/events, and the trigger webhooks,
                                   POST /triggers/<namespace>/<binding>/<name> (default 8080)
  AGENTKOURIER_METRICS_PORT        /healthz, /readyz, /metrics (default 9090)
  AGENTKOURIER_SERVICE_ACCOUNT     the controller's service account, and
  AGENTKOURIER_SECRET_READER_ROLE  the ClusterRole that reads Secrets: a status names both in
                                   what to grant when a Secret may not be read (the chart sets them)
  LOG_LEVEL                        fatal, error, warn, info (default), debug, trace, silent
  SLACK_BOT_TOKEN                  xoxb-…; unset: no Slack
  SLACK_APP_TOKEN                  xapp-…: Socket Mode
  SLACK_SIGNING_SECRET             HTTP mode (events at POST /slack/events)
  SLACK_MODE                       socket or http, when both of the above are set
  SLACK_API_URL                    the Slack Web API base URL (default https://slack.com/api/)
  SLACK_CLIENT_ID, SLACK_CLIENT_SECRET, SLACK_INSTALLATION_KEYS
                                   several workspaces through OAuth instead of SLACK_BOT_TOKEN
                                   (install at GET /slack/install; docs/slack.md)
  AGENTKOURIER_WEBCHAT_PORT        the web chat (docs/webchat.md), to try Bindings without Slack
                                   through kubectl port-forward; unset: off
  AGENTKOURIER_WEBCHAT_TOKEN       its bearer token, at least 16 characters (required with the
                                   port; never logged)
  AGENTKOURIER_WEBCHAT_HOST        the address it listens on (default 127.0.0.1, which is what
                                   kubectl port-forward reaches)

The Kubernetes credentials are the pod's service account, or KUBECONFIG outside a cluster.
SIGTERM drains: no new turns, writes in flight finish, session leases and the Lease released.`;

export interface ControllerRunOptions {
  env: Env;
  out(line: string): void;
  logger?: Logger;
  /** Tests pass their own; in a pod it is loaded from the service account. */
  kubeConfig?: KubeConfig;
  /**
   * SIGTERM before the start finished (the API server not reachable yet, say): the start stops
   * waiting, everything started so far is stopped, and the result's stop() resolves at once.
   */
  signal?: AbortSignal;
  /** The web chat page's script; default the one `npm run build` bundled (tests bundle the sources). */
  webchatPageScript?: () => Promise<string>;
}

export interface RunningController {
  /** Slack's events (POST /slack/events) and the trigger webhooks (POST /triggers/…). */
  httpPort: number;
  /** /healthz, /readyz, /metrics. */
  metricsPort: number;
  /** The web chat's port, when AGENTKOURIER_WEBCHAT_PORT turned it on. */
  webchatPort?: number;
  /** Drains and stops; see above. Idempotent. */
  stop(): Promise<void>;
}

/** How long a Slack event being stored may take to finish once the events port closes. */
const EVENTS_CLOSE_GRACE_MS = 3_000;

export async function startController(options: ControllerRunOptions): Promise<RunningController> {
  const settings = loadControllerSettings(options.env);
  const config = loadBrokerConfig(options.env, {
    store: { kind: 'sqlite', path: '/var/lib/agentkourier/state.db' },
    httpPort: 8080,
  });
  if (config.httpPort === settings.metricsPort) {
    throw new ControllerConfigError(
      'AGENTKOURIER_METRICS_PORT',
      `must differ from AGENTKOURIER_HTTP_PORT (both are ${config.httpPort})`,
    );
  }
  const webchatSettings = loadWebChatSettings(options.env);
  if (
    webchatSettings !== undefined &&
    [config.httpPort, settings.metricsPort].includes(webchatSettings.port)
  ) {
    throw new ControllerConfigError(
      'AGENTKOURIER_WEBCHAT_PORT',
      `must differ from AGENTKOURIER_HTTP_PORT and AGENTKOURIER_METRICS_PORT (${webchatSettings.port} is taken)`,
    );
  }
  let draining = false;
  const broker = openBroker({
    env: options.env,
    config,
    ...(options.logger === undefined ? {} : { logger: options.logger }),
    onStop: () => {
      draining = true;
      broker.logger.info('controller draining');
    },
  });
  const { logger, observability, stop } = broker;
  try {
    // The metrics port before anything that waits (Slack's auth.test, the store, the informers):
    // the kubelet's liveness probe gets its answer at once, and /readyz names what the start is
    // waiting for, so a pod started during a Slack outage stays up, not ready, instead of being
    // killed by its probe over and over.
    let waitingFor: string | undefined = 'the start';
    let controllerReady = (): boolean => false;
    // Why the store cannot be trusted now: it refuses writes, or its SQLite file was deleted,
    // replaced or overwritten (StoreReadiness; undefined: none).
    let storeProblem = (): string | undefined => undefined;
    const routes = opsRoutes({
      registry: observability.registry,
      ready: () => {
        if (draining) return 'shutting down';
        if (waitingFor !== undefined) return `waiting for ${waitingFor}`;
        const problem = storeProblem();
        if (problem !== undefined) return problem;
        return controllerReady() ? true : 'AgentBackends and Bindings not listed yet';
      },
    });
    const ops = await listen((req, res) => {
      if (!routes(req, res)) notFound(res);
    }, settings.metricsPort);
    broker.defer(() => ops.close());

    const kubeConfig = options.kubeConfig ?? new KubeConfig();
    if (options.kubeConfig === undefined) kubeConfig.loadFromDefault();
    const registry = new LiveRegistry();
    const triggerDirectory = new TriggerDirectory();
    // Which call to Slack the start is waiting on: auth.test, then in Socket Mode the connection.
    let slackStep = "Slack's Web API (auth.test)";
    const socketMode =
      slackRequested(options.env) && loadSlackConfig(options.env).connection.kind === 'socket';
    if (slackRequested(options.env)) waitingFor = slackStep;
    // Migrated once Slack answered, so /readyz can say the store is what it waits for.
    const stores = createStore(config.store);
    const web =
      webchatSettings === undefined
        ? undefined
        : new ControllerWebChat(webchatSettings, stores.transcripts, registry, logger);
    const core = await broker
      .compose({
        stores,
        ...web?.composeOptions(),
        registry,
        triggerDirectory,
        owner: config.replicaName ?? settings.podName,
        draining: () => draining,
        slackWait: {
          ...(options.signal === undefined ? {} : { signal: options.signal }),
          onUnreachable: (error) => {
            waitingFor = `${slackStep.slice(0, -1)}: ${error.code})`;
          },
        },
      })
      .catch(async (error: unknown) => {
        if (options.signal?.aborted !== true) throw error;
        return undefined;
      });
    if (core === undefined) {
      // SIGTERM while Slack could not be reached: nothing more to start.
      await stop();
      return { httpPort: 0, metricsPort: ops.port, stop };
    }
    const { slack, store } = core;
    if (slack === undefined)
      logger.warn('neither SLACK_BOT_TOKEN nor SLACK_CLIENT_ID is set: running without Slack');
    waitingFor = 'the session store to be reachable';

    const controller = new Controller({
      kubeConfig,
      registry,
      logger,
      identity: settings.podName,
      leaseNamespace: settings.namespace,
      leaseName: settings.leaseName,
      watchNamespaces: settings.watchNamespaces,
      secretAccess: settings.secretAccess,
      telemetry: observability.controlPlane,
      triggers: triggerDirectory,
      triggerActivity: core.triggerStore,
      ...(settings.namespaceChannels === undefined ? {} : { namespaceChannels: settings.namespaceChannels }),
    });
    controllerReady = () => controller.ready;

    // every approval decision, from any surface, is audited as an Event on its Binding too.
    observability.approvals.onDecision((audit) => {
      void controller.recordBindingEvent(audit.binding, {
        type: 'Normal',
        reason: audit.decision === 'approved' ? 'ToolCallApproved' : 'ToolCallDenied',
        note: `${audit.approver.name ?? audit.approver.id} ${audit.decision} ${audit.tool.name} (arguments sha256 ${audit.argumentsSha256.slice(0, 16)}…)`,
      });
    });

    const abandon = (): void => void stop();
    options.signal?.addEventListener('abort', abandon, { once: true });
    // An unreachable store is waited for (not ready meanwhile); SIGTERM ends the wait.
    const storeAbandoned = await migrateWhenReachable(store, {
      logger,
      ...(options.signal === undefined ? {} : { signal: options.signal }),
    }).then(
      () => false,
      (error: unknown) => {
        if (options.signal?.aborted === true) return true;
        throw error;
      },
    );
    if (!storeAbandoned) {
      // From here on readiness also asks whether the store takes writes; pushed after the
      // store's own stop, so it stops first and no probe reaches a closed store.
      const storeHealth = new StoreReadiness(store, logger, sqliteFileOf(config.store));
      broker.defer(async () => storeHealth.close());
      storeProblem = () => storeHealth.problem();
      // Its threads come back before the engine resumes their sessions.
      await web?.restore();
      waitingFor = 'the engine and the events port to start';
    }
    broker.defer(() => controller.stop());
    if (!storeAbandoned) await controller.start();
    options.signal?.removeEventListener('abort', abandon);
    if (options.signal?.aborted) {
      await stop();
      return { httpPort: 0, metricsPort: ops.port, stop };
    }
    if (socketMode) {
      slackStep = "Slack's Socket Mode connection (apps.connections.open)";
      waitingFor = slackStep;
    }
    const served = await broker.serve(core).then(
      () => true,
      (error: unknown) => {
        // SIGTERM while Socket Mode could not connect: a clean stop, as during auth.test.
        if (options.signal?.aborted === true) return false;
        throw error;
      },
    );
    if (!served) {
      await stop();
      return { httpPort: 0, metricsPort: ops.port, stop };
    }
    const events = await listen(
      eventsListener({
        slack: () => slack?.requestListener,
        triggers: core.triggers.routes,
        draining: () => draining,
      }),
      config.httpPort,
    );
    broker.defer(() => events.close(EVENTS_CLOSE_GRACE_MS));
    const chat = await web?.listen(core, registry, observability, options.webchatPageScript);
    if (chat !== undefined) broker.defer(() => chat.close());
    const webchatPort = chat === undefined ? undefined : Number(new URL(chat.url).port);
    waitingFor = undefined;
    options.out(
      `Agent Kourier controller: Slack events and trigger webhooks on port ${events.port} ` +
        '(POST /slack/events, POST /triggers/<namespace>/<binding>/<name>), ' +
        `health and metrics on port ${ops.port} (/healthz, /readyz, /metrics)` +
        // The token is never printed: whoever set it has it, and the page takes it after a #.
        (chat === undefined ? '' : `, the web chat at ${chat.url} (bearer token required)`),
    );
    logger.info(
      {
        httpPort: events.port,
        metricsPort: ops.port,
        ...(webchatPort === undefined ? {} : { webchatPort }),
        tracing: observability.tracing.describe,
      },
      'controller serving',
    );
    return {
      httpPort: events.port,
      metricsPort: ops.port,
      ...(webchatPort === undefined ? {} : { webchatPort }),
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
