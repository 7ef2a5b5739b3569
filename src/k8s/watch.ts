import {
  ADD,
  DELETE,
  ERROR,
  type KubeConfig,
  type KubernetesListObject,
  type KubernetesObject,
  ListWatch,
  UPDATE,
  Watch,
} from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { backoffDelay } from '../core/backoff.js';
import { statusOf } from './kube-api.js';

/**
 * An informer that does not give up. @kubernetes/client-node's ListWatch relists by itself on
 * 410 Gone (an expired resourceVersion) and reconnects after a quiet watch times out, but it
 * stops for good on any other error (a refused list, a dropped connection, the API server
 * restarting). This wrapper restarts it with capped, jittered backoff, so the controller never
 * exits on a transient API error, and resolves `start()` once the first list has arrived.
 */

export interface InformerHandlers<T extends KubernetesObject> {
  /** Added, or changed. */
  upsert(obj: T): void;
  delete(obj: T): void;
}

export interface InformerOptions<T extends KubernetesObject> {
  kubeConfig: KubeConfig;
  /** e.g. /apis/agentkourier.dev/v1alpha1/bindings */
  path: string;
  list: () => Promise<KubernetesListObject<T>>;
  fieldSelector?: string;
  handlers: InformerHandlers<T>;
  logger: Logger;
  /** What it watches, for logs (never object contents). */
  what: string;
  restartBaseMs?: number;
  restartMaxMs?: number;
  /** Called once, when the first list has arrived (after a failed start too). */
  onSynced?: () => void;
  /**
   * Sees every failure first; true when it told someone itself (the owner logs a refusal once,
   * with what to do), and the informer then logs it at debug only. It is restarted either way.
   */
  onFailure?: (error: unknown) => boolean;
}

export class Informer<T extends KubernetesObject> {
  readonly #o: InformerOptions<T>;
  readonly #watch: ListWatch<T>;
  #stopped = true;
  #failures = 0;
  #restartTimer: NodeJS.Timeout | undefined;
  #lastError: unknown;
  #synced = false;
  /** Bumped by every error, so start() can tell whether its own attempt failed. */
  #errors = 0;

  constructor(options: InformerOptions<T>) {
    this.#o = options;
    this.#watch = new ListWatch<T>(
      options.path,
      new Watch(options.kubeConfig),
      () => this.#list(),
      false,
      undefined,
      options.fieldSelector,
    );
    this.#watch.on(ADD, (obj) => this.#o.handlers.upsert(obj));
    this.#watch.on(UPDATE, (obj) => this.#o.handlers.upsert(obj));
    this.#watch.on(DELETE, (obj) => this.#o.handlers.delete(obj));
    this.#watch.on(ERROR, (err) => this.#onError(err));
  }

  /** True once a list has succeeded: the cache holds the API server's view. */
  get synced(): boolean {
    return this.#synced;
  }

  get lastError(): unknown {
    return this.#lastError;
  }

  get(name: string, namespace: string): T | undefined {
    return this.#watch.get(name, namespace);
  }

  list(namespace?: string): readonly T[] {
    return this.#watch.list(namespace);
  }

  /**
   * Starts the list and watch. Resolves after the first attempt; `synced` says whether it
   * listed. A failed attempt is retried in the background until stop().
   */
  async start(): Promise<void> {
    if (!this.#stopped) return;
    this.#stopped = false;
    await this.#attempt();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#restartTimer);
    this.#restartTimer = undefined;
    await this.#watch.stop();
  }

  async #list(): Promise<KubernetesListObject<T>> {
    const list = await this.#o.list();
    this.#synced = true;
    this.#failures = 0;
    return list;
  }

  async #attempt(): Promise<void> {
    const before = this.#errors;
    const wasSynced = this.#synced;
    try {
      await this.#watch.start();
      if (this.#errors === before) this.#failures = 0;
    } catch (error) {
      this.#onError(error);
    }
    if (!wasSynced && this.#synced && !this.#stopped) this.#o.onSynced?.();
  }

  #onError(error: unknown): void {
    this.#errors++;
    if (this.#stopped) return;
    this.#lastError = error;
    this.#failures++;
    const base = this.#o.restartBaseMs ?? 1000;
    const max = this.#o.restartMaxMs ?? 30_000;
    const delay = backoffDelay(this.#failures - 1, { baseMs: base, maxMs: max, jitter: 0.2 });
    const reported = this.#o.onFailure?.(error) === true;
    this.#o.logger[reported ? 'debug' : 'warn'](
      {
        what: this.#o.what,
        status: statusOf(error),
        error: error instanceof Error ? error.name : 'error',
        // What failed and how (KubeApiError's message names the call and the status or the
        // network error): without it a pod that cannot reach the API server says nothing useful.
        detail: error instanceof Error ? error.message.slice(0, 300) : undefined,
        retryInMs: Math.round(delay),
      },
      'watch failed; restarting',
    );
    clearTimeout(this.#restartTimer);
    this.#restartTimer = setTimeout(() => {
      this.#restartTimer = undefined;
      if (!this.#stopped) void this.#attempt();
    }, delay);
    this.#restartTimer.unref();
  }
}
