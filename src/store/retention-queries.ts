import type { Erased, Forgotten, Person, RetentionStore } from '../core/retention-store.js';
import { removePersonLinks } from './identity-link-rows.js';
import { integer, integerOrNull, q, type Row, type Steps, type StepsRunner, text } from './sql-steps.js';

/**
 * Retention and erasure (core/retention-store.ts) over statements both databases share, run by
 * the same runners as the triggers (one transaction per call). A thread is forgotten by deleting
 * its rows children first (feedback, turns, lease, then the session) in one transaction; what
 * stays is its key in @forgotten, which holds no person's data.
 */

/** `IN ($n, $n+1, …)` for a list of values after `offset` earlier parameters. */
function list(values: string[], offset: number): string {
  return `(${values.map((_, i) => `$${offset + i + 1}`).join(', ')})`;
}

/**
 * Sessions idle since before `before`, with nothing in flight, oldest first. The version bump
 * is a no-op that takes their row locks (PostgreSQL) and re-reads the conditions under them,
 * so a turn that lands meanwhile keeps its thread.
 */
function* idleSessions(before: number, limit: number): Steps<string[]> {
  const rows = yield q(
    `UPDATE @sessions SET version = version
     WHERE id IN (
       SELECT s.id FROM @sessions s
       WHERE s.updated_at < $1 AND s.task IS NULL AND s.question IS NULL
         AND NOT EXISTS (
           SELECT 1 FROM @turns t
           WHERE t.session_id = s.id AND (t.updated_at >= $1 OR t.state <> 'settled'))
       ORDER BY s.updated_at
       LIMIT $2)
     AND updated_at < $1 AND task IS NULL AND question IS NULL
     RETURNING id`,
    before,
    limit,
  );
  return rows.map((r) => text(r, 'id'));
}

/** Deletes sessions and every row that hangs on them; how many of each. */
function* deleteSessions(ids: string[]): Steps<Forgotten> {
  if (ids.length === 0) return { threads: 0, turns: 0, feedback: 0 };
  const feedback = yield q(
    `DELETE FROM @feedback WHERE session_id IN ${list(ids, 0)} RETURNING turn_id`,
    ...ids,
  );
  const turns = yield q(`DELETE FROM @turns WHERE session_id IN ${list(ids, 0)} RETURNING id`, ...ids);
  yield q(`DELETE FROM @leases WHERE session_id IN ${list(ids, 0)}`, ...ids);
  const sessions = yield q(`DELETE FROM @sessions WHERE id IN ${list(ids, 0)} RETURNING id`, ...ids);
  return { threads: sessions.length, turns: turns.length, feedback: feedback.length };
}

export function* forgetIdleThreads(before: number, limit: number, now: number): Steps<Forgotten> {
  const ids = yield* idleSessions(before, limit);
  const gone = yield* deleteSessions(ids);
  if (ids.length === 0) return gone;
  // One statement for the batch's marks: on PostgreSQL one round trip, not one per thread.
  yield q(
    `INSERT INTO @forgotten (session_id, forgotten_at)
     VALUES ${ids.map((_, i) => `($${i + 2}, $1)`).join(', ')}
     ON CONFLICT (session_id) DO UPDATE SET forgotten_at = excluded.forgotten_at`,
    now,
    ...ids,
  );
  return gone;
}

export function* forgetIdleTranscripts(before: number, limit: number): Steps<number> {
  const threads = yield q(
    `SELECT surface, workspace_id, thread_id FROM @tthreads WHERE updated_at < $1
     ORDER BY updated_at LIMIT $2`,
    before,
    limit,
  );
  for (const t of threads) {
    const key = [text(t, 'surface'), text(t, 'workspace_id'), text(t, 'thread_id')];
    yield q('DELETE FROM @tmessages WHERE surface = $1 AND workspace_id = $2 AND thread_id = $3', ...key);
    yield q('DELETE FROM @tthreads WHERE surface = $1 AND workspace_id = $2 AND thread_id = $3', ...key);
  }
  return threads.length;
}

export function* forgottenAt(sessionId: string): Steps<number | undefined> {
  const [row] = yield q('SELECT forgotten_at FROM @forgotten WHERE session_id = $1', sessionId);
  return row === undefined ? undefined : (integerOrNull(row, 'forgotten_at') ?? undefined);
}

export function* clearForgotten(sessionId: string): Steps<void> {
  yield q('DELETE FROM @forgotten WHERE session_id = $1', sessionId);
}

