import { createHash } from 'node:crypto';
import type pg from 'pg';
import type { Row } from '../rows.js';
import { withArrayLiterals } from './array-literal.js';
import type { PostgresSql } from './sql.js';

/** A statement prepared once per connection, under a name derived from its text. */
export type Prepared = { readonly name: string; readonly text: string };
export type PreparedSql = { readonly [K in keyof PostgresSql]: Prepared };

export type Queryable = Pick<pg.PoolClient, 'query'>;

/**
 * Named statements: PostgreSQL parses and plans each once per connection, not at every call.
 * The name is a hash of the text (which holds the schema), so two stores sharing a pool on
 * different schemas never reuse one name for two statements.
 */
export function prepared(sql: PostgresSql): PreparedSql {
  const entries = Object.entries(sql).map(([key, text]) => [
    key,
    { name: `ak_${createHash('sha256').update(text).digest('hex').slice(0, 24)}`, text },
  ]);
  return Object.fromEntries(entries) as PreparedSql;
}

export function runPrepared(
  db: Queryable,
  statement: Prepared,
  values: unknown[],
): Promise<pg.QueryResult<Row>> {
  return db.query<Row>({ name: statement.name, text: statement.text, values: withArrayLiterals(values) });
}
