import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import { SpanKind, SpanStatusCode, type Tracer, trace } from '@opentelemetry/api';
import type { Logger } from 'pino';
import { z } from 'zod';
import { CardChecker, type CardTimings, DEFAULT_CARD_TIMINGS } from '../control/card-check.js';
import { CardCheckPool, DEFAULT_CARD_POOL } from '../control/card-pool.js';
import type { NamespaceChannels } from '../control/channels.js';
import { namespaceName } from '../control/crds/common.js';
import { type AssertionsFor, clientFactory, LiveClients } from '../control/live-clients.js';
import { KeyedQueue } from '../control/queue.js';
import type { Transition } from '../control/status.js';
import type { ControlPlaneObserver, ControlPlaneTelemetry } from '../control/telemetry.js';
import { InvalidConfigError, KourierError } from '../core/errors.js';
import type { LiveRegistry } from '../core/registry.js';
import type { TriggerActivity } from '../core/trigger-store.js';
import type { TriggerDirectory } from '../core/triggers.js';
import { DEFAULT_LEASE_NAME, MAX_WATCH_NAMESPACES } from './config.js';
import { EventRecorder } from './events.js';
import { InformerSet } from './informer-set.js';
import { keyOf, parseKey } from './keys.js';
import { KubeApi, type ResourcePlural } from './kube-api.js';
import { checkLeaderTimings, DEFAULT_LEADER_TIMINGS, LeaderElector, type LeaderTimings } from './leader.js';
import { KubeLeaseStore } from './lease-store.js';
import { Reconciler } from './reconciler.js';
import { forbiddenSecretsMessage, type SecretAccessGrant } from './secret-access.js';
import { SecretWatch } from './secret-watch.js';

/**
 * `agentkourier controller`'s control plane: informers on AgentBackends, Bindings and the
 * Secrets they name, a per-key work queue, and the reconciles that keep this replica's live
 * clients in the LiveRegistry. Every replica does that (any may serve a thread); the one holding
 * the Lease also reads agent cards and writes status and events.
 *
 *   const controller = new Controller({ kubeConfig, registry, logger, identity: podName, leaseNamespace });
 *   await controller.start();   // resolves once AgentBackends and Bindings are listed
 *   …
 *   await controller.stop();    // on SIGTERM: stops work, releases the Lease
 */

export interface ControllerTimings extends LeaderTimings {
  /** Every object is reconciled again this often, whatever the watches said. */
  resyncMs: number;
  card: CardTimings;
  /** Backoff of a failed reconcile (an API error writing status, say). */
  retryBaseMs: number;
  retryMaxMs: number;
  /** Backoff of a failed watch before it is started again. */
  watchRestartBaseMs: number;
  watchRestartMaxMs: number;
  /** How often the leader reads the triggers' last deliveries from the store, for status. */
  triggerActivityPollMs: number;
}

export const DEFAULT_CONTROLLER_TIMINGS: ControllerTimings = {
  ...DEFAULT_LEADER_TIMINGS,
  resyncMs: 10 * 60_000,
  card: DEFAULT_CARD_TIMINGS,
  retryBaseMs: 500,
  retryMaxMs: 60_000,
  watchRestartBaseMs: 1000,
  watchRestartMaxMs: 30_000,
  triggerActivityPollMs: 15_000,
};

export interface ControllerOptions {
  kubeConfig: KubeConfig;
  registry: LiveRegistry;
  logger: Logger;
  /** This replica's identity in the Lease: the pod name. */
  identity: string;
  leaseNamespace: string;
  leaseName?: string;
  /** Namespace → Slack channel ids it may claim; unset: any namespace may claim any channel. */
  namespaceChannels?: NamespaceChannels;
  /**
   * Watch AgentBackends and Bindings (and so the Secrets they name) only in these namespaces,
   * one list+watch each; empty or unset: every namespace, one cluster-wide list+watch.
   */
  watchNamespaces?: readonly string[];
  timings?: Partial<Omit<ControllerTimings, 'card'>> & { card?: Partial<CardTimings> };
  /** Reconciles running at once (different keys). */
  concurrency?: number;
  /** Metrics and spans of reconciles, leadership and card reads; the clients' telemetry. */
  telemetry?: ControlPlaneTelemetry;
  /** Signs per-person Bindings' assertions (src/identity/). */
  assertions?: AssertionsFor;
  /**
   * Who the controller is and which ClusterRole reads Secrets, so a Secret it may not read gets a
   * status saying what to grant (./secret-access.ts); unknown parts are left out of the message.
   */
  secretAccess?: SecretAccessGrant;
  /** Every Binding's triggers are put here, on every replica (deliveries land on any of them). */
  triggers?: TriggerDirectory;
  /**
   * Where the triggers' last deliveries are recorded (the store, written by whichever replica
   * took them): the leader reads it every triggerActivityPollMs and writes what changed to status.
   */
  triggerActivity?: { triggerActivity(): Promise<TriggerActivity[]> };
}