export function* pruneForgotten(before: number): Steps<number> {
  const rows = yield q('DELETE FROM @forgotten WHERE forgotten_at < $1 RETURNING session_id', before);
  return rows.length;
}

/** The actor of a turn's metadata (SQLite gives JSON text, PostgreSQL the parsed jsonb). */
function actorOf(row: Row): { id?: unknown; email?: unknown } | undefined {
  const raw = row.metadata;
  let metadata: unknown = raw;
  if (typeof raw === 'string') {
    try {
      metadata = JSON.parse(raw);
    } catch {
      return undefined;
    }
  }
  const actor = (metadata as Record<string, unknown> | null)?.['agentkourier.dev/actor'];
  return typeof actor === 'object' && actor !== null
    ? (actor as { id?: unknown; email?: unknown })
    : undefined;
}

function isPerson(actor: { id?: unknown; email?: unknown } | undefined, person: Person): boolean {
  if (actor === undefined) return false;
  if ('userId' in person) return actor.id === person.userId;
  return typeof actor.email === 'string' && actor.email.toLowerCase() === person.email.toLowerCase();
}

/**
 * A label line names a person as `Name (<user id>) <email>`: a turn whose text holds that
 * (their own message, or a reply of theirs carried into another's turn) holds their words.
 */
function mentionOf(person: Person): string {
  return 'userId' in person ? `(${person.userId})` : `<${person.email}>`;
}

/** How a pending erasure names its person (migration 11). */
function personKey(person: Person): string {
  return 'userId' in person ? `user:${person.userId}` : `email:${person.email.toLowerCase()}`;
}

function personOfKey(key: string): Person | undefined {
  if (key.startsWith('user:')) return { userId: key.slice('user:'.length) };
  if (key.startsWith('email:')) return { email: key.slice('email:'.length) };
  return undefined;
}

/**
 * Of the threads the person started, those free to delete now, row-locked: none answering (no
 * turn but settled ones, no task running that is not paused on a question). The lock re-reads
 * the session row's version and turn counter, so a turn added or a task taken meanwhile (both
 * write that row) keeps its thread for the next try.
 */
function* quietThreads(ids: string[]): Steps<{ quiet: string[]; answering: number }> {
  if (ids.length === 0) return { quiet: [], answering: 0 };
  const rows = yield q(
    `SELECT s.id, s.version, s.turn_seq FROM @sessions s
     WHERE s.id IN ${list(ids, 0)}
       AND (s.task IS NULL OR s.question IS NOT NULL)
       AND NOT EXISTS (SELECT 1 FROM @turns t WHERE t.session_id = s.id AND t.state <> 'settled')`,
    ...ids,
  );
  const quiet: string[] = [];
  for (const row of rows) {
    const locked = yield q(
      'UPDATE @sessions SET version = version WHERE id = $1 AND version = $2 AND turn_seq = $3 RETURNING id',
      text(row, 'id'),
      integer(row, 'version'),
      integer(row, 'turn_seq'),
    );
    if (locked.length > 0) quiet.push(text(row, 'id'));
  }
  return { quiet, answering: ids.length - quiet.length };
}

/**
 * Erases what is the person's now, and leaves what is still answering: a thread of theirs
 * with a turn in flight, and a turn of theirs (or one carrying their reply) not settled, wait
 * until their answer ends; the erasure is then kept (pending_erasures) for the retention sweep
 * to run again. An erasure with nothing left waiting is no longer kept.
 */
