import pg from 'pg';

/**
 * Counts what the PostgreSQL store sends (diagnosis of the replicas benchmark): round trips
 * (every `query` a pool's client runs) and durable commits (an explicit COMMIT, or a write
 * statement run outside a transaction, which PostgreSQL commits, and fsyncs, on its own).
 * node-postgres sends one statement per round trip, so a count of queries is a count of trips.
 *
 * Installed once per process by wrapping pg.Client's query; the counts are read and reset by
 * the caller around a round.
 */
export interface PgCounts {
  roundTrips: number;
  commits: number;
}

const counts: PgCounts = { roundTrips: 0, commits: 0 };
let installed = false;
const inTransaction = new WeakSet<object>();

const WRITE = /^\s*(INSERT|UPDATE|DELETE|WITH)\b/i;

export function countPgQueries(): PgCounts {
  if (installed) return counts;
  installed = true;
  const proto = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
  const original = proto.query;
  proto.query = function counted(this: object, ...args: unknown[]): unknown {
    const first = args[0];
    const text = typeof first === 'string' ? first : (first as { text?: string } | undefined)?.text;
    counts.roundTrips++;
    if (text !== undefined) {
      if (/^\s*BEGIN\b/i.test(text)) inTransaction.add(this);
      else if (/^\s*(COMMIT|ROLLBACK)\b/i.test(text)) {
        inTransaction.delete(this);
        if (/^\s*COMMIT\b/i.test(text)) counts.commits++;
      } else if (!inTransaction.has(this) && WRITE.test(text)) counts.commits++;
    }
    return original.apply(this, args);
  };
  return counts;
}

export function takePgCounts(): PgCounts {
  const taken = { ...counts };
  counts.roundTrips = 0;
  counts.commits = 0;
  return taken;
}
