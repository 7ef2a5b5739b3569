import { DatabaseSync } from 'node:sqlite';
import { describe, expect, it } from 'vitest';
import { PositionalStatements, toPositional } from './positional.js';

describe('named parameters bound by position', () => {
  it('numbers each distinct name once, in order of first use', () => {
    expect(toPositional('UPDATE t SET a = :a, b = :b, at = :now WHERE id = :id AND at < :now')).toStrictEqual(
      {
        text: 'UPDATE t SET a = ?1, b = ?2, at = ?3 WHERE id = ?4 AND at < ?3',
        names: ['a', 'b', 'now', 'id'],
      },
    );
  });

  it('leaves what is quoted as it is, doubled quotes included', () => {
    const sql = `SELECT ':no', 'it''s :not', "col:x" FROM t WHERE state <> 'settled' AND id = :id`;
    expect(toPositional(sql)).toStrictEqual({
      text: `SELECT ':no', 'it''s :not', "col:x" FROM t WHERE state <> 'settled' AND id = ?1`,
      names: ['id'],
    });
  });

  it('runs against SQLite as the named statement would: missing names are NULL, values keep their types', () => {
    // (node:sqlite's rows have no prototype: they are compared as plain objects.)
    const db = new DatabaseSync(':memory:');
    db.exec('CREATE TABLE t (id TEXT PRIMARY KEY, n INTEGER, s TEXT, b BLOB, x TEXT) STRICT');
    const statements = new PositionalStatements(db);
    const insert = 'INSERT INTO t (id, n, s, b, x) VALUES (:id, :n, :s, :b, :x)';
    expect(statements.run(insert, { id: 'a', n: 7, s: "it's", b: new Uint8Array([1, 2]) }).changes).toBe(1);
    expect(statements.run(insert, { id: 'b', n: null, s: ':s', x: 'y' }).changes).toBe(1);
    const read = 'SELECT * FROM t WHERE id = :id';
    expect({ ...statements.get(read, { id: 'a' }) }).toStrictEqual({
      id: 'a',
      n: 7,
      s: "it's",
      b: new Uint8Array([1, 2]),
      x: null,
    });
    expect({ ...statements.get(read, { id: 'b' }) }).toStrictEqual({
      id: 'b',
      n: null,
      s: ':s',
      b: null,
      x: 'y',
    });
    expect(
      statements
        .all('SELECT id FROM t WHERE n IS :n OR x = :x ORDER BY id', { n: 7, x: 'y' })
        .map((r) => ({ ...r })),
    ).toStrictEqual([{ id: 'a' }, { id: 'b' }]);
    db.close();
  });
});
