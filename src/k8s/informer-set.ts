import type { KubeConfig, KubernetesListObject, KubernetesObject } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { Informer, type InformerHandlers } from './watch.js';

/**
 * One kind's cache over the namespaces the controller watches: a single cluster-wide
 * list+watch when it watches every namespace, or one list+watch per namespace when the operator
 * limited it (AGENTKOURIER_WATCH_NAMESPACES). The per-namespace form is what lets a Role and
 * RoleBinding per namespace replace the ClusterRole: every call names its namespace. Reconcile
 * reads it as one cache either way.
 */

export interface InformerSetOptions<T extends KubernetesObject> {
  kubeConfig: KubeConfig;
  /** Empty: every namespace, one informer. */
  namespaces: readonly string[];
  /** The collection path of one namespace, or of all (undefined). */
  path: (namespace: string | undefined) => string;
  list: (namespace: string | undefined) => Promise<KubernetesListObject<T>>;
  handlers: InformerHandlers<T>;
  logger: Logger;
  what: string;
  restartBaseMs?: number;
  restartMaxMs?: number;
}

export class InformerSet<T extends KubernetesObject> {
  /** Namespace (or '' for all) → its informer. */
  readonly #informers = new Map<string, Informer<T>>();

  constructor(options: InformerSetOptions<T>) {
    const scopes: Array<string | undefined> =
      options.namespaces.length === 0 ? [undefined] : [...options.namespaces];
    for (const namespace of scopes) {
      this.#informers.set(
        namespace ?? '',
        new Informer<T>({
          kubeConfig: options.kubeConfig,
          path: options.path(namespace),
          list: () => options.list(namespace),
          handlers: options.handlers,
          logger: options.logger,
          what: namespace === undefined ? options.what : `${options.what} in ${namespace}`,
          ...(options.restartBaseMs === undefined ? {} : { restartBaseMs: options.restartBaseMs }),
          ...(options.restartMaxMs === undefined ? {} : { restartMaxMs: options.restartMaxMs }),
        }),
      );
    }
  }

  /** True once every namespace has been listed. */
  get synced(): boolean {
    for (const informer of this.#informers.values()) if (!informer.synced) return false;
    return true;
  }

  get(name: string, namespace: string): T | undefined {
    return this.#for(namespace)?.get(name, namespace);
  }

  list(namespace?: string): readonly T[] {
    if (namespace !== undefined) return this.#for(namespace)?.list(namespace) ?? [];
    return [...this.#informers.values()].flatMap((informer) => informer.list());
  }

  /** Starts every list+watch; resolves after each one's first attempt (see Informer.start). */
  async start(): Promise<void> {
    await Promise.all([...this.#informers.values()].map((informer) => informer.start()));
  }

  async stop(): Promise<void> {
    await Promise.all([...this.#informers.values()].map((informer) => informer.stop()));
  }

  #for(namespace: string): Informer<T> | undefined {
    return this.#informers.get('') ?? this.#informers.get(namespace);
  }
}
