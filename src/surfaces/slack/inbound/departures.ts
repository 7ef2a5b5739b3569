import type { App } from '@slack/bolt';
import type { Logger } from 'pino';
import type { Clock } from '../../../core/clock.js';
import type { Person, RetentionStore } from '../../../core/retention-store.js';
import type { Bounded, SlackListeners } from '../listeners.js';

/**
 * A person deactivated in Slack (`user_change` with `deleted: true`) is erased from the store,
 * as `agentkourier forget --user` would: the threads they started, their words elsewhere, their
 * feedback (a thread still answering goes once its answer ends). Slack sends the event for every
 * profile change; only a deactivation acts. The log
 * line names the user id and the counts, never a word of theirs.
 */

export type PersonErasure = Pick<RetentionStore, 'erasePerson'>;

export interface DeparturesDeps {
  erasure: PersonErasure;
  clock: Clock;
  logger: Logger;
}

const isDeactivation = (user: unknown): user is { id: string; deleted: true } =>
  typeof user === 'object' &&
  user !== null &&
  (user as { deleted?: unknown }).deleted === true &&
  typeof (user as { id?: unknown }).id === 'string';

export class Departures implements SlackListeners {
  readonly #deps: DeparturesDeps;

  constructor(deps: DeparturesDeps) {
    this.#deps = deps;
  }

  register(app: App, bounded: Bounded): void {
    app.event('user_change', async ({ event }) => {
      const user: unknown = event.user;
      if (isDeactivation(user)) await bounded(this.erase({ userId: user.id }));
    });
  }

  async erase(person: Person & { userId: string }): Promise<void> {
    const erased = await this.#deps.erasure.erasePerson(person, this.#deps.clock.now());
    this.#deps.logger.info({ user: person.userId, ...erased }, 'a person deactivated in Slack was erased');
  }
}
