import type { CardChecker, CardCheckResult, CardSource } from './card-check.js';

/**
 * Card reads, off the reconcile workers and fair between tenants. A card read waits on an
 * agent (up to the client's card bound), so it must not hold one of the few workers every
 * namespace's reconciles share: the reconcile asks for a read here and returns, and when the
 * read ends `onChecked` asks for the Binding to be reconciled again, which then writes the
 * result. Each namespace has at most `perNamespace` reads running; namespaces take turns for
 * the shared `concurrency`, so one tenant's Bindings on a slow agent delay nobody else's.
 */

export interface CardPoolOptions {
  /** Card reads running at once, all namespaces together. */
  concurrency: number;
  /** Card reads running at once for one namespace. */
  perNamespace: number;
  /** A read ended (its result is in the checker's memo); not called after stop(). */
  onChecked: (ref: string, result: CardCheckResult) => void;
}

export const DEFAULT_CARD_POOL = { concurrency: 32, perNamespace: 2 } as const;

interface Request {
  ref: string;
  source: CardSource;
  fingerprint: string;
}

export class CardCheckPool {
  readonly #checker: CardChecker;
  readonly #o: CardPoolOptions;
  /** Waiting requests per namespace, in arrival order; a ref waits at most once. */
  readonly #waiting = new Map<string, Request[]>();
  /** Namespaces with waiting requests, in the order they take their turns. */
  readonly #turns: string[] = [];
  readonly #running = new Map<string, string>();
  readonly #perNamespace = new Map<string, number>();
  /** Refs asked for again (another configuration, say) while their read ran. */
  readonly #again = new Map<string, Request>();
  readonly #inFlight = new Set<Promise<void>>();
  #stopped = false;

  constructor(checker: CardChecker, options: CardPoolOptions) {
    this.#checker = checker;
    this.#o = options;
  }

  /** Asks for a read of the card of `ref` ('namespace/name'), once, whenever a slot frees. */
  request(ref: string, source: CardSource, fingerprint: string): void {
    if (this.#stopped) return;
    const request = { ref, source, fingerprint };
    const running = this.#running.get(ref);
    if (running !== undefined) {
      if (running !== fingerprint) this.#again.set(ref, request);
      return;
    }
    const namespace = namespaceOf(ref);
    const queue = this.#waiting.get(namespace) ?? [];
    const waiting = queue.findIndex((r) => r.ref === ref);
    if (waiting >= 0) {
      queue[waiting] = request;
      return;
    }
    queue.push(request);
    if (!this.#waiting.has(namespace)) {
      this.#waiting.set(namespace, queue);
      this.#turns.push(namespace);
    }
    this.#pump();
  }

  /** Drops a waiting request (the Binding is gone or cannot be served). A running read ends unheard. */
  forget(ref: string): void {
    this.#again.delete(ref);
    const namespace = namespaceOf(ref);
    const queue = this.#waiting.get(namespace);
    if (queue === undefined) return;
    const left = queue.filter((r) => r.ref !== ref);
    if (left.length > 0) this.#waiting.set(namespace, left);
    else this.#dropNamespace(namespace);
  }

  get running(): number {
    return this.#running.size;
  }

  /** Resolves once nothing waits or runs (tests). */
  async idle(): Promise<void> {
    while (this.#inFlight.size > 0 || this.#turns.length > 0)
      await Promise.race([...this.#inFlight, new Promise((r) => setTimeout(r, 10))]);
  }

  /**
   * Takes no more requests and forgets the waiting ones. Running reads are not waited for (each
   * ends within the client's card bound); their results are dropped.
   */
  stop(): void {
    this.#stopped = true;
    this.#waiting.clear();
    this.#turns.length = 0;
    this.#again.clear();
  }

  #pump(): void {
    let idleTurns = 0;
    while (!this.#stopped && this.#running.size < this.#o.concurrency && this.#turns.length > 0) {
      if (idleTurns >= this.#turns.length) return; // every waiting namespace is at its own cap
      const namespace = this.#turns.shift() as string;
      const queue = this.#waiting.get(namespace) ?? [];
      if ((this.#perNamespace.get(namespace) ?? 0) >= this.#o.perNamespace) {
        this.#turns.push(namespace);
        idleTurns++;
        continue;
      }
      idleTurns = 0;
      const next = queue.shift();
      if (queue.length > 0) this.#turns.push(namespace);
      else this.#waiting.delete(namespace);
      if (next !== undefined) this.#start(namespace, next);
    }
  }

  #start(namespace: string, request: Request): void {
    this.#running.set(request.ref, request.fingerprint);
    this.#perNamespace.set(namespace, (this.#perNamespace.get(namespace) ?? 0) + 1);
    const run = (async () => {
      let result: CardCheckResult | undefined;
      try {
        result = await this.#checker.check(request.ref, request.source, request.fingerprint);
      } catch {
        // check() turns every failure of the read into a refused outcome; nothing else throws.
      } finally {
        this.#running.delete(request.ref);
        const left = (this.#perNamespace.get(namespace) ?? 1) - 1;
        if (left > 0) this.#perNamespace.set(namespace, left);
        else this.#perNamespace.delete(namespace);
      }
      if (this.#stopped) return;
      if (result !== undefined) this.#o.onChecked(request.ref, result);
      const again = this.#again.get(request.ref);
      this.#again.delete(request.ref);
      if (again !== undefined) this.request(again.ref, again.source, again.fingerprint);
      this.#pump();
    })();
    this.#inFlight.add(run);
    void run.finally(() => this.#inFlight.delete(run));
  }

  #dropNamespace(namespace: string): void {
    this.#waiting.delete(namespace);
    const at = this.#turns.indexOf(namespace);
    if (at >= 0) this.#turns.splice(at, 1);
  }
}

function namespaceOf(ref: string): string {
  const slash = ref.indexOf('/');
  return slash < 0 ? '' : ref.slice(0, slash);
}
