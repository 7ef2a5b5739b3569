import type { webApi } from '@slack/bolt';
import type { Logger } from 'pino';
import { z } from 'zod';
import { type BackoffPolicy, backoffDelay } from '../../../core/backoff.js';
import type { Clock } from '../../../core/clock.js';
import { SlackRateLimitedError, SlackUnavailableError } from './errors.js';

/**
 * The `fetch` that Bolt's Socket Mode client calls apps.connections.open with, made patient:
 * while Slack cannot be reached (no answer, a 5xx, a 429) it waits with the broker's backoff and
 * tries again, for as long as it takes, so the WebClient above it sees one slow call, never a
 * failure. What Slack answers otherwise (ok, or a refusal such as invalid_auth) goes up as is,
 * a refusal told to `onRefused` on the way: @slack/socket-mode fails its start only on a few
 * refusals (invalid_auth, not_authed, account_inactive, …) and answers any other (missing_scope
 * for a token without connections:write, say) by trying again every few seconds, for ever.
 *
 * Why not the WebClient's own retries: @slack/socket-mode 3.1 gives its WebClient 100 retries
 * 1 s · 1.3ⁿ apart, uncapped (an hour into an outage the next try is some 20 minutes away),
 * nothing ends them (neither app.stop() nor SIGTERM: a try that succeeds after the stop still
 * opens a connection), and nobody is told. The same fetch serves the client's reconnections, so
 * a connection lost in an outage comes back soon after Slack does.
 *
 * An ended wait (`halt` aborted) never settles: a rejection would reach @slack/socket-mode's
 * reconnection, which does not catch it (an unhandled rejection ends the process). The broker
 * stops waiting on its side instead (connection.ts races the start against its signal); the pending
 * call holds no timer and no socket.
 */
export interface PatientFetchOptions {
  clock: Clock;
  backoff: BackoffPolicy;
  logger: Logger;
  /** Ends every wait and the request in flight: the connection stops, or the start was abandoned. */
  halt: AbortSignal;
  /** Told of each miss before its wait. */
  onMiss?: (error: SlackUnavailableError | SlackRateLimitedError) => void;
  /** Told when Slack answered `ok: false` (the answer still goes up to the caller). */
  onRefused?: (method: string, slackError: string) => void;
  /** The fetch underneath (default the global one, which WebClient itself uses). */
  fetch?: typeof fetch;
}

/** Slack's refusal: HTTP 200 with `{ok: false, error}`. */
const refusal = z.object({ ok: z.literal(false), error: z.string() });

/** A fresh one each time: a shared one would keep every abandoned caller's continuation alive. */
const never = (): Promise<never> => new Promise(() => undefined);

export function patientFetch(options: PatientFetchOptions): webApi.FetchFunction {
  const { clock, backoff, logger, halt } = options;
  const inner = options.fetch ?? fetch;
  return async (url, init) => {
    const method = methodOf(url);
    for (let attempt = 0; ; attempt++) {
      if (halt.aborted) return never();
      const signal = init?.signal === undefined ? halt : AbortSignal.any([init.signal, halt]);
      let miss: SlackUnavailableError | SlackRateLimitedError;
      try {
        const response = await inner(url, { ...init, signal });
        if (response.status < 500 && response.status !== 429) {
          if (response.status === 200 && options.onRefused !== undefined) {
            const refused = refusal.safeParse(
              await response
                .clone()
                .json()
                .catch(() => undefined),
            );
            if (refused.success) options.onRefused(method, refused.data.error);
          }
          return response;
        }
        // Nothing in a 5xx or 429 is read: its connection goes back to the pool.
        await response.body?.cancel().catch(() => undefined);
        miss =
          response.status === 429
            ? new SlackRateLimitedError(method, retryAfterMs(response.headers.get('retry-after')))
            : new SlackUnavailableError(method, { status: response.status });
      } catch (cause) {
        if (halt.aborted) return never();
        // The caller's own deadline (WebClient's `timeout`): its to handle, not a Slack outage.
        if (init?.signal?.aborted === true) throw cause;
        miss = new SlackUnavailableError(method, { cause });
      }
      const waitMs = Math.max(
        miss instanceof SlackRateLimitedError ? miss.retryAfterMs : 0,
        backoffDelay(attempt, backoff),
      );
      logger.warn(
        { err: { name: miss.name, code: miss.code }, method, retryInMs: waitMs },
        'Slack cannot be reached; waiting for it',
      );
      options.onMiss?.(miss);
      try {
        await clock.sleep(waitMs, halt);
      } catch {
        return never();
      }
    }
  };
}

/** The Web API method a request is for: the URL's last path segment. */
function methodOf(url: string | URL): string {
  const path = (typeof url === 'string' ? new URL(url, 'http://slack.invalid') : url).pathname;
  return path.slice(path.lastIndexOf('/') + 1) || 'unknown';
}

/** Retry-After in seconds, as Slack sends it; a missing or zero one still waits a second (as web-client.ts). */
function retryAfterMs(header: string | null): number {
  const seconds = Number(header);
  return Number.isFinite(seconds) ? Math.max(1, seconds) * 1000 : 1000;
}