const optionsSchema = z.object({
  identity: z.string().min(1).max(253),
  leaseNamespace: z.string().min(1).max(63),
  leaseName: z.string().min(1).max(253).optional(),
  concurrency: z.number().int().min(1).max(64).optional(),
  watchNamespaces: z.array(namespaceName).max(MAX_WATCH_NAMESPACES).optional(),
});

const backendRefOf = z.object({ spec: z.object({ backendRef: z.object({ name: z.string() }) }) });

/** start() twice, or after stop(): a wiring mistake. */
export class ControllerStateError extends KourierError {
  constructor(message: string) {
    super('controller_state', message);
  }
}

export class Controller {
  readonly #o: ControllerOptions;
  readonly #timings: ControllerTimings;
  readonly #log: Logger;
  readonly #api: KubeApi;
  readonly #queue: KeyedQueue;
  readonly #secrets: SecretWatch;
  readonly #backends: InformerSet<KubernetesObject>;
  readonly #bindings: InformerSet<KubernetesObject>;
  readonly #leader: LeaderElector;
  readonly #reconciler: Reconciler;
  readonly #events: EventRecorder;
  readonly #observer: ControlPlaneObserver | undefined;
  readonly #tracer: Tracer;
  readonly #cardPool: CardCheckPool;
  #resync: NodeJS.Timeout | undefined;
  #activityTimer: NodeJS.Timeout | undefined;
  /** Per Binding ref: its triggers' last deliveries, as last read (and its JSON, to see changes). */
  #activity = new Map<string, { view: Map<string, { at: number; result: string }>; json: string }>();
  #state: 'new' | 'starting' | 'running' | 'stopped' = 'new';

