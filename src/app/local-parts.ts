import { dirname, join } from 'node:path';
import type { Logger } from 'pino';
import type { BrokerConfig } from '../config/broker.js';
import { LiveRegistry } from '../core/registry.js';
import { TriggerDirectory } from '../core/triggers.js';
import { type DemoAgent, startDemoAgent } from '../demo/demo-agent.js';
import {
  type AssertionSigner,
  identitySigner,
  loadIdentitySettings,
  personSource,
  SignIn,
  signInRoutes,
  signInSealing,
  wellKnownRoutes,
} from '../identity/index.js';
import { type LocalBindingStatus, type LocalManifestsHandle, startLocalManifests } from '../local/index.js';
import { opsRoutes } from '../observability/index.js';
import { openStore } from '../store/open.js';
import { StoreReadiness, sqliteFileOf } from '../store/readiness.js';
import { createWebChat, WebChatSurface, WebChatTriggerThreads } from '../surfaces/webchat/index.js';
import { localBanner } from './banner.js';
import type { Broker, BrokerCore, Env } from './broker.js';
import type { StartStep, Startup } from './startup.js';

/**
 * The parts of `agentkourier local` in the order they start (./startup.ts runs them): the demo
 * agent, the Bindings file, the store with the web chat's threads and the broker's core, the
 * web chat's port (with /healthz, /readyz, /metrics and the trigger webhooks), the engine, and
 * the first check of every Binding's agent.
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

export class LocalParts {
  /** The web chat's URL, once it listens. */
  chatUrl = '';
  /** The demo agent's base URL, when it runs. */
  demoUrl: string | undefined;
  /** Teams' messaging endpoint, when Teams' settings are in the environment. */
  get teamsUrl(): string | undefined {
    return this.#core?.teams?.url;
  }
  readonly #broker: Broker;
  readonly #startup: Startup;
  readonly #config: BrokerConfig;
  readonly #options: LocalOptions;
  readonly #registry = new LiveRegistry();
  readonly #triggers = new TriggerDirectory();
  #manifests: LocalManifestsHandle | undefined;
  #core: BrokerCore | undefined;

  constructor(broker: Broker, startup: Startup, config: BrokerConfig, options: LocalOptions) {
    this.#broker = broker;
    this.#startup = startup;
    this.#config = config;
    this.#options = options;
  }

  steps(): StartStep[] {
    const steps: StartStep[] = [];
    if (this.#options.demo) steps.push({ waitingFor: 'the demo agent to start', start: () => this.#demo() });
    steps.push(
      { waitingFor: 'the identity keys to be read', start: () => this.#identity() },
      { waitingFor: 'the Bindings file to be read', start: () => this.#readManifests() },
      { waitingFor: 'the store to open', start: () => this.#compose() },
      { waitingFor: 'the web chat to listen', start: () => this.#listen() },
      {
        waitingFor: 'the engine to start',
        start: () =>
          this.#broker.serve(this.#needed(this.#core), {
            slackPort: this.#config.httpPort,
            signOut: this.#needed(this.#signIn).signOut,
          }),
      },
      {
        waitingFor: "the Bindings' agents to be checked",
        start: () => this.#needed(this.#manifests).idle(),
      },
    );
    return steps;
  }

  /** What the terminal shows once started: each Binding and trigger, traces, the banner. */
  summary(): string[] {
    const lines: string[] = [];
    for (const b of this.#needed(this.#manifests).bindings()) {
      lines.push(`Binding ${b.ref}: ${b.ready ? 'ready' : `not ready (${b.reason}: ${b.message})`}`);
      for (const t of b.triggers ?? []) {
        const where =
          t.path === undefined ? t.kind : `${t.kind}, POST ${this.chatUrl.replace(/\/$/, '')}${t.path}`;
        lines.push(`  trigger ${t.name} (${where})${t.ready ? '' : `: not ready (${t.message ?? ''})`}`);
      }
    }
    if (this.teamsUrl !== undefined) lines.push(`Microsoft Teams: messaging endpoint ${this.teamsUrl}`);
    const { tracing } = this.#broker.observability;
    if (tracing.enabled) lines.push(`Traces: ${tracing.describe}`);
    // The token is never printed: whoever set it knows it, and the URL takes it after a #.
    lines.push(
      ...localBanner({
        chatUrl: this.chatUrl,
        tokenRequired: this.#options.token !== undefined,
        ...(this.demoUrl === undefined ? {} : { demoAgentUrl: this.demoUrl }),
      }),
    );
    return lines;
  }

  async #demo(): Promise<void> {
    const { logger } = this.#broker;
    const demo = await startDemo(this.#options.demoPort ?? DEMO_AGENT_PORT, logger);
    this.#broker.defer(() => demo.close());
    logger.info({ url: demo.url }, 'demo agent listening');
    this.demoUrl = demo.url;
  }

  /**
   * The keys per-person Bindings sign with: local mode keeps its own under .agentkourier/ (or
   * AGENTKOURIER_IDENTITY_KEYS), and serves their public half beside the web chat.
   */
  async #identity(): Promise<void> {
    // Beside the SQLite file (by default .agentkourier/), so each local store keeps its own keys.
    const store = this.#config.store;
    const keyFile = join(
      store.kind === 'sqlite' && store.path !== ':memory:' ? dirname(store.path) : '.agentkourier',
      'identity-keys.json',
    );
    const settings = loadIdentitySettings(this.#options.env);
    const { signer } = await identitySigner(settings, {
      issuer: () => this.chatUrl,
      keyFile,
    });
    this.#signer = signer;
    // People sign in through the web chat's port: the link and the provider's redirect land there.
    this.#signIn = new SignIn({
      links: () => this.#needed(this.#core).identityLinks,
      keyring: signInSealing(settings).keyring,
      publicUrl: () => settings.publicUrl ?? this.chatUrl,
      onLinked: (sessionId) => this.#core?.engine.kick(sessionId),
    });
  }

  #signer: AssertionSigner | undefined;
  #signIn: SignIn | undefined;

  async #readManifests(): Promise<void> {
    const signer = this.#needed(this.#signer);
    const manifests = await startLocalManifests({
      file: this.#options.config,
      registry: this.#registry,
      triggers: this.#triggers,
      assertions: (ref, identity) =>
        personSource(
          signer,
          ref,
          identity,
          (result) => this.#broker.observability.metrics.identityExchanged(ref, result),
          this.#signIn,
        ),
      logger: this.#broker.logger,
      telemetry: this.#broker.observability.controlPlane,
      ...(this.demoUrl === undefined ? {} : { demoAgentUrl: this.demoUrl }),
    });
    this.#broker.defer(() => manifests.close());
    this.#manifests = manifests;
    this.#startup.check(() => bindingsProblem(manifests.bindings()));
  }

  /**
   * The store, the web chat's threads read back before the engine resumes their sessions (so
   * what it shows next lands in them), and the broker's core.
   */
  async #compose(): Promise<void> {
    const { logger } = this.#broker;
    const stores = await openStore(this.#config.store, { logger });
    const web = new WebChatSurface({ transcripts: stores.transcripts, logger });
    let restored: number;
    try {
      restored = await web.restore();
    } catch (error) {
      await stores.sessions.close();
      throw error;
    }
    if (restored > 0) logger.info({ threads: restored }, 'web chat threads restored');
    this.#web = web;
    this.#core = await this.#broker.compose({
      stores,
      beforeStoreCloses: () => web.close(),
      registry: this.#registry,
      triggerDirectory: this.#triggers,
      surfaces: { webchat: web },
      webchatTriggers: new WebChatTriggerThreads(web.threads),
      sinks: [web.activity],
      owner: this.#config.replicaName,
    });
    this.#core.retention.alongside((before) => web.threads.forgetIdle(before));
    // Pushed after the store's own stop, so it stops first: no probe reaches a closed store.
    const storeHealth = new StoreReadiness(stores.sessions, logger, sqliteFileOf(this.#config.store));
    this.#broker.defer(async () => storeHealth.close());
    this.#startup.check(() => storeHealth.problem());
  }

  #web: WebChatSurface | undefined;

  /** The web chat, serving /healthz, /readyz and /metrics and the trigger webhooks beside it. */
  async #listen(): Promise<void> {
    const { engine, triggers } = this.#needed(this.#core);
    const manifests = this.#needed(this.#manifests);
    const { observability, logger } = this.#broker;
    const options = this.#options;
    const wellKnown = wellKnownRoutes(this.#needed(this.#signer));
    const signIn = signInRoutes(this.#needed(this.#signIn));
    const chat = await createWebChat({
      engine,
      surface: this.#needed(this.#web),
      registry: this.#registry,
      readiness: (ref) => manifests.bindings().find((b) => b.ref === ref),
      audit: observability.approvals,
      routes: (req, res) => wellKnown(req, res) || signIn(req, res) || triggers.routes(req, res),
      operations: opsRoutes({ registry: observability.registry, ready: () => this.#startup.readiness() }),
      host: options.host,
      port: options.port,
      ...(options.pageScript === undefined ? {} : { pageScript: options.pageScript }),
      ...(options.token === undefined ? {} : { token: options.token }),
      logger,
    });
    this.#broker.defer(() => chat.close());
    this.chatUrl = chat.url;
  }

  /** A part an earlier step made (the manager runs them in order). */
  #needed<T>(part: T | undefined): T {
    if (part === undefined) throw new Error('a start step ran before the step it needs');
    return part;
  }
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
