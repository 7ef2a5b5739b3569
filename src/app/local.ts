import { createServer } from 'node:net';
import type { Logger } from 'pino';
import { loadBrokerConfig } from '../config/broker.js';
import { KourierError } from '../core/errors.js';
import { LiveRegistry } from '../core/registry.js';
import { TriggerDirectory } from '../core/triggers.js';
import { type DemoAgent, startDemoAgent } from '../demo/demo-agent.js';
import { type LocalBindingStatus, startLocalManifests } from '../local/index.js';
import { opsRoutes } from '../observability/index.js';
import { openStore } from '../store/open.js';
import { StoreReadiness, sqliteFileOf } from '../store/readiness.js';
import { createWebChat, WebChatSurface, WebChatTriggerThreads } from '../surfaces/webchat/index.js';
import { localBanner } from './banner.js';
import { type Env, openBroker } from './broker.js';

/**
 * `agentkourier local` (what `npm start` runs): the broker on one laptop. The start-up both modes
 * share is ./broker.ts; this file adds local mode's part: Bindings from a YAML file (the CRD
 * shapes, reloaded on edit), the demo agent unless told not to, and the web chat on loopback,
 * which serves /metrics, /healthz and /readyz too (behind its token off loopback). State lives in SQLite under ./.agentkourier/
 * (the web chat's threads too: they come back after a restart),
 * and Slack joins in when its settings are in the environment. Trigger webhooks are served on the
 * web chat's port (POST /triggers/<namespace>/<binding>/<name>, with their own bearer tokens, not
 * the web chat's); their threads appear in the web chat under their Binding, or in Slack when the
 * trigger names a Slack channel and Slack runs.
 */

export interface LocalOptions {
  config: string;
  host: string;
  port: number;
  /** The web chat's bearer token; required off loopback (the web chat refuses to start otherwise). */
  token?: string;
  demo: boolean;
  /**
   * The demo agent's port (default DEMO_AGENT_PORT, so the `check` command printed at start is
   * the same every time); when it is taken, any free port, said in the log.
   */
  demoPort?: number;
  env: Env;
  /** Where the URL to open is printed. */
  out(line: string): void;
  logger?: Logger;
  /** The web chat page's script; default the one `npm run build` bundled (tests bundle the sources). */
  pageScript?: () => Promise<string>;
}

export interface RunningLocal {
  url: string;
  /** The demo agent's base URL, when it runs. */
  demoUrl?: string;
  stop(): Promise<void>;
}

/** The demo agent's port in local mode, the one `agentkourier demo-agent` listens on too. */
export const DEMO_AGENT_PORT = 8090;

/** The demo agent on its port, or on any free one when that is taken (another broker, a test). */
async function startDemo(port: number, logger: Logger): Promise<DemoAgent> {
  try {
    return await startDemoAgent({ host: '127.0.0.1', port });
  } catch (error) {
    if (port === 0 || (error as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw error;
    const demo = await startDemoAgent({ host: '127.0.0.1', port: 0 });
    logger.info(
      { taken: port, url: demo.url },
      'the demo agent’s usual port is taken; it listens on another',
    );
    return demo;
  }
}

/** The web chat's port is taken: most often a broker already running on this machine. */
export class PortInUseError extends KourierError {
  constructor(host: string, port: number) {
    super(
      'port_in_use',
      `port ${port} on ${host} is in use: is Agent Kourier already running? Stop it, or start this one with --port <another port>`,
    );
  }
}

/**
 * Fails with PortInUseError when the port cannot be listened on, before anything else starts:
 * a second broker must not open the first one's database only to fail at its last step.
 */
async function checkPortFree(host: string, port: number): Promise<void> {
  if (port === 0) return;
  await new Promise<void>((resolve, reject) => {
    const probe = createServer();
    probe.once('error', (error: NodeJS.ErrnoException) =>
      reject(error.code === 'EADDRINUSE' ? new PortInUseError(host, port) : error),
    );
    probe.listen(port, host, () => probe.close(() => resolve()));
  });
}

/**
 * Local mode is ready when every Binding is: on a laptop, one whose agent cannot be reached is
 * the broker not doing what was asked of it. Undefined when all are ready.
 */
function bindingsProblem(bindings: readonly LocalBindingStatus[]): string | undefined {
  const broken = bindings.filter((b) => !b.ready);
  if (broken.length === 0) return undefined;
  return broken.map((b) => `Binding ${b.ref} is not ready (${b.reason}: ${b.message})`).join('; ');
}

export async function startLocal(options: LocalOptions): Promise<RunningLocal> {
  await checkPortFree(options.host, options.port);
  const config = loadBrokerConfig(options.env, {
    store: { kind: 'sqlite', path: '.agentkourier/state.db' },
    httpPort: 8081,
    // A person at a terminal reads these lines; LOG_FORMAT=json gives the cluster's lines.
    logFormat: 'pretty',
  });
  const broker = openBroker({
    env: options.env,
    config,
    ...(options.logger === undefined ? {} : { logger: options.logger }),
  });
  const { logger, observability, stop } = broker;
  try {
    let demo: DemoAgent | undefined;
    if (options.demo) {
      demo = await startDemo(options.demoPort ?? DEMO_AGENT_PORT, logger);
      broker.defer(() => (demo as DemoAgent).close());
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
    broker.defer(() => manifests.close());

    const stores = await openStore(config.store, { logger });
    // The threads the web chat showed before a restart come back before the engine resumes
    // their sessions, so what it shows next lands in them.
    const web = new WebChatSurface({ transcripts: stores.transcripts, logger });
    let restored: number;
    try {
      restored = await web.restore();
    } catch (error) {
      await stores.sessions.close();
      throw error;
    }
    if (restored > 0) logger.info({ threads: restored }, 'web chat threads restored');
    const core = await broker.compose({
      stores,
      beforeStoreCloses: () => web.close(),
      registry,
      triggerDirectory,
      surfaces: { webchat: web },
      webchatTriggers: new WebChatTriggerThreads(web.threads),
      sinks: [web.activity],
      owner: config.replicaName,
    });
    const { engine, triggers } = core;
    // Pushed after the store's own stop, so it stops first: no probe reaches a closed store.
    const storeHealth = new StoreReadiness(stores.sessions, logger, sqliteFileOf(config.store));
    broker.defer(async () => storeHealth.close());
    let serving = false;
    const ops = opsRoutes({
      registry: observability.registry,
      ready: () =>
        serving ? (storeHealth.problem() ?? bindingsProblem(manifests.bindings()) ?? true) : 'starting',
    });
    const chat = await createWebChat({
      engine,
      surface: web,
      registry,
      readiness: (ref) => manifests.bindings().find((b) => b.ref === ref),
      audit: observability.approvals,
      routes: (req, res) => triggers.routes(req, res),
      operations: ops,
      host: options.host,
      port: options.port,
      ...(options.pageScript === undefined ? {} : { pageScript: options.pageScript }),
      ...(options.token === undefined ? {} : { token: options.token }),
      logger,
    });
    broker.defer(() => chat.close());
    await broker.serve(core, { slackPort: config.httpPort });

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
    return { url: chat.url, ...(demo === undefined ? {} : { demoUrl: demo.url }), stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
