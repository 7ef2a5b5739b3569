import type { DatabaseSync, SQLInputValue, StatementSync } from 'node:sqlite';

/**
 * Prepared statements written with named parameters (`:id`) and bound by position. node:sqlite
 * binds a named parameter by looking its name up in the statement, one by one: for the turn
 * insert's eighteen that was most of the statement's cost. So each text is rewritten once, when
 * it is prepared, with a numbered parameter (`?1`) for each distinct name, and a call binds the
 * values in that order. A name the object does not carry is bound as NULL, as node:sqlite leaves
 * an unbound named parameter; a key the text does not name is ignored.
 */

type Params = Record<string, SQLInputValue>;

interface Prepared {
  statement: StatementSync;
  names: readonly string[];
}

export class PositionalStatements {
  readonly #db: DatabaseSync;
  readonly #cache = new Map<string, Prepared>();

  constructor(db: DatabaseSync) {
    this.#db = db;
  }

  get(sql: string, params: Params): Record<string, unknown> | undefined {
    const { statement, names } = this.#prepared(sql);
    return statement.get(...valuesOf(names, params));
  }

  all(sql: string, params: Params): Record<string, unknown>[] {
    const { statement, names } = this.#prepared(sql);
    return statement.all(...valuesOf(names, params));
  }

  run(sql: string, params: Params): { changes: number | bigint } {
    const { statement, names } = this.#prepared(sql);
    return statement.run(...valuesOf(names, params));
  }

  clear(): void {
    this.#cache.clear();
  }

  #prepared(sql: string): Prepared {
    let prepared = this.#cache.get(sql);
    if (prepared === undefined) {
      const { text, names } = toPositional(sql);
      prepared = { statement: this.#db.prepare(text), names };
      this.#cache.set(sql, prepared);
    }
    return prepared;
  }
}

function valuesOf(names: readonly string[], params: Params): SQLInputValue[] {
  const values = new Array<SQLInputValue>(names.length);
  for (let i = 0; i < names.length; i++) values[i] = params[names[i] as string] ?? null;
  return values;
}

/**
 * The text with every `:name` outside a quoted literal or identifier replaced by `?n`, n the
 * name's place among the distinct names (a name used twice is one parameter, as before).
 */
export function toPositional(sql: string): { text: string; names: string[] } {
  const names: string[] = [];
  let text = '';
  let i = 0;
  while (i < sql.length) {
    const ch = sql[i] as string;
    if (ch === "'" || ch === '"') {
      // A quote inside is written twice, so the literal ends at the first lone quote.
      let end = i + 1;
      for (;;) {
        end = sql.indexOf(ch, end);
        if (end === -1) {
          end = sql.length;
          break;
        }
        if (sql[end + 1] !== ch) {
          end += 1;
          break;
        }
        end += 2;
      }
      text += sql.slice(i, end);
      i = end;
      continue;
    }
    const name = ch === ':' ? /^[A-Za-z_][A-Za-z0-9_]*/.exec(sql.slice(i + 1))?.[0] : undefined;
    if (name === undefined) {
      text += ch;
      i += 1;
      continue;
    }
    let index = names.indexOf(name);
    if (index === -1) index = names.push(name) - 1;
    text += `?${index + 1}`;
    i += 1 + name.length;
  }
  return { text, names };
}
