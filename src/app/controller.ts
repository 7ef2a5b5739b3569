import { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { loadBrokerConfig } from '../config/broker.js';
import { loadSlackConfig, slackRequested } from '../config/slack.js';
import type { ChatSurface, EventSink } from '../core/ports.js';
import { LiveRegistry } from '../core/registry.js';
import { SessionEngine } from '../core/session/engine.js';
import { TriggerDirectory } from '../core/triggers.js';
import { Controller, ControllerConfigError, loadControllerSettings } from '../k8s/index.js';
import { createLogger, Observability, opsRoutes } from '../observability/index.js';
import { createStore, migrateWhenReachable, triggerStoreOf } from '../store/open.js';
import { SurfaceRouter, TriggerChatRouter } from '../surfaces/router.js';
import { SlackConnection } from '../surfaces/slack/index.js';
import { Triggers } from '../triggers/index.js';
import { eventsListener, listen, notFound } from './controller-http.js';
import { kagentAnswerer } from './structured-answers.js';

/**
 * `agentkourier controller`: one process in the cluster — the control plane (AgentBackends and
 * Bindings into live clients), the Slack surface and the engine. /healthz, /readyz and /metrics
 * on the metrics port; Slack's HTTP events on the HTTP port.
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
  LOG_LEVEL                        fatal, error, warn, info (default), debug, trace, silent
  SLACK_BOT_TOKEN                  xoxb-…; unset: no Slack
  SLACK_APP_TOKEN                  xapp-…: Socket Mode
  SLACK_SIGNING_SECRET             HTTP mode (events at POST /slack/events)
  SLACK_MODE                       socket or http, when both of the above are set
  SLACK_API_URL                    the Slack Web API base URL (default https://slack.com/api/)

The Kubernetes credentials are the pod's service account, or KUBECONFIG outside a cluster.
SIGTERM drains: no new turns, writes in flight finish, session leases and the Lease released.`;

export interface ControllerRunOptions {
  env: Readonly<Record<string, string | undefined>>;
  out(line: string): void;
  logger?: Logger;
  /** Tests pass their own; in a pod it is loaded from the service account. */
  kubeConfig?: KubeConfig;
  /**
   * SIGTERM before the start finished (the API server not reachable yet, say): the start stops
   * waiting, everything started so far is stopped, and the result's stop() resolves at once.
   */
  signal?: AbortSignal;
}

export interface RunningController {
  /** Slack's events (POST /slack/events) and the trigger webhooks (POST /triggers/…). */
  httpPort: number;
  /** /healthz, /readyz, /metrics. */
  metricsPort: number;
  /** Drains and stops; see above. Idempotent. */
  stop(): Promise<void>;
}

/** How long a Slack event being stored may take to finish once the events port closes. */
const EVENTS_CLOSE_GRACE_MS = 3_000;

