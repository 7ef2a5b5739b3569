import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { BrokerConfig } from '../config/broker.js';
import { loadBrokerConfig } from '../config/broker.js';
import { loadWebChatSettings, type WebChatSettings } from '../config/webchat.js';
import { ControllerConfigError, type ControllerSettings, loadControllerSettings } from '../k8s/index.js';
import { type Observability, opsRoutes } from '../observability/index.js';
import { type Env, openBroker } from './broker.js';
import { listen, notFound } from './controller-http.js';
import { ControllerParts, type ControllerPorts } from './controller-parts.js';
import { Startup } from './startup.js';

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
  AGENTKOURIER_RETENTION_DAYS      a thread idle this many days is forgotten (default 90;
                                   0 keeps every thread; docs/data.md)
  AGENTKOURIER_IDENTITY_ISSUER     per-person identity: the assertions' issuer URL, where agents
                                   read /.well-known/jwks.json (served on the HTTP port)
  AGENTKOURIER_IDENTITY_KEYS       its key file (agentkourier identity-key); unset: a key made
                                   at each start (one replica only; docs/identity.md)
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

export interface RunningController extends ControllerPorts {
  /** Drains and stops; see above. Idempotent. */
  stop(): Promise<void>;
}

export async function startController(options: ControllerRunOptions): Promise<RunningController> {
  const { settings, config, webchat } = controllerSettings(options.env);
  const startup = new Startup(options.signal);
  const broker = openBroker({
    env: options.env,
    config,
    ...(options.logger === undefined ? {} : { logger: options.logger }),
    onStop: () => {
      startup.drain();
      broker.logger.info('controller draining');
    },
  });
  const { logger, observability, stop } = broker;
  try {
    // The metrics port before anything that waits (Slack's auth.test, the store, the informers):
    // the kubelet's liveness probe gets its answer at once, and /readyz names what the start is
    // waiting for, so a pod started during a Slack outage stays up, not ready, instead of being
    // killed by its probe over and over.
    const routes = opsRoutes({ registry: observability.registry, ready: () => startup.readiness() });
    const ops = await listen((req, res) => {
      if (!routes(req, res)) notFound(res);
    }, settings.metricsPort);
    broker.defer(() => ops.close());
    const parts = new ControllerParts({
      broker,
      startup,
      settings,
      config,
      webchat,
      options,
      metricsPort: ops.port,
    });
    if ((await startup.run(parts.steps())) === 'abandoned') {
      await stop();
      return { httpPort: 0, metricsPort: ops.port, stop };
    }
    announce(options.out, logger, observability, parts.ports);
    return { ...parts.ports, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** The controller's settings, the broker's and the web chat's, with their ports apart. */
function controllerSettings(env: Env): {
  settings: ControllerSettings;
  config: BrokerConfig;
  webchat: WebChatSettings | undefined;
} {
  const settings = loadControllerSettings(env);
  const config = loadBrokerConfig(env, {
    store: { kind: 'sqlite', path: '/var/lib/agentkourier/state.db' },
    httpPort: 8080,
  });
  if (config.httpPort === settings.metricsPort) {
    throw new ControllerConfigError(
      'AGENTKOURIER_METRICS_PORT',
      `must differ from AGENTKOURIER_HTTP_PORT (both are ${config.httpPort})`,
    );
  }
  const webchat = loadWebChatSettings(env);
  if (webchat !== undefined && [config.httpPort, settings.metricsPort].includes(webchat.port)) {
    throw new ControllerConfigError(
      'AGENTKOURIER_WEBCHAT_PORT',
      `must differ from AGENTKOURIER_HTTP_PORT and AGENTKOURIER_METRICS_PORT (${webchat.port} is taken)`,
    );
  }
  return { settings, config, webchat };
}

/** What the controller serves, said once on stdout and in the log. */
function announce(
  out: (line: string) => void,
  logger: Logger,
  observability: Observability,
  ports: ControllerPorts,
): void {
  out(
    `Agent Kourier controller: Slack events and trigger webhooks on port ${ports.httpPort} ` +
      '(POST /slack/events, POST /triggers/<namespace>/<binding>/<name>), ' +
      `health and metrics on port ${ports.metricsPort} (/healthz, /readyz, /metrics)` +
      // The token is never printed: whoever set it has it, and the page takes it after a #.
      (ports.webchatUrl === undefined ? '' : `, the web chat at ${ports.webchatUrl} (bearer token required)`),
  );
  logger.info(
    {
      httpPort: ports.httpPort,
      metricsPort: ports.metricsPort,
      ...(ports.webchatPort === undefined ? {} : { webchatPort: ports.webchatPort }),
      tracing: observability.tracing.describe,
    },
    'controller serving',
  );
}
