import type { App, webApi } from '@slack/bolt';
import type { Logger } from 'pino';
import { type BackoffPolicy, backoffDelay } from '../../../core/backoff.js';
import type { Clock } from '../../../core/clock.js';
import type { SlackApi } from './client.js';
import {
  SlackAuthError,
  SlackPlatformError,
  SlackRateLimitedError,
  SlackStoppedError,
  SlackUnavailableError,
} from './errors.js';
import { patientFetch } from './patient-fetch.js';
import { mapError } from './web-client.js';

/**
 * The start's waits for an unreachable Slack, in both modes: auth.test, and in Socket Mode the
 * first connection (apps.connections.open). A broker started during a Slack outage, or before
 * its egress is up, waits and says so instead of exiting; a refusal of a token is a
 * configuration error and fails at once; SIGTERM (the signal) or stop() ends a wait.
 */

/** How long the waits for an unreachable Slack are: 1 s, doubling, at most a minute apart. */
export const DEFAULT_CONNECT_RETRY: BackoffPolicy = { baseMs: 1_000, maxMs: 60_000 };

export type Unreachable = SlackUnavailableError | SlackRateLimitedError;

export interface AuthWaitOptions {
  logger: Logger;
  connectRetry?: BackoffPolicy;
  signal?: AbortSignal;
  onUnreachable?: (error: Unreachable) => void;
}

/** auth.test, tried again while Slack is unreachable or overloaded. */
export async function authTestWhenReachable(
  api: SlackApi,
  clock: Clock,
  options: AuthWaitOptions,
): Promise<Awaited<ReturnType<SlackApi['authTest']>>> {
  const { baseMs, maxMs } = options.connectRetry ?? DEFAULT_CONNECT_RETRY;
  for (let attempt = 0; ; attempt++) {
    options.signal?.throwIfAborted();
    try {
      return await api.authTest();
    } catch (error) {
      if (!(error instanceof SlackUnavailableError || error instanceof SlackRateLimitedError)) throw error;
      const delayMs = Math.max(
        error instanceof SlackRateLimitedError ? error.retryAfterMs : 0,
        backoffDelay(attempt, { baseMs, maxMs }),
      );
      options.logger.warn(
        { err: { name: error.name, code: error.code }, retryInMs: delayMs },
        'Slack cannot be reached; waiting for it',
      );
      options.onUnreachable?.(error);
      await clock.sleep(delayMs, options.signal);
    }
  }
}

/**
 * Socket Mode's start: the Web API client whose apps.connections.open waits while Slack cannot
 * be reached (patient-fetch.ts, no retries of its own on top), and app.start() ended early by a
 * refusal of the app token, the listen signal or stop().
 */
export class SocketModeStart {
  readonly #clock: Clock;
  readonly #backoff: BackoffPolicy;
  readonly #logger: Logger;
  readonly #apiUrl: string;
  /** Ends the waits for Slack of this connection (stop(), or the listen signal). */
  #halt: AbortController | undefined;
  #unlinkSignal: (() => void) | undefined;
  /** While start() waits for the first connection (its misses are told to readiness). */
  #starting = false;
  /** While starting: ends the start when apps.connections.open refuses the token. */
  #refused: ((slackError: string) => void) | undefined;

  constructor(o: { clock: Clock; backoff: BackoffPolicy; logger: Logger; apiUrl: string }) {
    this.#clock = o.clock;
    this.#backoff = o.backoff;
    this.#logger = o.logger;
    this.#apiUrl = o.apiUrl;
  }

  /** The options of the receiver's Web API client, tied to the listen's signal. */
  clientOptions(o: {
    signal?: AbortSignal;
    onUnreachable?: (error: Unreachable) => void;
  }): webApi.WebClientOptions {
    const halt = new AbortController();
    this.#halt = halt;
    const { signal } = o;
    if (signal?.aborted === true) halt.abort(signal.reason);
    else if (signal !== undefined) {
      const onAbort = (): void => halt.abort(signal.reason);
      signal.addEventListener('abort', onAbort, { once: true });
      this.#unlinkSignal = () => signal.removeEventListener('abort', onAbort);
    }
    return {
      slackApiUrl: this.#apiUrl,
      retryConfig: { retries: 0 },
      fetch: patientFetch({
        clock: this.#clock,
        backoff: this.#backoff,
        logger: this.#logger,
        halt: halt.signal,
        // Readiness hears of the start's misses; a reconnection's are only logged.
        onMiss: (error) => {
          if (this.#starting) o.onUnreachable?.(error);
        },
        onRefused: (_method, slackError) => {
          this.#refused?.(slackError);
        },
      }),
    };
  }

  /**
   * app.start(): opens the connection and waits for Slack's hello. It ends early when
   * apps.connections.open refuses the app token (SlackAuthError naming SLACK_APP_TOKEN), the
   * signal aborts (its reason) or halt() is called (SlackStoppedError); each time the
   * half-started client is stopped.
   */
  async start(app: App, signal: AbortSignal | undefined): Promise<void> {
    const halt = this.#halt;
    if (halt === undefined) throw new SlackStoppedError();
    halt.signal.throwIfAborted();
    let unlisten = (): void => undefined;
    const ended = new Promise<never>((_resolve, reject) => {
      this.#refused = (slackError) => reject(new SlackAuthError(slackError, 'SLACK_APP_TOKEN'));
      // The halt carries the signal's reason, or stop()'s.
      const onHalt = (): void => reject(halt.signal.reason);
      halt.signal.addEventListener('abort', onHalt, { once: true });
      unlisten = () => halt.signal.removeEventListener('abort', onHalt);
    });
    this.#starting = true;
    try {
      await Promise.race([app.start(), ended]);
    } catch (error) {
      halt.abort(error);
      await app.stop().catch(() => undefined);
      if (error instanceof SlackAuthError || error === signal?.reason || error instanceof SlackStoppedError)
        throw error;
      // A refusal @slack/socket-mode gives up on by itself (invalid_auth, …), or something else.
      const mapped = mapError('apps.connections.open', error);
      if (mapped instanceof SlackPlatformError)
        throw new SlackAuthError(mapped.slackError, 'SLACK_APP_TOKEN', { cause: error });
      throw mapped;
    } finally {
      this.#starting = false;
      this.#refused = undefined;
      unlisten();
    }
  }

  /** Ends every wait for Slack at once: nothing connects once the stop has begun. */
  halt(): void {
    this.#halt?.abort(new SlackStoppedError());
    this.#halt = undefined;
    this.#unlinkSignal?.();
    this.#unlinkSignal = undefined;
  }
}
