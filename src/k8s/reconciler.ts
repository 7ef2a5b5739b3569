import type { Logger } from 'pino';
import type { CardChecker } from '../control/card-check.js';
import type { CardCheckPool } from '../control/card-pool.js';
import {
  allowedChannels,
  type ClaimConflict,
  changedConflicts,
  conflictsByBinding,
  type NamespaceChannels,
} from '../control/channels.js';
import type { AgentBackend, AgentBackendStatus } from '../control/crds/agent-backend.js';
import type { Binding, BindingStatus } from '../control/crds/binding.js';
import type { Condition, ObjectMeta } from '../control/crds/common.js';
import type { LiveClients } from '../control/live-clients.js';
import {
  agentBackendStatus,
  type BackendBinding,
  resolveBackendHeaders,
} from '../control/reconcile/agent-backend.js';
import { bindingStatus, type CardState, planBinding } from '../control/reconcile/binding.js';
import type { SecretLookup } from '../control/reconcile/secrets.js';
import type { TriggerActivityView } from '../control/reconcile/triggers.js';
import {
  ConditionTypes,
  falseCondition,
  Reasons,
  readyCondition,
  readyTransition,
  sameJson,
  stampConditions,
} from '../control/status.js';
import type { LiveRegistry } from '../core/registry.js';
import type { TriggerDirectory } from '../core/triggers.js';
import type { EventRecorder, EventTarget } from './events.js';
import { keyOf } from './keys.js';
import type { KubeApi, ResourcePlural } from './kube-api.js';
import { KubeApiError } from './kube-api.js';
import { backendSecretRefs, bindingSecretRefs, parseAgentBackend, parseBinding } from './resources.js';
import type { SecretWatch } from './secret-watch.js';

/**
 * The two reconciles with their I/O: read the caches, run the pure functions of reconcile/,
 * apply the live client to the registry (every replica), and, on the leader only, read the card
 * and write status and events. Called by the work queue, one key at a time.
 */

/** An informer's cache, as reconcile reads it. */
export interface ObjectCache {
  get(name: string, namespace: string): unknown;
  list(namespace?: string): readonly unknown[];
}

export interface ReconcilerDeps {
  api: Pick<KubeApi, 'writeStatus'>;
  backends: ObjectCache;
  bindings: ObjectCache;
  secrets: Pick<SecretWatch, 'follow' | 'prune' | 'view'>;
  clients: LiveClients;
  cards: CardChecker;
  /** Runs the card reads, off the reconcile workers; asks for a reconcile when one ends. */
  cardPool: Pick<CardCheckPool, 'request' | 'forget'>;
  registry: LiveRegistry;
  events: Pick<EventRecorder, 'record'>;
  isLeader: () => boolean;
  enqueue: (key: string) => void;
  enqueueAfter: (key: string, ms: number) => void;
  namespaceChannels: NamespaceChannels | undefined;
  logger: Logger;
  now: () => Date;
  /** Where every replica's triggers are served from: each Binding's triggers go here. */
  triggers?: TriggerDirectory;
  /** The last delivery of a Binding's triggers, as the leader last read them from the store. */
  triggerActivity?: (ref: string) => TriggerActivityView | undefined;
}

interface Written<S> {
  uid: string | undefined;
  status: S;
}

type Memo<S> = Map<string, Written<S>>;

interface WithConditions {
  conditions?: Condition[];
}

export class Reconciler {
  readonly #d: ReconcilerDeps;
  /** What this leader wrote last, per key: the cache may not have caught up with it yet. */
  readonly #writtenBindings: Memo<BindingStatus> = new Map();
  readonly #writtenBackends: Memo<AgentBackendStatus> = new Map();
  #conflicts = new Map<string, ClaimConflict[]>();
  /** The backend each Binding named when last seen, to tell the old backend when it changes. */
  readonly #bindingBackends = new Map<string, string>();

  constructor(deps: ReconcilerDeps) {
    this.#d = deps;
  }

  /** A new leader starts from what the API server holds. */
  resetLeaderState(): void {
    this.#writtenBindings.clear();
    this.#writtenBackends.clear();
    this.#d.cards.clear();
  }

  /** Bindings (keys) of a namespace that name this backend. */
  bindingsOf(namespace: string, backendName: string): string[] {
    return this.#parsedBindings(namespace)
      .filter((b) => b.spec.backendRef.name === backendName)
      .map((b) => keyOf('Binding', namespace, b.metadata.name));
  }

  /** Keys of every object that reads this Secret. */
  readersOf(namespace: string, secretName: string): string[] {
    const ref = `${namespace}/${secretName}`;
    const keys: string[] = [];
    for (const b of this.#parsedBackends(namespace)) {
      if (backendSecretRefs(b).includes(ref)) {
        keys.push(keyOf('AgentBackend', namespace, b.metadata.name));
        keys.push(...this.bindingsOf(namespace, b.metadata.name));
      }
    }
    for (const b of this.#parsedBindings(namespace)) {
      if (bindingSecretRefs(b).includes(ref)) keys.push(keyOf('Binding', namespace, b.metadata.name));
    }
    return [...new Set(keys)];
  }

