import type { KubeConfig, V1Secret } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { decodeSecretData, type SecretView } from '../control/reconcile/secrets.js';
import type { KubeApi } from './kube-api.js';
import { Informer } from './watch.js';

/**
 * Follows exactly the Secrets that AgentBackends and Bindings reference: one list+watch per
 * Secret, by name (a field selector), started when the first resource names it and stopped when
 * the last lets go. No other Secret is read, and none is ever logged.
 */

export interface SecretWatchOptions {
  kubeConfig: KubeConfig;
  api: KubeApi;
  logger: Logger;
  /** A followed Secret was added, changed or deleted. */
  onChange: (namespace: string, name: string) => void;
  restartBaseMs?: number;
  restartMaxMs?: number;
}

function secretKey(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

export class SecretWatch {
  readonly #o: SecretWatchOptions;
  readonly #informers = new Map<string, { informer: Informer<V1Secret>; started: Promise<void> }>();

  constructor(options: SecretWatchOptions) {
    this.#o = options;
  }

  /** Starts following these Secrets (namespace/name); waits for new ones' first list. */
  async follow(refs: Iterable<string>): Promise<void> {
    await Promise.all([...new Set(refs)].map((ref) => this.#ensure(ref)));
  }

  /** Stops following every Secret not in `referenced`: nothing names it any more. */
  async prune(referenced: ReadonlySet<string>): Promise<void> {
    const gone = [...this.#informers].filter(([key]) => !referenced.has(key));
    for (const [key] of gone) this.#informers.delete(key);
    await Promise.all(gone.map(([, entry]) => entry.informer.stop()));
  }

  /** What reconcile may know of a Secret. Only Secrets passed to follow() are ever read. */
  view(namespace: string, name: string): SecretView {
    const entry = this.#informers.get(secretKey(namespace, name));
    if (entry === undefined || !entry.informer.synced) {
      return { kind: 'unreadable', message: 'not read yet (the API server did not answer the list)' };
    }
    const secret = entry.informer.get(name, namespace);
    if (secret === undefined) return { kind: 'missing' };
    return { kind: 'found', data: decodeSecretData(secret.data) };
  }

  followed(): string[] {
    return [...this.#informers.keys()].sort();
  }

  async stop(): Promise<void> {
    const entries = [...this.#informers.values()];
    this.#informers.clear();
    await Promise.all(entries.map((e) => e.informer.stop()));
  }

  #ensure(ref: string): Promise<void> {
    const existing = this.#informers.get(ref);
    if (existing !== undefined) return existing.started;
    const [namespace = '', name = ''] = ref.split('/');
    const informer = new Informer<V1Secret>({
      kubeConfig: this.#o.kubeConfig,
      path: `/api/v1/namespaces/${namespace}/secrets`,
      fieldSelector: `metadata.name=${name}`,
      list: () => this.#o.api.listSecret(namespace, name),
      handlers: {
        upsert: () => this.#o.onChange(namespace, name),
        delete: () => this.#o.onChange(namespace, name),
      },
      logger: this.#o.logger,
      what: `Secret ${ref}`,
      onSynced: () => this.#o.onChange(namespace, name),
      ...(this.#o.restartBaseMs === undefined ? {} : { restartBaseMs: this.#o.restartBaseMs }),
      ...(this.#o.restartMaxMs === undefined ? {} : { restartMaxMs: this.#o.restartMaxMs }),
    });
    const started = informer.start();
    this.#informers.set(ref, { informer, started });
    return started;
  }
}
