import { parseArgs } from 'node:util';
import { loadBrokerConfig } from '../config/broker.js';
import { InvalidConfigError } from '../core/errors.js';
import type { Erased, Person } from '../core/retention-store.js';
import { openStore } from '../store/open.js';

/**
 * `agentkourier forget`: erases one person from the store the broker uses, while it runs (the
 * erasure is one transaction, as any write of the broker's). Slack's ids and the web chat's
 * person id are the actor ids the store keeps; an email is the one Slack's profile gave.
 */

export const FORGET_HELP = `Usage: agentkourier forget (--user ID | --email ADDRESS)

Erases one person from the broker's store, while the broker runs:
  - the threads they started, entirely (sessions, every turn, feedback);
  - their words in other threads: each turn they wrote, and each turn that carried a
    reply of theirs to the agent, keeps its ids and state, and its text goes;
  - their feedback presses.
A thread of theirs still answering (and a turn of theirs not settled) waits until the answer
ends: the broker keeps the erasure and runs it again until nothing of theirs waits.
It prints how many rows went. What the agents and Slack keep is theirs to erase.

Options:
  --user ID        the person's id: a Slack user id (U…, W…) or the web chat's person
  --email ADDRESS  the person's email, as their Slack profile gave it (any case)
  --help, -h       print this help

The store is the broker's, from the same settings: AGENTKOURIER_STORE (sqlite:<path> or a
postgres:// URL; default sqlite:.agentkourier/state.db, local mode's) and AGENTKOURIER_PG_SCHEMA.
In a cluster, run it in the controller's pod, which has them:
  kubectl -n agentkourier exec deploy/agentkourier -- node /app/dist/main.js forget --user U0123ABCD`;

/** Reads the person from the command line; a bad line throws InvalidConfigError. */
export function personOf(args: string[]): Person {
  const { values, positionals } = parseArgs({
    args,
    options: { user: { type: 'string' }, email: { type: 'string' } },
    strict: true,
    allowPositionals: true,
  });
  if (positionals.length > 0)
    throw new InvalidConfigError(`forget takes no arguments (got "${positionals[0]}")`);
  const { user, email } = values;
  if ((user === undefined) === (email === undefined))
    throw new InvalidConfigError('forget needs one of --user ID or --email ADDRESS');
  if (user !== undefined) {
    if (!/^[A-Za-z0-9._:@-]{1,128}$/.test(user))
      throw new InvalidConfigError('--user must be a user id (letters, digits, . _ : @ -; at most 128)');
    return { userId: user };
  }
  const address = email ?? '';
  if (!/^[^\s@<>()%]{1,128}@[^\s@<>()%]{1,253}$/.test(address))
    throw new InvalidConfigError('--email must be an email address');
  return { email: address };
}

export function describeErased(person: Person, erased: Erased): string {
  const who = 'userId' in person ? `user ${person.userId}` : `email ${person.email}`;
  return [
    `forgot ${who}:`,
    `  ${erased.threads} thread(s) they started, with ${erased.turns} turn(s)`,
    `  their words in ${erased.wordsCleared} turn(s) of other threads`,
    `  ${erased.feedback} feedback press(es)`,
    `  ${erased.links} sign-in link(s) at identity providers`,
    ...(erased.waiting > 0
      ? [
          `  ${erased.waiting} thread(s) or turn(s) still answering: they go once their answer ends`,
          '  (the broker runs this erasure again until nothing of theirs waits)',
        ]
      : []),
  ].join('\n');
}

export async function runForget(
  args: string[],
  env: Readonly<Record<string, string | undefined>>,
  out: (line: string) => void,
): Promise<number> {
  const person = personOf(args);
  const config = loadBrokerConfig(env, {
    store: { kind: 'sqlite', path: '.agentkourier/state.db' },
    httpPort: 8080,
  });
  // The broker migrates the store it opens; so does this, the same way (an up-to-date store is
  // left as it is).
  const stores = await openStore(config.store, { retryMaxMs: 2_000, signal: AbortSignal.timeout(30_000) });
  try {
    out(describeErased(person, await stores.retention.erasePerson(person, Date.now())));
    return 0;
  } finally {
    await stores.sessions.close();
  }
}