  constructor(options: ControllerOptions) {
    const checked = optionsSchema.safeParse(options);
    if (!checked.success) {
      const issue = checked.error.issues[0];
      throw new InvalidConfigError(
        `Controller option ${issue?.path.join('.') ?? ''} ${issue?.message ?? 'is invalid'}`,
      );
    }
    this.#o = options;
    const t = options.timings ?? {};
    this.#timings = {
      ...DEFAULT_CONTROLLER_TIMINGS,
      ...stripUndefined(t),
      card: { ...DEFAULT_CARD_TIMINGS, ...stripUndefined(t.card ?? {}) },
    };
    checkLeaderTimings(this.#timings);
    this.#log = options.logger.child({ component: 'controller' });
    this.#observer = options.telemetry?.observer;
    this.#tracer = options.telemetry?.tracer ?? trace.getTracer('agentkourier.controller');
    this.#observer?.leading(false);
    this.#api = new KubeApi(options.kubeConfig);
    this.#queue = new KeyedQueue((key, signal) => this.#reconcile(key, signal), {
      concurrency: options.concurrency ?? 4,
      retryBaseMs: this.#timings.retryBaseMs,
      retryMaxMs: this.#timings.retryMaxMs,
      onError: (key, error, delayMs) =>
        this.#log.warn({ key, err: error, retryInMs: delayMs }, 'reconcile failed; will retry'),
    });
    const restart = {
      restartBaseMs: this.#timings.watchRestartBaseMs,
      restartMaxMs: this.#timings.watchRestartMaxMs,
    };
    this.#secrets = new SecretWatch({
      kubeConfig: options.kubeConfig,
      api: this.#api,
      logger: this.#log,
      onChange: (namespace, name) => {
        for (const key of this.#reconciler.readersOf(namespace, name)) this.#queue.add(key);
      },
      forbidden: (namespace) =>
        forbiddenSecretsMessage(
          namespace,
          options.secretAccess ?? { serviceAccount: undefined, secretReaderRole: undefined },
        ),
      ...restart,
    });
    this.#backends = this.#informer('agentbackends', 'AgentBackend', restart);
    this.#bindings = this.#informer('bindings', 'Binding', restart);
    this.#leader = new LeaderElector({
      store: new KubeLeaseStore(this.#api, options.leaseNamespace, options.leaseName ?? DEFAULT_LEASE_NAME),
      identity: options.identity,
      timings: this.#timings,
      logger: this.#log,
      onStartedLeading: () => {
        this.#observer?.leading(true);
        this.#reconciler.resetLeaderState();
        this.#enqueueAll();
        void this.#readActivity();
      },
      onStoppedLeading: () => this.#observer?.leading(false),
    });
    this.#events = new EventRecorder(this.#api, options.identity, this.#log);
    const cards = new CardChecker(this.#timings.card, Date.now, (ref, outcome) =>
      this.#observer?.cardRead(ref, outcome.ok ? 'ok' : outcome.reason),
    );
    this.#cardPool = new CardCheckPool(cards, {
      ...DEFAULT_CARD_POOL,
      onChecked: (ref, result) => {
        const [namespace = '', name = ''] = ref.split('/');
        const key = keyOf('Binding', namespace, name);
        this.#queue.add(key);
        this.#queue.addAfter(key, result.nextInMs);
      },
    });
    this.#reconciler = new Reconciler({
      api: this.#api,
      backends: this.#backends,
      bindings: this.#bindings,
      secrets: this.#secrets,
      clients: new LiveClients(
        options.registry,
        clientFactory(options.telemetry?.client),
        options.assertions,
      ),
      cards,
      cardPool: this.#cardPool,
      registry: options.registry,
      events: this.#events,
      isLeader: () => this.#leader.isLeader,
      enqueue: (key) => this.#queue.add(key),
      enqueueAfter: (key, ms) => this.#queue.addAfter(key, ms),
      namespaceChannels: options.namespaceChannels,
      logger: this.#log,
      now: () => new Date(),
      ...(options.triggers === undefined ? {} : { triggers: options.triggers }),
      ...(options.triggerActivity === undefined
        ? {}
        : { triggerActivity: (ref: string) => this.#activity.get(ref)?.view }),
    });
  }

  /**
   * An Event on a Binding for something that happened in chat, such as an approval decision
   * audited). Any replica records these: the one that took the decision knows it.
   */
  async recordBindingEvent(ref: string, event: Transition): Promise<void> {
    const [namespace, name] = ref.split('/');
    if (namespace === undefined || name === undefined) return;
    await this.#events.record({ kind: 'Binding', namespace, name }, event);
  }

  /** Whether this replica holds the Lease (and so writes status). */
  get isLeader(): boolean {
    return this.#leader.isLeader;
  }

  /** Whether AgentBackends and Bindings have been listed: for /readyz. */
  get ready(): boolean {
    return this.#state === 'running' && this.#backends.synced && this.#bindings.synced;
  }

  /**
   * Starts watching and campaigning. Resolves once AgentBackends and Bindings have been listed;
   * while the API server cannot be reached it keeps trying (and logging) until stop().
   */
  async start(): Promise<void> {
    if (this.#state !== 'new') throw new ControllerStateError('a Controller starts once');
    this.#state = 'starting';
    await Promise.all([this.#backends.start(), this.#bindings.start()]);
    while (!(this.#backends.synced && this.#bindings.synced)) {
      if (this.#state !== 'starting') return;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    if (this.#state !== 'starting') return;
    this.#state = 'running';
    this.#enqueueAll();
    this.#leader.start();
    this.#resync = setInterval(() => this.#enqueueAll(), this.#timings.resyncMs);
    this.#resync.unref();
    if (this.#o.triggerActivity !== undefined) {
      this.#activityTimer = setInterval(() => void this.#readActivity(), this.#timings.triggerActivityPollMs);
      this.#activityTimer.unref();
    }
    const namespaces = this.#o.watchNamespaces ?? [];
    this.#log.info(
      { identity: this.#o.identity, watching: namespaces.length === 0 ? 'all namespaces' : namespaces },
      'controller started',
    );
  }

  /**
   * Graceful stop (SIGTERM): no new reconciles or card reads (a card read in flight ends on its
   * own bound, unheard), running reconciles finish, the Lease is released so another replica leads at once, then the watches close. Live
   * clients stay in the registry: sessions finishing their turns keep them.
   */
  async stop(): Promise<void> {
    if (this.#state === 'stopped') return;
    this.#state = 'stopped';
    clearInterval(this.#resync);
    this.#cardPool.stop();
    clearInterval(this.#activityTimer);
    await this.#queue.stop();
    await this.#leader.stop({ release: true });
    await Promise.all([this.#backends.stop(), this.#bindings.stop(), this.#secrets.stop()]);
    this.#log.info({ identity: this.#o.identity }, 'controller stopped');
  }

  /**
   * The leader's read of the triggers' last deliveries: a Binding whose entries changed is
   * reconciled (and its status written). Status thus lags a delivery by up to one poll interval.
   */
  async #readActivity(): Promise<void> {
    if (!this.#leader.isLeader || this.#o.triggerActivity === undefined) return;
    let rows: TriggerActivity[];
    try {
      rows = await this.#o.triggerActivity.triggerActivity();
    } catch (error) {
      this.#log.warn(
        { err: error instanceof KourierError ? error.code : 'error' },
        'could not read trigger activity',
      );
      return;
    }
    const next = new Map<string, Map<string, { at: number; result: string }>>();
    for (const row of rows) {
      const view = next.get(row.binding) ?? new Map<string, { at: number; result: string }>();
      view.set(row.trigger, { at: row.at, result: row.result });
      next.set(row.binding, view);
    }
    for (const [ref, view] of next) {
      const json = JSON.stringify([...view.entries()].sort(([a], [b]) => (a < b ? -1 : 1)));
      if (this.#activity.get(ref)?.json === json) continue;
      this.#activity.set(ref, { view, json });
      const [namespace = '', name = ''] = ref.split('/');
      this.#queue.add(keyOf('Binding', namespace, name));
    }
  }

  #informer(
    plural: ResourcePlural,
    kind: 'AgentBackend' | 'Binding',
    restart: { restartBaseMs: number; restartMaxMs: number },
  ): InformerSet<KubernetesObject> {
    const onChange = (obj: KubernetesObject, deleted: boolean): void => {
      const namespace = obj.metadata?.namespace ?? '';
      const name = obj.metadata?.name ?? '';
      const key = keyOf(kind, namespace, name);
      this.#queue.add(key);
      if (kind === 'AgentBackend') {
        for (const b of this.#reconciler.bindingsOf(namespace, name)) this.#queue.add(b);
      } else {
        const ref = backendRefOf.safeParse(obj);
        this.#reconciler.noteBinding(
          key,
          deleted || !ref.success ? undefined : ref.data.spec.backendRef.name,
          namespace,
        );
      }
    };
    return new InformerSet<KubernetesObject>({
      kubeConfig: this.#o.kubeConfig,
      namespaces: this.#o.watchNamespaces ?? [],
      path: (namespace) => KubeApi.resourcePath(plural, namespace),
      list: (namespace) => this.#api.listResources(plural, namespace),
      handlers: { upsert: (obj) => onChange(obj, false), delete: (obj) => onChange(obj, true) },
      logger: this.#log,
      what: plural,
      ...restart,
    });
  }

  #enqueueAll(): void {
    for (const [informer, kind] of [
      [this.#backends, 'AgentBackend'],
      [this.#bindings, 'Binding'],
    ] as const) {
      for (const obj of informer.list()) {
        this.#queue.add(keyOf(kind, obj.metadata?.namespace ?? '', obj.metadata?.name ?? ''));
      }
    }
  }

  /** One reconcile, as a span and a count (an error is rethrown: the queue retries it). */
  async #reconcile(key: string, signal: AbortSignal): Promise<void> {
    const parsed = parseKey(key);
    if (parsed === undefined) return;
    const span = this.#tracer.startSpan(`reconcile ${parsed.kind}`, {
      kind: SpanKind.INTERNAL,
      root: true,
      attributes: {
        'k8s.namespace.name': parsed.namespace,
        'agentkourier.resource.kind': parsed.kind,
        'agentkourier.resource.name': parsed.name,
      },
    });
    const started = performance.now();
    let result: 'ok' | 'error' = 'ok';
    try {
      if (parsed.kind === 'Binding')
        await this.#reconciler.reconcileBinding(parsed.namespace, parsed.name, signal);
      else await this.#reconciler.reconcileAgentBackend(parsed.namespace, parsed.name);
    } catch (error) {
      result = 'error';
      span.setAttribute('error.type', error instanceof KourierError ? error.code : 'error');
      span.setStatus({ code: SpanStatusCode.ERROR });
      throw error;
    } finally {
      span.end();
      this.#observer?.reconciled(parsed.kind, result, (performance.now() - started) / 1000);
    }
  }
}

function stripUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
