import type { Logger } from 'pino';
import { CardChecker, type CardTimings, DEFAULT_CARD_TIMINGS } from '../control/card-check.js';
import { CardCheckPool, DEFAULT_CARD_POOL } from '../control/card-pool.js';
import { type ClaimConflict, conflictsByBinding } from '../control/channels.js';
import type { Binding, BindingStatus } from '../control/crds/binding.js';
import {
  type AssertionsFor,
  type ClientFactory,
  clientFactory,
  type LiveClient,
  LiveClients,
} from '../control/live-clients.js';
import { KeyedQueue } from '../control/queue.js';
import { type BindingPlan, bindingRef, bindingStatus, planBinding } from '../control/reconcile/binding.js';
import { Reasons, readyTransition } from '../control/status.js';
import type { ControlPlaneObserver, ControlPlaneTelemetry } from '../control/telemetry.js';
import type { LiveRegistry } from '../core/registry.js';
import type { TriggerDirectory } from '../core/triggers.js';
import { backendFor, type LocalManifests, secretLookup } from './manifests.js';
import { type LocalBindingStatus, localStatus } from './status.js';

/**
 * Local mode's reconcile: the building blocks both control planes share (../control/) with a
 * file in place of the API server. Each Binding goes planBinding → LiveClients → LiveRegistry
 * like in ../k8s/reconciler.ts (so a changed URL or credential reconfigures the same client, and a
 * Binding that cannot be served leaves the registry), its card is read by the CardChecker
 * (failed reads retried with backoff, accepted cards re-read now and then), and its status is
 * the controller's bindingStatus(), kept in memory instead of written.
 */

export interface LocalBindingsOptions {
  registry: LiveRegistry;
  logger: Logger;
  cardTimings?: Partial<CardTimings>;
  /** Tests may count or wrap clients. */
  clientFactory?: ClientFactory;
  telemetry?: ControlPlaneTelemetry;
  now?: () => Date;
  /** Each Binding's triggers go here (the trigger routes and the scheduler read it). */
  triggers?: TriggerDirectory;
  /** Signs per-person Bindings' assertions (src/identity/). */
  assertions?: AssertionsFor;
}

interface Entry {
  binding: Binding;
  plan: BindingPlan;
  live: LiveClient | undefined;
  status: BindingStatus | undefined;
}

export class LocalBindings {
  readonly #log: Logger;
  readonly #registry: LiveRegistry;
  readonly #clients: LiveClients;
  readonly #cards: CardChecker;
  readonly #queue: KeyedQueue;
  readonly #pool: CardCheckPool;
  readonly #now: () => Date;
  readonly #entries = new Map<string, Entry>();
  readonly #observer: ControlPlaneObserver | undefined;
  readonly #triggers: TriggerDirectory | undefined;
  #conflicts = new Map<string, ClaimConflict[]>();

