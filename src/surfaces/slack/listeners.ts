import type { App } from '@slack/bolt';
import type { Logger } from 'pino';
import { type Clock, WAIT_OVER } from '../../core/clock.js';

/**
 * How the Slack surface's parts take Bolt's events: each part registers its own listeners on the
 * app (as bolt-js's own listener modules do), and runs its work through one bound, so that Slack
 * hears back in time whatever the work still does.
 */

/** Runs a listener's work, resolving once it is done or once the time to answer Slack is up. */
export type Bounded = (work: Promise<void>) => Promise<void>;

/** A part of the surface that takes some of Bolt's events, actions or views. */
export interface SlackListeners {
  register(app: App, bounded: Bounded): void;
}

/**
 * Slack wants its answer within 3 seconds; a turn never waits for the agent, and whatever is
 * still going on after `withinMs` finishes after the answer. A failure is logged by its name
 * only (a Slack payload may hold a person's words).
 */
export function ackBound(clock: Clock, logger: Logger, withinMs: number): Bounded {
  return async (work) => {
    const caught = work.catch((error: unknown) => {
      logger.error({ err: error instanceof Error ? error.name : typeof error }, 'a Slack event failed');
    });
    const deadline = new AbortController();
    await Promise.race([caught, clock.sleep(withinMs, deadline.signal).catch(() => undefined)]);
    deadline.abort(WAIT_OVER);
  };
}