export async function startController(options: ControllerRunOptions): Promise<RunningController> {
  const settings = loadControllerSettings(options.env);
  const broker = loadBrokerConfig(options.env, {
    store: { kind: 'sqlite', path: '/var/lib/agentkourier/state.db' },
    httpPort: 8080,
  });
  if (broker.httpPort === settings.metricsPort) {
    throw new ControllerConfigError(
      'AGENTKOURIER_METRICS_PORT',
      `must differ from AGENTKOURIER_HTTP_PORT (both are ${broker.httpPort})`,
    );
  }
  const logger = options.logger ?? createLogger({ level: broker.logLevel, format: broker.logFormat });
  let draining = false;
  // Pushed in start order, run in reverse: the order of the drain described above.
  const stops: Array<() => Promise<void>> = [];
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      draining = true;
      logger.info('controller draining');
      for (const s of stops.splice(0).reverse())
        await s().catch((error: unknown) => logger.error({ err: error }, 'stop failed'));
    })();
    return stopping;
  };
  try {
    const kubeConfig = options.kubeConfig ?? new KubeConfig();
    if (options.kubeConfig === undefined) kubeConfig.loadFromDefault();
    const registry = new LiveRegistry();
    // First in, last out: spans of turns still open at stop are ended and flushed after all else.
    const observability = new Observability({ env: options.env, logger });
    stops.push(() => observability.close());
    // Migrated once the ops server is up, so /readyz can say the store is what it waits for.
    const opened = createStore(broker.store);
    const store = observability.store(opened);
    let storeReady = false;
    stops.push(() => store.close());
    const triggerStore = observability.triggerStore(triggerStoreOf(opened));
    const triggerDirectory = new TriggerDirectory();

    const slack = slackRequested(options.env)
      ? await SlackConnection.connect({
          config: loadSlackConfig(options.env),
          logger,
          telemetry: observability.slack,
          approvals: { counters: observability.metrics },
        })
      : undefined;
    if (slack === undefined) logger.warn('SLACK_BOT_TOKEN is not set: running without Slack');
    const surfaces: Record<string, ChatSurface> = slack === undefined ? {} : { slack: slack.surface };
    const sinks: EventSink[] = [];
    if (slack !== undefined) sinks.push(slack.surface.activity);
    const engine = new SessionEngine({
      store,
      registry,
      surface: new SurfaceRouter(surfaces),
      events: observability.events(...sinks),
      tracer: observability.turns,
      owner: broker.replicaName ?? settings.podName,
    });
    observability.metrics.countActiveSessions(() => engine.activeSessions);

    const controller = new Controller({
      kubeConfig,
      registry,
      logger,
      identity: settings.podName,
      leaseNamespace: settings.namespace,
      leaseName: settings.leaseName,
      watchNamespaces: settings.watchNamespaces,
      telemetry: observability.controlPlane,
      triggers: triggerDirectory,
      triggerActivity: triggerStore,
      ...(settings.namespaceChannels === undefined ? {} : { namespaceChannels: settings.namespaceChannels }),
    });

    if (slack !== undefined) {
      // every approval decision is audited as an Event on its Binding too.
      slack.approvals.onDecision((audit) => {
        void controller.recordBindingEvent(audit.binding, {
          type: 'Normal',
          reason: audit.decision === 'approved' ? 'ToolCallApproved' : 'ToolCallDenied',
          note: `${audit.approver.name ?? audit.approver.id} ${audit.decision} ${audit.tool.name} (arguments sha256 ${audit.argumentsSha256.slice(0, 16)}…)`,
        });
      });
    }
    // The metrics port first: probes get answers while the informers sync.
    const routes = opsRoutes({
      registry: observability.registry,
      ready: () => {
        if (draining) return 'shutting down';
        if (!storeReady) return 'the session store is not reachable yet';
        return controller.ready ? true : 'AgentBackends and Bindings not listed yet';
      },
    });
    const ops = await listen((req, res) => {
      if (!routes(req, res)) notFound(res);
    }, settings.metricsPort);
    stops.push(() => ops.close());

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
    storeReady = !storeAbandoned;
    stops.push(() => controller.stop());
    if (!storeAbandoned) await controller.start();
    options.signal?.removeEventListener('abort', abandon);
    if (options.signal?.aborted) {
      await stop();
      return { httpPort: 0, metricsPort: ops.port, stop };
    }
    if (slack !== undefined) {
      await slack.listen({
        engine,
        answerStructured: kagentAnswerer(engine, observability.metrics),
        store,
        bindings: registry,
      });
      stops.push(() => slack.stop());
    }
    await engine.start();
    stops.push(() => engine.stop());
    const triggers = new Triggers({
      directory: triggerDirectory,
      store: triggerStore,
      chat: new TriggerChatRouter({ slack: slack?.triggers }),
      engine,
      owner: engine.owner,
      logger,
      observer: observability.metrics,
      draining: () => draining,
    });
    triggers.start();
    stops.push(() => triggers.stop());
    const events = await listen(
      eventsListener({
        slack: () => slack?.requestListener,
        triggers: triggers.routes,
        draining: () => draining,
      }),
      broker.httpPort,
    );
    stops.push(() => events.close(EVENTS_CLOSE_GRACE_MS));
    options.out(
      `Agent Kourier controller: Slack events and trigger webhooks on port ${events.port} ` +
        '(POST /slack/events, POST /triggers/<namespace>/<binding>/<name>), ' +
        `health and metrics on port ${ops.port} (/healthz, /readyz, /metrics)`,
    );
    logger.info(
      { httpPort: events.port, metricsPort: ops.port, tracing: observability.tracing.describe },
      'controller serving',
    );
    return { httpPort: events.port, metricsPort: ops.port, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
