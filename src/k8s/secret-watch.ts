import type { KubeConfig, V1Secret } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { decodeSecretData, type SecretView } from '../control/reconcile/secrets.js';
import { type KubeApi, statusOf } from './kube-api.js';
import { Informer } from './watch.js';

/**
 * Follows exactly the Secrets that AgentBackends and Bindings reference: one list+watch per
 * Secret, by name (a field selector), started when the first resource names it and stopped when
 * the last lets go. No other Secret is read, and none is ever logged.
 *
 * A list the API server refuses (403: RBAC grants no Secrets in that namespace) is a state a
 * person must act on, not a passing fault: the Secret's view says so with what to grant (the
 * resources' status shows it), and it is logged once per namespace, not at every retry. The
 * retries go on with backoff, so a grant made later is picked up without a restart.
 */

export interface SecretWatchOptions {
  kubeConfig: KubeConfig;
  api: Pick<KubeApi, 'listSecret'>;
  logger: Logger;
  /** A followed Secret was added, changed or deleted. */
  onChange: (namespace: string, name: string) => void;
  /** What a 403 in `namespace` means and what grants it (./secret-access.ts). */
  forbidden?: (namespace: string) => string;
  restartBaseMs?: number;
  restartMaxMs?: number;
}

const FORBIDDEN = 403;

function secretKey(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

export class SecretWatch {
  readonly #o: SecretWatchOptions;
  readonly #informers = new Map<string, { informer: Informer<V1Secret>; started: Promise<void> }>();
  /** Namespaces whose refusal was logged; forgotten when a list there succeeds. */
  readonly #refusalLogged = new Set<string>();

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
    if (entry !== undefined && !entry.informer.synced && statusOf(entry.informer.lastError) === FORBIDDEN) {
      return { kind: 'forbidden', message: this.#forbiddenMessage(namespace) };
    }
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

  #forbiddenMessage(namespace: string): string {
    return (
      this.#o.forbidden?.(namespace) ??
      `the controller may not list Secrets in namespace "${namespace}" (the API server answered 403)`
    );
  }

  /** A 403 is logged once per namespace, with what to grant; true when it was a 403. */
  #refused(namespace: string, error: unknown): boolean {
    if (statusOf(error) !== FORBIDDEN) return false;
    if (!this.#refusalLogged.has(namespace)) {
      this.#refusalLogged.add(namespace);
      this.#o.logger.warn({ namespace, status: FORBIDDEN }, this.#forbiddenMessage(namespace));
    }
    return true;
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
      onSynced: () => {
        this.#refusalLogged.delete(namespace);
        this.#o.onChange(namespace, name);
      },
      onFailure: (error) => this.#refused(namespace, error),
      ...(this.#o.restartBaseMs === undefined ? {} : { restartBaseMs: this.#o.restartBaseMs }),
      ...(this.#o.restartMaxMs === undefined ? {} : { restartMaxMs: this.#o.restartMaxMs }),
    });
    const started = informer.start();
    this.#informers.set(ref, { informer, started });
    return started;
  }
}