export function* erasePerson(person: Person, now: number): Steps<Erased> {
  const needle = 'userId' in person ? person.userId : person.email;
  // Candidates by a substring both databases match alike; the actor is then checked exactly.
  const rows = yield q(
    `SELECT id, session_id, seq, text, metadata, state FROM @turns WHERE LOWER(text) LIKE $1`,
    `%${needle.toLowerCase().replaceAll('%', '').replaceAll('_', '')}%`,
  );
  const started = new Set<string>();
  const cleared: string[] = [];
  let turnsWaiting = 0;
  for (const row of rows) {
    const authored = isPerson(actorOf(row), person);
    if (authored && integer(row, 'seq') === 1) started.add(text(row, 'session_id'));
    else if (authored || text(row, 'text').toLowerCase().includes(mentionOf(person).toLowerCase())) {
      if (text(row, 'state') === 'settled') cleared.push(text(row, 'id'));
      else turnsWaiting += 1;
    }
  }
  const { quiet, answering } = yield* quietThreads([...started]);
  const gone = yield* deleteSessions(quiet);
  let wordsCleared = 0;
  for (const id of cleared) {
    const done = yield q(
      `UPDATE @turns SET text = '', label = NULL, metadata = NULL
       WHERE id = $1 AND state = 'settled' RETURNING session_id`,
      id,
    );
    const session = done[0] === undefined ? undefined : text(done[0], 'session_id');
    // A turn in a thread of theirs still answering is counted with that thread when it goes.
    if (session !== undefined && !started.has(session)) wordsCleared += 1;
  }
  let feedback = gone.feedback;
  if ('userId' in person) {
    const mine = yield q('DELETE FROM @feedback WHERE actor_id = $1 RETURNING turn_id', person.userId);
    feedback += mine.length;
  }
  const links = yield* removePersonLinks(person);
  const waiting = answering + turnsWaiting;
  if (waiting > 0)
    yield q(
      `INSERT INTO @erasures (person, requested_at) VALUES ($1, $2)
       ON CONFLICT (person) DO NOTHING`,
      personKey(person),
      now,
    );
  else yield q('DELETE FROM @erasures WHERE person = $1', personKey(person));
  return { ...gone, feedback, wordsCleared, links, waiting };
}

/** The people whose erasure waits for an answer to end, oldest request first. */
export function* pendingErasures(): Steps<Person[]> {
  const rows = yield q('SELECT person FROM @erasures ORDER BY requested_at, person');
  return rows.map((r) => personOfKey(text(r, 'person'))).filter((p): p is Person => p !== undefined);
}

export function* threadCount(): Steps<number> {
  const [row] = yield q('SELECT COUNT(*) AS n FROM @sessions');
  return row === undefined ? 0 : integer(row, 'n');
}

/**
 * A settled turn's words are needed no more: a redelivery is recognised by its ids, a resend
 * only ever sends a turn not settled (a reply carried into another turn travels in that turn's
 * own text). The partial index turns_words (migration 9) holds only the turns still to clear.
 */
export function* clearSettledWords(before: number, limit: number): Steps<number> {
  const rows = yield q(
    `UPDATE @turns SET text = '', label = NULL, metadata = NULL
     WHERE id IN (
       SELECT id FROM @turns
       WHERE state = 'settled' AND text <> '' AND updated_at < $1
       ORDER BY updated_at
       LIMIT $2)
     RETURNING id`,
    before,
    limit,
  );
  return rows.length;
}

export class StepsRetentionStore implements RetentionStore {
  readonly #runner: StepsRunner;
  readonly #bytes: () => Promise<number>;

  /** `bytes`: the store's size on disk, asked of the database in its own terms. */
  constructor(runner: StepsRunner, bytes: () => Promise<number>) {
    this.#runner = runner;
    this.#bytes = bytes;
  }

  forgetIdleThreads(before: number, limit: number, now: number): Promise<Forgotten> {
    return this.#runner.run('forgetIdleThreads', forgetIdleThreads(before, limit, now), { write: true });
  }

  forgetIdleTranscripts(before: number, limit: number): Promise<number> {
    return this.#runner.run('forgetIdleTranscripts', forgetIdleTranscripts(before, limit), { write: true });
  }

  forgottenAt(sessionId: string): Promise<number | undefined> {
    return this.#runner.run('forgottenAt', forgottenAt(sessionId), { write: false });
  }

  clearForgotten(sessionId: string): Promise<void> {
    return this.#runner.run('clearForgotten', clearForgotten(sessionId), { write: true });
  }

  clearSettledWords(before: number, limit: number): Promise<number> {
    return this.#runner.run('clearSettledWords', clearSettledWords(before, limit), { write: true });
  }

  pruneForgotten(before: number): Promise<number> {
    return this.#runner.run('pruneForgotten', pruneForgotten(before), { write: true });
  }

  erasePerson(person: Person, now: number): Promise<Erased> {
    return this.#runner.run('erasePerson', erasePerson(person, now), { write: true });
  }

  pendingErasures(): Promise<Person[]> {
    return this.#runner.run('pendingErasures', pendingErasures(), { write: false });
  }

  async size(): Promise<{ threads: number; bytes: number }> {
    const threads = await this.#runner.run('threadCount', threadCount(), { write: false });
    return { threads, bytes: await this.#bytes() };
  }
}
