import type { Logger } from 'pino';
import { loadBrokerConfig } from '../config/broker.js';
import { loadSlackConfig, slackRequested } from '../config/slack.js';
import type { EventSink } from '../core/ports.js';
import { LiveRegistry } from '../core/registry.js';
import { SessionEngine } from '../core/session/engine.js';
import { TriggerDirectory } from '../core/triggers.js';
import { type DemoAgent, startDemoAgent } from '../demo/demo-agent.js';
import { startLocalManifests } from '../local/index.js';
import { createLogger, Observability, opsRoutes } from '../observability/index.js';
import { openStore, triggerStoreOf } from '../store/open.js';
import { SurfaceRouter, TriggerChatRouter } from '../surfaces/router.js';
import { SlackConnection } from '../surfaces/slack/index.js';
import { createWebChat, WebChatSurface, WebChatTriggerThreads } from '../surfaces/webchat/index.js';
import { Triggers } from '../triggers/index.js';
import { localBanner } from './banner.js';
import { kagentAnswerer } from './structured-answers.js';

/**
 * `agentkourier local` (what `npm start` runs): the broker on one laptop. Bindings come from a
 * YAML file (the CRD shapes, reloaded on edit), state lives in SQLite under ./.agentkourier/,
 * the web chat serves on loopback, a demo agent answers unless told not to, and Slack joins in
 * when its settings are in the environment. Trigger webhooks are served on the web chat's port
 * (POST /triggers/<namespace>/<binding>/<name>, with their own bearer tokens, not the web chat's);
 * their threads appear in the web chat under their Binding, or in Slack when the trigger names a
 * Slack channel and Slack runs.
 */

export interface LocalOptions {
  config: string;
  host: string;
  port: number;
  /** The web chat's bearer token; required off loopback (the web chat refuses to start otherwise). */
  token?: string;
  demo: boolean;
  env: Readonly<Record<string, string | undefined>>;
  /** Where the URL to open is printed. */
  out(line: string): void;
  logger?: Logger;
  /** The web chat page's script; default the one `npm run build` bundled (tests bundle the sources). */
  pageScript?: () => Promise<string>;
}

export interface RunningLocal {
  url: string;
  stop(): Promise<void>;
}

export async function startLocal(options: LocalOptions): Promise<RunningLocal> {
  const broker = loadBrokerConfig(options.env, {
    store: { kind: 'sqlite', path: '.agentkourier/state.db' },
    httpPort: 8081,
    // A person at a terminal reads these lines; LOG_FORMAT=json gives the cluster's lines.
    logFormat: 'pretty',
  });
  const logger = options.logger ?? createLogger({ level: broker.logLevel, format: broker.logFormat });
  const stops: Array<() => Promise<void>> = [];
  const stop = async (): Promise<void> => {
    for (const s of stops.splice(0).reverse())
      await s().catch((error: unknown) => logger.error({ err: error }, 'stop failed'));
  };
  try {
    // First in, last out: spans of turns still open at stop are ended and flushed after all else.
    const observability = new Observability({ env: options.env, logger });
    stops.push(() => observability.close());
    let demo: DemoAgent | undefined;
    if (options.demo) {
      demo = await startDemoAgent({ host: '127.0.0.1', port: 0 });
      stops.push(() => (demo as DemoAgent).close());
      logger.info({ url: demo.url }, 'demo agent listening');
    }
    const registry = new LiveRegistry();
    const triggerDirectory = new TriggerDirectory();
    const manifests = await startLocalManifests({
      file: options.config,
      registry,
      triggers: triggerDirectory,
      logger,
      telemetry: observability.controlPlane,
      ...(demo === undefined ? {} : { demoAgentUrl: demo.url }),
    });
    stops.push(() => manifests.close());

    const opened = await openStore(broker.store, { logger });
    const store = observability.store(opened);
    stops.push(() => store.close());
    const triggerStore = observability.triggerStore(triggerStoreOf(opened));

    const web = new WebChatSurface();
    const slack = slackRequested(options.env)
      ? await SlackConnection.connect({
          config: loadSlackConfig(options.env),
          logger,
          telemetry: observability.slack,
          approvals: { counters: observability.metrics },
        })
      : undefined;
    const sinks: EventSink[] = [];
    if (slack !== undefined) sinks.push(slack.surface.activity);
    const engine = new SessionEngine({
      store,
      registry,
      surface: new SurfaceRouter({ webchat: web, ...(slack === undefined ? {} : { slack: slack.surface }) }),
      events: observability.events(...sinks),
      tracer: observability.turns,
      ...(broker.replicaName === undefined ? {} : { owner: broker.replicaName }),
    });
    observability.metrics.countActiveSessions(() => engine.activeSessions);
    let serving = false;
    const triggers = new Triggers({
      directory: triggerDirectory,
      store: triggerStore,
      chat: new TriggerChatRouter({
        slack: slack?.triggers,
        webchat: new WebChatTriggerThreads(web.threads),
      }),
      engine,
      owner: engine.owner,
      logger,
      observer: observability.metrics,
    });
    const ops = opsRoutes({
      registry: observability.registry,
      ready: () => (serving ? true : 'starting'),
    });
    const chat = await createWebChat({
      engine,
      surface: web,
      registry,
      store,
      answerStructured: kagentAnswerer(engine, observability.metrics),
      routes: (req, res) => ops(req, res) || triggers.routes(req, res),
      host: options.host,
      port: options.port,
      ...(options.pageScript === undefined ? {} : { pageScript: options.pageScript }),
      ...(options.token === undefined ? {} : { token: options.token }),
      logger,
    });
    stops.push(() => chat.close());
    if (slack !== undefined) {
      await slack.listen({
        engine,
        answerStructured: kagentAnswerer(engine, observability.metrics),
        store,
        bindings: registry,
        port: broker.httpPort,
      });
      stops.push(() => slack.stop());
    }
    await engine.start();
    stops.push(() => engine.stop());
    triggers.start();
    stops.push(() => triggers.stop());

    await manifests.idle();
    serving = true;
    for (const b of manifests.bindings()) {
      options.out(`Binding ${b.ref}: ${b.ready ? 'ready' : `not ready (${b.reason}: ${b.message})`}`);
      for (const t of b.triggers ?? []) {
        const where =
          t.path === undefined ? t.kind : `${t.kind}, POST ${chat.url.replace(/\/$/, '')}${t.path}`;
        options.out(`  trigger ${t.name} (${where})${t.ready ? '' : `: not ready (${t.message ?? ''})`}`);
      }
    }
    if (observability.tracing.enabled) options.out(`Traces: ${observability.tracing.describe}`);
    // The token is never printed: whoever set it knows it, and the URL takes it after a #.
    for (const line of localBanner({
      chatUrl: chat.url,
      tokenRequired: options.token !== undefined,
      ...(demo === undefined ? {} : { demoAgentUrl: demo.url }),
    }))
      options.out(line);
    return { url: chat.url, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
