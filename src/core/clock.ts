/** Time, injected so tests can shrink it. */
export interface Clock {
  now(): number;
  /** Resolves after ms, or rejects with the signal's reason when it aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/**
 * The reason to abort a sleep whose wait is over because what it bounded finished first. One
 * shared instance: `abort()` with no reason builds a DOMException, stack trace and all, on every
 * call, and such waits end several times per Slack event and per answer.
 */
export const WAIT_OVER: Error = new Error('the wait is over');

export const systemClock: Clock = {
  now: () => Date.now(),
  // A timer and a listener, not node:timers/promises: that one rejects an aborted sleep with an
  // AbortError of its own (a stack trace per abort) that the port would only replace with the
  // signal's reason.
  sleep: (ms, signal) =>
    new Promise<void>((resolve, reject) => {
      if (signal === undefined) {
        setTimeout(resolve, ms);
        return;
      }
      if (signal.aborted) {
        reject(signal.reason);
        return;
      }
      const onAbort = (): void => {
        clearTimeout(timer);
        reject(signal.reason);
      };
      const timer = setTimeout(() => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      signal.addEventListener('abort', onAbort, { once: true });
    }),
};
