/**
 * A process's start, as controller-runtime's manager runs its runnables: the parts start one
 * after another, each naming what it waits for, and one small manager owns their order, the
 * readiness text /readyz answers with, and the end of the start when SIGTERM comes meanwhile.
 * Both modes start this way (./controller.ts, ./local.ts).
 *
 *   const startup = new Startup(signal);
 *   ops.ready = () => startup.readiness();
 *   const outcome = await startup.run([
 *     { waitingFor: "Slack's Web API (auth.test)", start: () => … },
 *     { waitingFor: 'the session store to be reachable', start: () => … },
 *   ]);
 *   if (outcome === 'abandoned') … stop what started, and return
 */

/** One part of the start. */
export interface StartStep {
  /** What the start waits for while this part starts, as /readyz says it ("waiting for …"). */
  waitingFor: string;
  /** Starts the part; resolves once it runs. */
  start(): Promise<void>;
}

/** started: every part runs. abandoned: SIGTERM came first; what started is to be stopped. */
export type StartOutcome = 'started' | 'abandoned';

export class Startup {
  readonly #signal: AbortSignal | undefined;
  /** What the start waits for now; undefined once every part started. */
  #waitingFor: string | undefined = 'the start';
  #step = 'the start';
  #draining = false;
  readonly #checks: Array<() => string | undefined> = [];

  constructor(signal?: AbortSignal) {
    this.#signal = signal;
  }

  /**
   * The part that waits missed once and tries again (Slack not reachable yet): readiness names
   * the step with what went wrong, "Slack's Web API (auth.test: slack_unavailable)".
   */
  missed(code: string): void {
    const step = this.#step;
    this.#waitingFor = step.endsWith(')') ? `${step.slice(0, -1)}: ${code})` : `${step} (${code})`;
  }

  /**
   * Something that keeps the process not ready after the start, while it says why (the store
   * refuses writes, the first list of resources has not come yet). Checked in the order added.
   */
  check(problem: () => string | undefined): void {
    this.#checks.push(problem);
  }

  /** The process stops: not ready from now on, whatever the rest says. */
  drain(): void {
    this.#draining = true;
  }

  /** Whether the process stops (SIGTERM came): trigger deliveries are refused meanwhile. */
  get draining(): boolean {
    return this.#draining;
  }

  #aborted(): boolean {
    return this.#signal?.aborted === true;
  }

  /** What /readyz answers: true, or why not. */
  readiness(): true | string {
    if (this.#draining) return 'shutting down';
    if (this.#waitingFor !== undefined) return `waiting for ${this.#waitingFor}`;
    for (const check of this.#checks) {
      const problem = check();
      if (problem !== undefined) return problem;
    }
    return true;
  }

  /**
   * Starts the parts in order. SIGTERM before a part, or a part that fails because SIGTERM
   * ended its wait, makes the outcome 'abandoned'; any other failure is thrown.
   */
  async run(steps: readonly StartStep[]): Promise<StartOutcome> {
    for (const step of steps) {
      if (this.#aborted()) return 'abandoned';
      this.#step = step.waitingFor;
      this.#waitingFor = step.waitingFor;
      try {
        await step.start();
      } catch (error) {
        if (this.#aborted()) return 'abandoned';
        throw error;
      }
    }
    if (this.#aborted()) return 'abandoned';
    this.#waitingFor = undefined;
    return 'started';
  }
}
