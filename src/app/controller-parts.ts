import type { IncomingMessage, ServerResponse } from 'node:http';
import { KubeConfig } from '@kubernetes/client-node';
import type { BrokerConfig } from '../config/broker.js';
import type { WebChatSettings } from '../config/webchat.js';
import { LiveRegistry } from '../core/registry.js';
import { TriggerDirectory } from '../core/triggers.js';
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
import { Controller, type ControllerSettings } from '../k8s/index.js';
import { createStore, migrateWhenReachable } from '../store/open.js';
import { StoreReadiness, sqliteFileOf } from '../store/readiness.js';
import type { Broker, BrokerCore } from './broker.js';
import { eventsListener, listen } from './controller-http.js';
import { ControllerWebChat } from './controller-webchat.js';
import type { StartStep, Startup } from './startup.js';

/**
 * The parts of `agentkourier controller` in the order they start (./startup.ts runs them): the
 * broker with Slack, the session store, the control plane, the engine with Slack's listener,
 * then the events port and the web chat's. Each names what the start waits for while it starts.
 */

/** How long a Slack event being stored may take to finish once the events port closes. */
const EVENTS_CLOSE_GRACE_MS = 3_000;

export interface ControllerPartsOptions {
  broker: Broker;
  startup: Startup;
  settings: ControllerSettings;
  config: BrokerConfig;
  webchat: WebChatSettings | undefined;
  options: {
    /** The environment (the identity layer reads its settings from it). */
    env: Readonly<Record<string, string | undefined>>;
    /** SIGTERM during the start: the waits end, and the start is abandoned. */
    signal?: AbortSignal | undefined;
    /** Tests pass their own; in a pod it is loaded from the service account. */
    kubeConfig?: KubeConfig | undefined;
    webchatPageScript?: (() => Promise<string>) | undefined;
  };
  metricsPort: number;
}

/** The ports the controller serves. */
export interface ControllerPorts {
  /** Slack's events (POST /slack/events) and the trigger webhooks (POST /triggers/…). */
  httpPort: number;
  /** /healthz, /readyz, /metrics. */
  metricsPort: number;
  /** The web chat's port, when AGENTKOURIER_WEBCHAT_PORT turned it on. */
  webchatPort?: number;
  /** The web chat's URL (never with the token in it), when it is on. */
  webchatUrl?: string;
}

export class ControllerParts {
  /** The ports served, once the last part started. */
  ports: ControllerPorts;
  readonly #o: ControllerPartsOptions;
  readonly #registry = new LiveRegistry();
  readonly #triggers = new TriggerDirectory();
  readonly #stores: ReturnType<typeof createStore>;
  readonly #web: ControllerWebChat | undefined;
  #signer: AssertionSigner | undefined;
  #signIn: SignIn | undefined;
  #core: BrokerCore | undefined;
  #controller: Controller | undefined;

  constructor(options: ControllerPartsOptions) {
    this.#o = options;
    this.ports = { httpPort: 0, metricsPort: options.metricsPort };
    // Migrated once Slack answered, so /readyz can say the store is what it waits for.
    this.#stores = createStore(options.config.store);
    this.#web =
      options.webchat === undefined
        ? undefined
        : new ControllerWebChat(
            options.webchat,
            this.#stores.transcripts,
            this.#registry,
            options.broker.logger,
          );
  }

  steps(): StartStep[] {
    const { broker, options } = this.#o;
    const slack = broker.slackConfig;
    return [
      {
        waitingFor: slack === undefined ? 'the engine to be built' : "Slack's Web API (auth.test)",
        start: () => this.#compose(),
      },
      { waitingFor: 'the session store to be reachable', start: () => this.#openStore() },
      {
        waitingFor: 'the control plane to start',
        start: () => untilAborted(options.signal, broker.stop, () => this.#needed(this.#controller).start()),
      },
      {
        waitingFor:
          slack?.connection.kind === 'socket'
            ? "Slack's Socket Mode connection (apps.connections.open)"
            : 'the engine and the events port to start',
        // SIGTERM while Socket Mode could not connect: a clean stop, as during auth.test.
        start: () => broker.serve(this.#needed(this.#core), { signOut: this.#needed(this.#signIn).signOut }),
      },
      { waitingFor: 'the events port to start', start: () => this.#openPorts() },
    ];
  }

  /** The broker's core (Slack connected, the engine built) and the control plane beside it. */
  async #compose(): Promise<void> {
    const { broker, startup, options, config, settings } = this.#o;
    const core = await broker.compose({
      stores: this.#stores,
      ...this.#web?.composeOptions(),
      registry: this.#registry,
      triggerDirectory: this.#triggers,
      owner: config.replicaName ?? settings.podName,
      draining: () => startup.draining,
      slackWait: {
        ...(options.signal === undefined ? {} : { signal: options.signal }),
        onUnreachable: (error) => startup.missed(error.code),
      },
    });
    this.#core = core;
    // The keys per-person Bindings sign with; their public half is served on the events port.
    const identity = await identitySigner(loadIdentitySettings(options.env), {
      issuer: `http://127.0.0.1:${config.httpPort}`,
    });
    if (identity.ephemeral)
      broker.logger.warn(
        'AGENTKOURIER_IDENTITY_KEYS is not set: per-person identities sign with a key made at this start (one replica only; docs/identity.md)',
      );
    this.#signer = identity.signer;
    const identitySettings = loadIdentitySettings(options.env);
    const sealing = signInSealing(identitySettings);
    if (sealing.ephemeral)
      broker.logger.warn(
        'AGENTKOURIER_IDENTITY_SEALING_KEYS is not set: people signed in at an identity provider stay so until this replica restarts (one replica only; docs/identity.md)',
      );
    this.#signIn = new SignIn({
      links: () => core.identityLinks,
      keyring: sealing.keyring,
      // People's browsers reach the events port, where the sign-in routes are.
      publicUrl: () => identitySettings.publicUrl ?? identity.signer.issuer,
      onLinked: (sessionId) => core.engine.kick(sessionId),
    });
    const web = this.#web?.surface;
    if (web !== undefined) core.retention.alongside((before) => web.threads.forgetIdle(before));
    if (core.slack === undefined)
      broker.logger.warn('neither SLACK_BOT_TOKEN nor SLACK_CLIENT_ID is set: running without Slack');
    const controller = controlPlane(
      broker,
      core,
      this.#registry,
      this.#triggers,
      settings,
      options.kubeConfig,
      identity.signer,
      this.#signIn,
    );
    this.#controller = controller;
    startup.check(() => (controller.ready ? undefined : 'AgentBackends and Bindings not listed yet'));
  }

  /** The store migrated (waited for while unreachable; SIGTERM ends the wait), and watched. */
  async #openStore(): Promise<void> {
    const { broker, startup, options, config } = this.#o;
    const { store } = this.#needed(this.#core);
    await migrateWhenReachable(store, {
      logger: broker.logger,
      ...(options.signal === undefined ? {} : { signal: options.signal }),
    });
    // From here on readiness also asks whether the store takes writes; pushed after the store's
    // own stop, so it stops first and no probe reaches a closed store.
    const storeHealth = new StoreReadiness(store, broker.logger, sqliteFileOf(config.store));
    broker.defer(async () => storeHealth.close());
    startup.check(() => storeHealth.problem());
    // The web chat's threads come back before the engine resumes their sessions.
    await this.#web?.restore();
  }