  /** Every Secret (namespace/name) some object names: the only ones followed. */
  referencedSecrets(): Set<string> {
    const refs = new Set<string>();
    for (const b of this.#parsedBackends()) for (const r of backendSecretRefs(b)) refs.add(r);
    for (const b of this.#parsedBindings()) for (const r of bindingSecretRefs(b)) refs.add(r);
    return refs;
  }

  /** Called for a Binding add/change/delete: the backends it named and names now. */
  noteBinding(key: string, backendName: string | undefined, namespace: string): void {
    const before = this.#bindingBackends.get(key);
    if (before !== undefined && before !== backendName)
      this.#d.enqueue(keyOf('AgentBackend', namespace, before));
    if (backendName === undefined) this.#bindingBackends.delete(key);
    else {
      this.#bindingBackends.set(key, backendName);
      this.#d.enqueue(keyOf('AgentBackend', namespace, backendName));
    }
  }

  async reconcileBinding(namespace: string, name: string, signal: AbortSignal): Promise<void> {
    const d = this.#d;
    const key = keyOf('Binding', namespace, name);
    const ref = `${namespace}/${name}`;
    const parsed = parseBinding(d.bindings.get(name, namespace));
    if (parsed === undefined) {
      // Deleted: its sessions are told on their next turn (the engine sees no route).
      d.clients.remove(ref);
      d.cards.forget(ref);
      d.cardPool.forget(ref);
      d.triggers?.remove(ref);
      this.#writtenBindings.delete(key);
      this.#refreshConflicts(ref);
      await d.secrets.prune(this.referencedSecrets());
      d.logger.info({ binding: ref }, 'binding removed');
      return;
    }
    if (!parsed.ok) {
      d.clients.remove(ref);
      d.triggers?.remove(ref);
      this.#refreshConflicts(ref);
      await this.#writeInvalid(this.#writtenBindings, 'bindings', key, parsed);
      return;
    }
    const binding = parsed.value;
    const backendParsed = parseAgentBackend(d.backends.get(binding.spec.backendRef.name, namespace));
    const backend = backendParsed?.ok === true ? backendParsed.value : undefined;
    await d.secrets.follow([
      ...bindingSecretRefs(binding),
      ...(backend === undefined ? [] : backendSecretRefs(backend)),
    ]);
    const plan = planBinding({
      binding,
      backend,
      ...(backendParsed?.ok === false ? { backendInvalid: backendParsed.message } : {}),
      secrets: this.#lookup(namespace),
      allowedChannels: allowedChannels(d.namespaceChannels, namespace),
    });
    const live = plan.live === undefined ? undefined : d.clients.apply(plan.live);
    if (live === undefined) {
      d.clients.remove(ref);
      d.cards.forget(ref);
      d.cardPool.forget(ref);
    }
    d.triggers?.set(ref, plan.triggers.configs);
    this.#refreshConflicts(ref);
    await d.secrets.prune(this.referencedSecrets());
    if (!d.isLeader()) return;

    let card: CardState | undefined;
    if (live !== undefined) {
      // What the last read of this configuration said; a read that is due runs in the card
      // pool, never here, so a slow agent holds no reconcile worker. When it ends, the Binding
      // is reconciled again and writes what it found (failed reads retry with backoff,
      // accepted cards are read again now and then).
      card = d.cards.current(ref, live.fingerprint);
      if (!signal.aborted && d.cards.due(ref, live.fingerprint))
        d.cardPool.request(ref, live.client, live.fingerprint);
    }
    const previous = previous_(this.#writtenBindings, key, binding.metadata.uid, binding.status);
    const status = bindingStatus({
      binding,
      plan,
      card,
      conflicts: this.#conflicts.get(ref) ?? [],
      previous,
      now: d.now(),
      ...(d.triggerActivity === undefined ? {} : { triggerActivity: d.triggerActivity(ref) ?? new Map() }),
    });
    const wrote = await this.#write(
      this.#writtenBindings,
      'bindings',
      key,
      binding.metadata.uid,
      previous,
      status,
      {
        kind: 'Binding',
        namespace,
        name,
        ...(binding.metadata.uid === undefined ? {} : { uid: binding.metadata.uid }),
      },
    );
    // The backend sums up its Bindings' card checks.
    if (wrote) d.enqueue(keyOf('AgentBackend', namespace, binding.spec.backendRef.name));
  }

  async reconcileAgentBackend(namespace: string, name: string): Promise<void> {
    const d = this.#d;
    const key = keyOf('AgentBackend', namespace, name);
    const parsed = parseAgentBackend(d.backends.get(name, namespace));
    if (parsed === undefined) {
      this.#writtenBackends.delete(key);
      await d.secrets.prune(this.referencedSecrets());
      return;
    }
    if (!parsed.ok) {
      await this.#writeInvalid(this.#writtenBackends, 'agentbackends', key, parsed);
      return;
    }
    const backend = parsed.value;
    await d.secrets.follow(backendSecretRefs(backend));
    if (!d.isLeader()) return;
    const bindings: BackendBinding[] = this.#parsedBindings(namespace)
      .filter((b) => b.spec.backendRef.name === name)
      .map((b) => ({
        name: b.metadata.name,
        status: previous_(
          this.#writtenBindings,
          keyOf('Binding', namespace, b.metadata.name),
          b.metadata.uid,
          b.status,
        ),
      }));
    const previous = previous_(this.#writtenBackends, key, backend.metadata.uid, backend.status);
    const status = agentBackendStatus({
      backend: { ...backend, status: previous },
      headers: resolveBackendHeaders(backend, this.#lookup(namespace)),
      bindings,
      now: d.now(),
    });
    await this.#write(this.#writtenBackends, 'agentbackends', key, backend.metadata.uid, previous, status, {
      kind: 'AgentBackend',
      namespace,
      name,
      ...(backend.metadata.uid === undefined ? {} : { uid: backend.metadata.uid }),
    });
  }

  /** Recomputes channel conflicts; every other Binding whose conflicts changed is reconciled. */
  #refreshConflicts(self: string): void {
    const next = conflictsByBinding(this.#d.registry.conflicts(), this.#d.registry.list());
    const changed = changedConflicts(this.#conflicts, next);
    this.#conflicts = next;
    for (const ref of changed) {
      if (ref === self) continue;
      const [namespace = '', name = ''] = ref.split('/');
      this.#d.enqueue(keyOf('Binding', namespace, name));
    }
  }

  #lookup(namespace: string): SecretLookup {
    return (name) => this.#d.secrets.view(namespace, name);
  }

  /** A resource that does not parse: Ready False, InvalidSpec, and nothing else. */
  async #writeInvalid<S extends WithConditions>(
    memo: Memo<S>,
    plural: ResourcePlural,
    key: string,
    parsed: { meta: ObjectMeta; message: string },
  ): Promise<void> {
    const d = this.#d;
    if (!d.isLeader()) return;
    const { meta } = parsed;
    const previous = previous_(memo, key, meta.uid, undefined);
    const ready = readyCondition(
      [falseCondition(ConditionTypes.Ready, Reasons.InvalidSpec, parsed.message)],
      '',
    );
    const status: WithConditions & { observedGeneration?: number } = {
      observedGeneration: meta.generation,
      conditions: stampConditions(previous?.conditions, [ready], meta.generation, d.now()),
    };
    const target: EventTarget = {
      kind: plural === 'bindings' ? 'Binding' : 'AgentBackend',
      namespace: meta.namespace,
      name: meta.name,
      ...(meta.uid === undefined ? {} : { uid: meta.uid }),
    };
    await this.#write<WithConditions>(memo, plural, key, meta.uid, previous, status, target);
  }

  /** Writes status when it changed, and an event when Ready moved. True when it wrote. */
  async #write<S extends WithConditions>(
    memo: Memo<S>,
    plural: ResourcePlural,
    key: string,
    uid: string | undefined,
    previous: S | undefined,
    status: S,
    target: EventTarget,
  ): Promise<boolean> {
    const d = this.#d;
    if (sameJson(previous ?? {}, status)) return false;
    // Leadership may have moved while the card was read: only the leader writes.
    if (!d.isLeader()) return false;
    try {
      await d.api.writeStatus(plural, target.namespace, target.name, status);
    } catch (error) {
      if (error instanceof KubeApiError && error.isNotFound) return false;
      throw error;
    }
    memo.set(key, { uid, status });
    const transition = readyTransition(previous?.conditions, status.conditions ?? []);
    if (transition !== undefined) {
      d.logger.info(
        { kind: target.kind, namespace: target.namespace, name: target.name, ready: transition.reason },
        'ready changed',
      );
      await d.events.record(target, transition);
    }
    return true;
  }

  #parsedBindings(namespace?: string): Binding[] {
    return this.#d.bindings.list(namespace).flatMap((raw) => {
      const p = parseBinding(raw);
      return p?.ok === true ? [p.value] : [];
    });
  }

  #parsedBackends(namespace?: string): AgentBackend[] {
    return this.#d.backends.list(namespace).flatMap((raw) => {
      const p = parseAgentBackend(raw);
      return p?.ok === true ? [p.value] : [];
    });
  }
}

/** What this leader wrote, when it is about the same object (uid); else what the cache holds. */
function previous_<S>(
  memo: Memo<S>,
  key: string,
  uid: string | undefined,
  cached: S | undefined,
): S | undefined {
  const written = memo.get(key);
  return written !== undefined && written.uid === uid ? written.status : cached;
}