  constructor(options: LocalBindingsOptions) {
    this.#log = options.logger;
    this.#registry = options.registry;
    this.#observer = options.telemetry?.observer;
    this.#triggers = options.triggers;
    // One process reads every card and keeps every status: it leads, always.
    this.#observer?.leading(true);
    this.#clients = new LiveClients(
      options.registry,
      options.clientFactory ?? clientFactory(options.telemetry?.client),
      options.assertions,
    );
    this.#cards = new CardChecker(
      { ...DEFAULT_CARD_TIMINGS, ...options.cardTimings },
      Date.now,
      (ref, outcome) => this.#observer?.cardRead(ref, outcome.ok ? 'ok' : outcome.reason),
    );
    this.#now = options.now ?? (() => new Date());
    // The reads themselves go through the controller's pool: a few per namespace, namespaces
    // taking turns, so one tenant's slow agent delays no other tenant's Binding. A Binding
    // changed mid-read is read again after.
    this.#pool = new CardCheckPool(this.#cards, {
      ...DEFAULT_CARD_POOL,
      onChecked: (ref, result) => {
        const entry = this.#entries.get(ref);
        if (entry === undefined) return;
        this.#refresh(ref, entry);
        this.#queue.addAfter(ref, result.nextInMs);
      },
    });
    // When each Binding's card is due again; asking the pool returns at once.
    this.#queue = new KeyedQueue(async (ref) => this.#checkCard(ref), {
      concurrency: 4,
      retryBaseMs: 1000,
      retryMaxMs: 60_000,
      onError: (ref, error, delayMs) =>
        this.#log.warn({ binding: ref, err: error, retryInMs: delayMs }, 'card check failed; will retry'),
    });
  }

  /** Makes the registry hold exactly the Bindings of `manifests`; their cards are read after. */
  apply(manifests: LocalManifests): void {
    const present = new Set<string>();
    for (const binding of manifests.bindings) {
      const started = performance.now();
      const ref = bindingRef(binding);
      present.add(ref);
      const plan = planBinding({
        binding,
        backend: backendFor(manifests, binding),
        secrets: secretLookup(manifests, binding.metadata.namespace),
        // No operator setting restricts channels on one's own machine.
        allowedChannels: undefined,
      });
      const live = plan.live === undefined ? undefined : this.#clients.apply(plan.live);
      if (live === undefined) {
        this.#clients.remove(ref);
        this.#cards.forget(ref);
      }
      this.#entries.set(ref, { binding, plan, live, status: this.#entries.get(ref)?.status });
      this.#triggers?.set(ref, plan.triggers.configs);
      this.#observer?.reconciled('Binding', 'ok', (performance.now() - started) / 1000);
    }
    for (const ref of [...this.#entries.keys()]) {
      if (!present.has(ref)) this.#remove(ref);
    }
    // Channel conflicts are between Bindings: any change may move anyone's.
    this.#conflicts = conflictsByBinding(this.#registry.conflicts(), this.#registry.list());
    for (const [ref, entry] of this.#entries) {
      this.#refresh(ref, entry);
      if (entry.live !== undefined) this.#queue.add(ref);
    }
  }

  /** Every Binding of the file, sorted by ref. */
  statuses(): LocalBindingStatus[] {
    return [...this.#entries.entries()]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .flatMap(([, e]) =>
        e.status === undefined
          ? []
          : [localStatus(e.binding.metadata.namespace, e.binding.metadata.name, e.status)],
      );
  }

  /** Resolves once no card read is waiting or running. */
  async idle(): Promise<void> {
    await this.#queue.idle();
    await this.#pool.idle();
  }

  /**
   * Stops reading cards. The registry keeps the Bindings, as when the controller stops:
   * sessions finishing their turns still have their clients.
   */
  async close(): Promise<void> {
    this.#pool.stop();
    await this.#queue.stop();
  }

  #remove(ref: string): void {
    this.#clients.remove(ref);
    this.#cards.forget(ref);
    this.#queue.forget(ref);
    this.#pool.forget(ref);
    this.#entries.delete(ref);
    this.#triggers?.remove(ref);
    this.#log.info({ binding: ref }, 'binding removed');
  }

  #refresh(ref: string, entry: Entry): void {
    const card = entry.live === undefined ? undefined : this.#cards.current(ref, entry.live.fingerprint);
    const status = bindingStatus({
      binding: entry.binding,
      plan: entry.plan,
      card,
      conflicts: this.#conflicts.get(ref) ?? [],
      previous: entry.status,
      now: this.#now(),
    });
    const transition = readyTransition(entry.status?.conditions, status.conditions ?? []);
    if (transition !== undefined) {
      const fields = { binding: ref, ready: transition.reason, detail: transition.note };
      if (transition.type === 'Normal') this.#log.info(fields, 'binding ready');
      // Waiting for the first card read is every start's first state, not a fault.
      else if (transition.reason === Reasons.Pending) this.#log.info(fields, 'binding waiting for its agent');
      else this.#log.warn(fields, 'binding not ready');
    }
    entry.status = status;
  }

  #checkCard(ref: string): void {
    const live = this.#entries.get(ref)?.live;
    if (live !== undefined) this.#pool.request(ref, live.client, live.fingerprint);
  }
}
