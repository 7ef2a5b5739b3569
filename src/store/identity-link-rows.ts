import type { IdentityLink, IdentityLinkStore } from '../core/identity-link-store.js';
import { q, ROW_TABLES, type Steps, type StepsRunner } from './sql-steps.js';

/**
 * The sign-in links (src/core/identity-link-store.ts) over statements both databases share, run
 * by the same SQL runner as the installations. A put is an upsert: two replicas refreshing one
 * person's token leave the later one.
 */

export const IDENTITY_LINK_TABLE = ROW_TABLES.links;

function* put(link: IdentityLink): Steps<void> {
  yield q(
    `INSERT INTO @links (subject, provider, person_id, email, key_id, sealed, linked_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
     ON CONFLICT (subject, provider) DO UPDATE SET person_id = excluded.person_id, email = excluded.email,
       key_id = excluded.key_id, sealed = excluded.sealed, linked_at = excluded.linked_at,
       updated_at = excluded.updated_at`,
    link.subject,
    link.provider,
    link.personId,
    link.email,
    link.keyId,
    link.sealed,
    link.linkedAt,
    link.updatedAt,
  );
}

function* get(subject: string, provider: string): Steps<IdentityLink | undefined> {
  const [row] = yield q('SELECT * FROM @links WHERE subject = $1 AND provider = $2', subject, provider);
  return row === undefined ? undefined : linkFromRow(row);
}

function* remove(subject: string, provider: string | undefined): Steps<number> {
  const rows =
    provider === undefined
      ? yield q('DELETE FROM @links WHERE subject = $1 RETURNING subject', subject)
      : yield q(
          'DELETE FROM @links WHERE subject = $1 AND provider = $2 RETURNING subject',
          subject,
          provider,
        );
  return rows.length;
}

/** Erasure (retention-queries.ts erasePerson): every link of the person, by chat id or email. */
export function* removePersonLinks(person: { userId: string } | { email: string }): Steps<number> {
  const rows =
    'userId' in person
      ? yield q('DELETE FROM @links WHERE person_id = $1 RETURNING subject', person.userId)
      : yield q('DELETE FROM @links WHERE LOWER(email) = $1 RETURNING subject', person.email.toLowerCase());
  return rows.length;
}

export class StepsIdentityLinks implements IdentityLinkStore {
  readonly #runner: StepsRunner;

  constructor(runner: StepsRunner) {
    this.#runner = runner;
  }

  get(subject: string, provider: string): Promise<IdentityLink | undefined> {
    return this.#runner.run('getLink', get(subject, provider), { write: false });
  }

  put(link: IdentityLink): Promise<void> {
    return this.#runner.run('putLink', put(link), { write: true });
  }

  remove(subject: string, provider?: string): Promise<number> {
    return this.#runner.run('removeLink', remove(subject, provider), { write: true });
  }
}

function linkFromRow(row: Record<string, unknown>): IdentityLink {
  return {
    subject: String(row.subject),
    provider: String(row.provider),
    personId: String(row.person_id),
    email: String(row.email),
    keyId: String(row.key_id),
    sealed: String(row.sealed),
    linkedAt: Number(row.linked_at),
    updatedAt: Number(row.updated_at),
  };
}

/** The migration's table (the integer type and SQLite's STRICT differ). */
export function identityLinkTables(int: string, strict: string): string {
  return `
    CREATE TABLE ${IDENTITY_LINK_TABLE} (
      subject TEXT NOT NULL,
      provider TEXT NOT NULL,
      person_id TEXT NOT NULL,
      email TEXT NOT NULL,
      key_id TEXT NOT NULL,
      sealed TEXT NOT NULL,
      linked_at ${int} NOT NULL,
      updated_at ${int} NOT NULL,
      PRIMARY KEY (subject, provider)
    )${strict};
    CREATE INDEX identity_links_person ON ${IDENTITY_LINK_TABLE} (person_id);
  `;
}
