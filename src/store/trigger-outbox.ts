import type { SessionKey } from '../core/store.js';
import type { ClaimedGroup, TriggerGroup } from '../core/trigger-store.js';
import { q, type Steps } from './sql-steps.js';
import { groupFromRow, workFromRow } from './trigger-rows.js';

/**
 * The outbox of the trigger store: leasing groups with work due, counting attempts, recording
 * threads, finishing and deferring work (every write fenced on the group's lease), and pruning.
 */

export function* claimWork(owner: string, now: number, ttlMs: number, limit: number): Steps<ClaimedGroup[]> {
  const groups = yield q(
    `UPDATE @groups SET lease_owner = $1, lease_until = $2
     WHERE id IN (SELECT DISTINCT group_id FROM @work WHERE state = 'pending' AND next_at <= $3 LIMIT $4)
       AND (lease_owner IS NULL OR lease_until <= $3 OR lease_owner = $1)
     RETURNING *`,
    owner,
    now + ttlMs,
    now,
    limit,
  );
  const out: ClaimedGroup[] = [];
  for (const row of groups) {
    const group = groupFromRow(row);
    const work = yield q(
      `SELECT * FROM @work WHERE group_id = $1 AND state = 'pending' ORDER BY seq`,
      group.id,
    );
    out.push({ group, work: work.map(workFromRow) });
  }
  out.sort((a, b) => a.group.createdAt - b.group.createdAt || (a.group.id < b.group.id ? -1 : 1));
  return out;
}

/** The lease check every write of the worker carries: held by `owner`, not expired. */
const LEASED = 'EXISTS (SELECT 1 FROM @groups WHERE id = $2 AND lease_owner = $3 AND lease_until > $4)';

export function* startWork(
  workId: string,
  groupId: string,
  owner: string,
  now: number,
  ttlMs: number,
): Steps<boolean> {
  const renewed = yield q(
    `UPDATE @groups SET lease_until = $4 WHERE id = $1 AND lease_owner = $2 AND lease_until > $3 RETURNING id`,
    groupId,
    owner,
    now,
    now + ttlMs,
  );
  if (renewed.length === 0) return false;
  const rows = yield q(
    `UPDATE @work SET attempts = attempts + 1, updated_at = $4
     WHERE id = $1 AND state = 'pending' AND ${LEASED} RETURNING id`,
    workId,
    groupId,
    owner,
    now,
  );
  return rows.length === 1;
}

export function* setThread(groupId: string, owner: string, thread: SessionKey, now: number): Steps<boolean> {
  const rows = yield q(
    `UPDATE @groups SET thread = $1, updated_at = $4 WHERE id = $2 AND lease_owner = $3 AND lease_until > $4
     RETURNING id`,
    JSON.stringify(thread),
    groupId,
    owner,
    now,
  );
  return rows.length === 1;
}

export function* finishWork(
  workId: string,
  groupId: string,
  owner: string,
  outcome: 'done' | 'failed',
  now: number,
): Steps<boolean> {
  return yield* setPendingWork('state', workId, groupId, owner, now, outcome);
}

export function* deferWork(
  workId: string,
  groupId: string,
  owner: string,
  nextAt: number,
  now: number,
): Steps<boolean> {
  return yield* setPendingWork('next_at', workId, groupId, owner, now, nextAt);
}

/** Sets one column of a pending work item, fenced on its group's lease; false when the lease is gone. */
function* setPendingWork(
  column: 'state' | 'next_at',
  workId: string,
  groupId: string,
  owner: string,
  now: number,
  value: string | number,
): Steps<boolean> {
  const rows = yield q(
    `UPDATE @work SET ${column} = $5, updated_at = $4 WHERE id = $1 AND state = 'pending' AND ${LEASED} RETURNING id`,
    workId,
    groupId,
    owner,
    now,
    value,
  );
  return rows.length === 1;
}

export function* releaseGroup(groupId: string, owner: string): Steps<void> {
  yield q(
    'UPDATE @groups SET lease_owner = NULL, lease_until = NULL WHERE id = $1 AND lease_owner = $2',
    groupId,
    owner,
  );
}

/**
 * Forgets what no delivery can need again: work done or given up before `workBefore`, and
 * groups (with their claims) resolved, or storm threads last used, before `groupsBefore`. A
 * group that fires after that is a new incident anyway (reopenAfterMs is shorter).
 */
export function* prune(workBefore: number, groupsBefore: number): Steps<number> {
  const work = yield q(
    `DELETE FROM @work WHERE state <> 'pending' AND updated_at < $1 RETURNING id`,
    workBefore,
  );
  const gone = `SELECT g.id FROM @groups g
     WHERE (g.state = 'resolved' OR g.storm = 1) AND g.updated_at < $1
       AND NOT EXISTS (SELECT 1 FROM @work w WHERE w.group_id = g.id AND w.state = 'pending')`;
  yield q(`DELETE FROM @alerts WHERE group_id IN (${gone})`, groupsBefore);
  const groups = yield q(`DELETE FROM @groups WHERE id IN (${gone}) RETURNING id`, groupsBefore);
  return work.length + groups.length;
}

export function* getGroup(groupId: string): Steps<TriggerGroup | undefined> {
  const [row] = yield q('SELECT * FROM @groups WHERE id = $1', groupId);
  return row === undefined ? undefined : groupFromRow(row);
}