  /** Slack's events and the trigger webhooks on the HTTP port; the web chat on its own, when on. */
  async #openPorts(): Promise<void> {
    const { broker, startup, options, config, metricsPort } = this.#o;
    const core = this.#needed(this.#core);
    const events = await listen(
      eventsListener({
        slack: () => core.slack?.requestListener,
        triggers: core.triggers.routes,
        wellKnown: identityRoutes(this.#needed(this.#signer), this.#needed(this.#signIn)),
        draining: () => startup.draining,
      }),
      config.httpPort,
    );
    broker.defer(() => events.close(EVENTS_CLOSE_GRACE_MS));
    const chat = await this.#web?.listen(
      core,
      this.#registry,
      broker.observability,
      options.webchatPageScript,
    );
    if (chat !== undefined) broker.defer(() => chat.close());
    this.ports = {
      httpPort: events.port,
      metricsPort,
      ...(chat === undefined ? {} : { webchatPort: Number(new URL(chat.url).port), webchatUrl: chat.url }),
    };
  }

  /** A part an earlier step made (the manager runs them in order). */
  #needed<T>(part: T | undefined): T {
    if (part === undefined) throw new Error('a start step ran before the step it needs');
    return part;
  }
}

/**
 * The control plane: AgentBackends and Bindings into the registry, under a Lease. Every
 * approval decision, from any surface, is audited as an Event on its Binding too.
 */
function controlPlane(
  broker: Broker,
  core: BrokerCore,
  registry: LiveRegistry,
  triggers: TriggerDirectory,
  settings: ControllerSettings,
  given: KubeConfig | undefined,
  signer: AssertionSigner,
  signIn: SignIn,
): Controller {
  const kubeConfig = given ?? new KubeConfig();
  if (given === undefined) kubeConfig.loadFromDefault();
  const controller = new Controller({
    kubeConfig,
    registry,
    logger: broker.logger,
    identity: settings.podName,
    leaseNamespace: settings.namespace,
    leaseName: settings.leaseName,
    watchNamespaces: settings.watchNamespaces,
    secretAccess: settings.secretAccess,
    telemetry: broker.observability.controlPlane,
    triggers,
    triggerActivity: core.triggerStore,
    assertions: (ref, identity) =>
      personSource(
        signer,
        ref,
        identity,
        (result) => broker.observability.metrics.identityExchanged(ref, result),
        signIn,
      ),
    ...(settings.namespaceChannels === undefined ? {} : { namespaceChannels: settings.namespaceChannels }),
  });
  broker.observability.approvals.onDecision((audit) => {
    void controller.recordBindingEvent(audit.binding, {
      type: 'Normal',
      reason: audit.decision === 'approved' ? 'ToolCallApproved' : 'ToolCallDenied',
      note: `${audit.approver.name ?? audit.approver.id} ${audit.decision} ${audit.tool.name} (arguments sha256 ${audit.argumentsSha256.slice(0, 16)}…)`,
    });
  });
  broker.defer(() => controller.stop());
  return controller;
}

/**
 * Runs `start`, stopping everything when SIGTERM comes meanwhile (the informers may wait on an
 * API server that does not answer: the stop ends them).
 */
async function untilAborted(
  signal: AbortSignal | undefined,
  stop: () => Promise<void>,
  start: () => Promise<void>,
): Promise<void> {
  const abandon = (): void => void stop();
  signal?.addEventListener('abort', abandon, { once: true });
  try {
    await start();
  } finally {
    signal?.removeEventListener('abort', abandon);
  }
}

/** The identity layer's routes on the events port: the JWKS and discovery, and the sign-in pages. */
function identityRoutes(
  signer: AssertionSigner,
  signIn: SignIn,
): (req: IncomingMessage, res: ServerResponse) => boolean {
  const wellKnown = wellKnownRoutes(signer);
  const pages = signInRoutes(signIn);
  return (req, res) => wellKnown(req, res) || pages(req, res);
}
