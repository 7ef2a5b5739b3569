import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { loadBrokerConfig } from '../config/broker.js';
import { loadSlackConfig, slackRequested } from '../config/slack.js';
import type { ChatSurface, EventSink } from '../core/ports.js';
import { LiveRegistry } from '../core/registry.js';
import { SessionEngine } from '../core/session/engine.js';
import { Controller, loadControllerSettings } from '../k8s/index.js';
import { createLogger } from '../observability/logging.js';
import { fanOut, Metrics } from '../observability/metrics.js';
import { opsRoutes } from '../observability/ops-routes.js';
import { createStore, migrateWhenReachable } from '../store/open.js';
import { SurfaceRouter } from '../surfaces/router.js';
import { SlackConnection } from '../surfaces/slack/index.js';

/**
 * `agentkourier controller`: one process in the cluster — the control plane (AgentBackends and
 * Bindings into live clients), the Slack surface and the engine, with /healthz, /readyz,
 * /metrics and Slack's HTTP events on one port.
 */

export interface ControllerRunOptions {
  env: Readonly<Record<string, string | undefined>>;
  out(line: string): void;
  logger?: Logger;
  /** Tests pass their own; in a pod it is loaded from the service account. */
  kubeConfig?: KubeConfig;
}

export interface RunningController {
  port: number;
  stop(): Promise<void>;
}

export async function startController(options: ControllerRunOptions): Promise<RunningController> {
  const settings = loadControllerSettings(options.env);
  const broker = loadBrokerConfig(options.env, {
    store: { kind: 'sqlite', path: '/var/lib/agentkourier/state.db' },
    httpPort: 8080,
  });
  const logger = options.logger ?? createLogger({ level: broker.logLevel });
  const stops: Array<() => Promise<void>> = [];
  const stop = async (): Promise<void> => {
    for (const s of stops.splice(0).reverse())
      await s().catch((error: unknown) => logger.error({ err: error }, 'stop failed'));
  };
  try {
    const kubeConfig = options.kubeConfig ?? new KubeConfig();
    if (options.kubeConfig === undefined) kubeConfig.loadFromDefault();
    const registry = new LiveRegistry();
    // Connected once the ops server is up, so /readyz can say the store is what it waits for.
    const store = createStore(broker.store);
    let storeReady = false;
    stops.push(() => store.close());
    const metrics = new Metrics();
    stops.push(async () => metrics.close());

    const slack = slackRequested(options.env)
      ? await SlackConnection.connect({ config: loadSlackConfig(options.env), logger })
      : undefined;
    if (slack === undefined) logger.warn('SLACK_BOT_TOKEN is not set: running without Slack');
    const surfaces: Record<string, ChatSurface> = slack === undefined ? {} : { slack: slack.surface };
    const sinks: EventSink[] = [metrics];
    if (slack !== undefined) sinks.push(slack.surface.activity);
    const engine = new SessionEngine({
      store,
      registry,
      surface: new SurfaceRouter(surfaces),
      events: fanOut(...sinks),
      owner: broker.replicaName ?? settings.podName,
    });

    const controller = new Controller({
      kubeConfig,
      registry,
      logger,
      identity: settings.podName,
      leaseNamespace: settings.namespace,
      leaseName: settings.leaseName,
      ...(settings.namespaceChannels === undefined ? {} : { namespaceChannels: settings.namespaceChannels }),
    });

    if (slack !== undefined) {
      metrics.addSource(() => slack.approvals.metrics.render());
      // every approval decision is audited as an Event on its Binding too.
      slack.approvals.onDecision((audit) => {
        void controller.recordBindingEvent(audit.binding, {
          type: 'Normal',
          reason: audit.decision === 'approved' ? 'ToolCallApproved' : 'ToolCallDenied',
          note: `${audit.approver.name ?? audit.approver.id} ${audit.decision} ${audit.tool.name} (arguments sha256 ${audit.argumentsSha256.slice(0, 16)}…)`,
        });
      });
    }
    const routes = opsRoutes({
      metrics,
      ready: () =>
        !storeReady
          ? 'the session store is not reachable yet'
          : controller.ready
            ? true
            : 'AgentBackends and Bindings not listed yet',
    });
    const server: Server = createServer((req, res) => {
      if (routes(req, res)) return;
      const slackListener = slack?.requestListener;
      if (
        slackListener !== undefined &&
        req.method === 'POST' &&
        (req.url ?? '').split('?')[0] === '/slack/events'
      ) {
        slackListener(req, res);
        return;
      }
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' });
      res.end('not found\n');
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(broker.httpPort, resolve);
    });
    stops.push(
      () =>
        new Promise<void>((resolve) => {
          server.closeAllConnections();
          server.close(() => resolve());
        }),
    );

    await migrateWhenReachable(store, { logger });
    storeReady = true;
    await controller.start();
    stops.push(() => controller.stop());
    if (slack !== undefined) {
      await slack.listen({ engine, store, bindings: registry });
      stops.push(() => slack.stop());
    }
    await engine.start();
    stops.push(() => engine.stop());
    const port = (server.address() as AddressInfo).port;
    options.out(`Agent Kourier controller: serving on port ${port} (/healthz, /readyz, /metrics)`);
    return { port, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
