import { createHash } from 'node:crypto';
import { StoreError } from '../core/errors.js';
import type {
  DeliveryInput,
  DeliveryOutcome,
  DeliveryResult,
  ScheduleRunInput,
  ScheduleState,
  TriggerActivity,
  TriggerScope,
  TriggerWorkKind,
} from '../core/trigger-store.js';
import { integer, integerOrNull, q, type Steps, text, textOrNull, unique } from './sql-steps.js';

export { type Query, type Row, render, type Steps, TRIGGER_TABLES } from './sql-steps.js';
export * from './trigger-outbox.js';

/**
 * The trigger store's deliveries, activity and schedules (statements as generators, see
 * sql-steps.ts). PostgreSQL runs a delivery and a schedule's run after taking the Binding's
 * advisory lock, so two replicas counting the storm limit, or creating the same group, go one
 * after the other; SQLite's write lock does the same.
 */

/** Group keys are kept this long in the table (the id is derived from the whole key). */
const GROUP_KEY_KEPT = 512;

function digest(parts: readonly unknown[]): string {
  return createHash('sha256').update(JSON.stringify(parts)).digest('hex').slice(0, 40);
}

/** A group's id: its scope (workspace, Binding, trigger) and key, hashed. */
export function groupIdOf(scope: TriggerScope, groupKey: string): string {
  return `g${digest([scope.workspaceId, scope.binding, scope.trigger, groupKey])}`;
}

export function scheduleGroupKey(runAt: number): string {
  return `schedule:${new Date(runAt).toISOString()}`;
}

// ---- recordDelivery -----------------------------------------------------------------------------

export function* recordDelivery(input: DeliveryInput): Steps<DeliveryResult> {
  const { scope, now, limits } = input;
  const id = groupIdOf(scope, input.groupKey);
  const firing = unique(input.alerts.filter((a) => a.status === 'firing').map((a) => a.identity));
  const resolved = unique(input.alerts.filter((a) => a.status === 'resolved').map((a) => a.identity));
  const [row] = yield q('SELECT * FROM @groups WHERE id = $1', id);
  let stormOf = row === undefined ? null : textOrNull(row, 'storm_of');
  let fresh = row === undefined;
  if (row !== undefined && firing.length > 0) {
    const resolvedAt = integerOrNull(row, 'resolved_at');
    // Long after it resolved, a group firing again is a new incident: a new thread.
    if (
      text(row, 'state') === 'resolved' &&
      resolvedAt !== null &&
      resolvedAt <= now - limits.reopenAfterMs
    ) {
      yield q('DELETE FROM @alerts WHERE group_id = $1', id);
      fresh = true;
    }
  }
  if (fresh && firing.length === 0) {
    yield* upsertActivity(scope, 'ignored', now);
    return { outcome: 'ignored', groupId: id, newFiring: [], newlyResolved: [] };
  }
  if (fresh) {
    stormOf = yield* stormFor(scope, id, input, now);
    if (row === undefined) {
      yield q(
        `INSERT INTO @groups (id, workspace_id, binding, trigger_name, group_key, episode, storm, storm_of,
                              thread, state, resolved_at, opened_at, work_seq, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, 1, 0, $6, NULL, 'firing', NULL, $7, 0, $7, $7)`,
        id,
        scope.workspaceId,
        scope.binding,
        scope.trigger,
        input.groupKey.slice(0, GROUP_KEY_KEPT),
        stormOf,
        now,
      );
    } else {
      yield q(
        `UPDATE @groups SET episode = episode + 1, thread = NULL, state = 'firing', resolved_at = NULL,
                            storm_of = $2, opened_at = $3, updated_at = $3
         WHERE id = $1`,
        id,
        stormOf,
        now,
      );
    }
  }

  const newFiring: string[] = [];
  if (firing.length > 0) {
    const values = firing.map((_, i) => `($1, $${i + 3}, 'firing', $2)`).join(', ');
    const rows = yield q(
      `INSERT INTO @alerts (group_id, identity, state, created_at) VALUES ${values}
       ON CONFLICT DO NOTHING RETURNING identity`,
      id,
      now,
      ...firing,
    );
    newFiring.push(...rows.map((r) => text(r, 'identity')));
  }
  const newlyResolved: string[] = [];
  if (resolved.length > 0 || input.resolveAll === true) {
    const rows =
      input.resolveAll === true
        ? yield q(
            `UPDATE @alerts SET state = 'resolved' WHERE group_id = $1 AND state = 'firing' RETURNING identity`,
            id,
          )
        : yield q(
            `UPDATE @alerts SET state = 'resolved'
             WHERE group_id = $1 AND state = 'firing' AND identity IN (${resolved.map((_, i) => `$${i + 2}`).join(', ')})
             RETURNING identity`,
            id,
            ...resolved,
          );
    newlyResolved.push(...rows.map((r) => text(r, 'identity')));
  }
  let allResolved = false;
  if (newlyResolved.length > 0) {
    const [count] = yield q(`SELECT COUNT(*) AS n FROM @alerts WHERE group_id = $1 AND state = 'firing'`, id);
    allResolved = integer(count ?? {}, 'n') === 0;
  }
  newFiring.sort();
  newlyResolved.sort();
  if (newFiring.length > 0 || newlyResolved.length > 0) {
    yield q(
      `UPDATE @groups SET state = $2, resolved_at = $3, updated_at = $4 WHERE id = $1`,
      id,
      allResolved ? 'resolved' : 'firing',
      allResolved ? now : null,
      now,
    );
  }

  let outcome: DeliveryOutcome;
  const payload = JSON.stringify(input.payload ?? null);
  if (stormOf !== null) {
    if (newFiring.length > 0 || newlyResolved.length > 0) {
      yield* addWork(stormOf, 'note', id, [...newFiring, ...newlyResolved], allResolved, payload, now);
    }
    outcome = fresh ? 'throttled' : pick(newFiring, newlyResolved);
  } else {
    if (fresh) yield* addWork(id, 'open', id, newFiring, false, payload, now);
    else if (newFiring.length > 0) yield* addWork(id, 'turn', id, newFiring, false, payload, now);
    if (newlyResolved.length > 0)
      yield* addWork(id, 'resolved', id, newlyResolved, allResolved, payload, now);
    outcome = fresh ? 'opened' : pick(newFiring, newlyResolved);
  }
  yield* upsertActivity(scope, outcome, now);
  return { outcome, groupId: id, newFiring, newlyResolved };
}

function pick(newFiring: string[], newlyResolved: string[]): DeliveryOutcome {
  if (newFiring.length > 0) return 'continued';
  if (newlyResolved.length > 0) return 'resolved';
  return 'duplicate';
}

/**
 * The storm thread a new group joins when its Binding opened its limit of threads in the last
 * minute, or null when it gets a thread of its own. A storm thread takes groups while it was
 * used within the storm window; after that a new one starts.
 */
function* stormFor(scope: TriggerScope, id: string, input: DeliveryInput, now: number): Steps<string | null> {
  const [count] = yield q(
    `SELECT COUNT(*) AS n FROM @groups
     WHERE binding = $1 AND storm = 0 AND storm_of IS NULL AND opened_at > $2 AND id <> $3`,
    scope.binding,
    now - 60_000,
    id,
  );
  if (integer(count ?? {}, 'n') < input.limits.threadsPerMinute) return null;
  const [storm] = yield q(
    `SELECT id FROM @groups
     WHERE workspace_id = $1 AND binding = $2 AND trigger_name = $3 AND storm = 1 AND updated_at > $4
     ORDER BY created_at DESC LIMIT 1`,
    scope.workspaceId,
    scope.binding,
    scope.trigger,
    now - input.limits.stormWindowMs,
  );
  if (storm !== undefined) return text(storm, 'id');
  const stormId = `s${digest([scope.workspaceId, scope.binding, scope.trigger, 'storm', now, id])}`;
  yield q(
    `INSERT INTO @groups (id, workspace_id, binding, trigger_name, group_key, episode, storm, storm_of,
                          thread, state, resolved_at, opened_at, work_seq, created_at, updated_at)
     VALUES ($1, $2, $3, $4, '(storm)', 1, 1, NULL, NULL, 'firing', NULL, $5, 0, $5, $5)`,
    stormId,
    scope.workspaceId,
    scope.binding,
    scope.trigger,
    now,
  );
  yield* addWork(stormId, 'open', stormId, [], false, JSON.stringify(input.stormPayload ?? null), now);
  return stormId;
}

function* addWork(
  groupId: string,
  kind: TriggerWorkKind,
  sourceGroupId: string,
  identities: string[],
  allResolved: boolean,
  payload: string,
  now: number,
): Steps<void> {
  const [counter] = yield q(
    'UPDATE @groups SET work_seq = work_seq + 1, updated_at = $2 WHERE id = $1 RETURNING work_seq',
    groupId,
    now,
  );
  if (counter === undefined) throw new StoreError(`trigger group ${groupId} vanished while adding work`);
  const seq = integer(counter, 'work_seq');
  yield q(
    `INSERT INTO @work (id, group_id, seq, kind, source_group_id, identities, all_resolved, payload, state,
                        attempts, next_at, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'pending', 0, $9, $9, $9)`,
    `${groupId}.${seq}`,
    groupId,
    seq,
    kind,
    sourceGroupId,
    JSON.stringify(identities),
    allResolved ? 1 : 0,
    payload,
    now,
  );
}

function* upsertActivity(
  scope: Pick<TriggerScope, 'binding' | 'trigger'>,
  result: string,
  now: number,
): Steps<void> {
  yield q(
    `INSERT INTO @activity (binding, trigger_name, at, result) VALUES ($1, $2, $3, $4)
     ON CONFLICT (binding, trigger_name) DO UPDATE SET at = excluded.at, result = excluded.result`,
    scope.binding,
    scope.trigger,
    now,
    result,
  );
}

export function* recordActivity(binding: string, trigger: string, result: string, now: number): Steps<void> {
  yield* upsertActivity({ binding, trigger }, result, now);
}

export function* listActivity(): Steps<TriggerActivity[]> {
  const rows = yield q('SELECT * FROM @activity ORDER BY binding, trigger_name');
  return rows.map((r) => ({
    binding: text(r, 'binding'),
    trigger: text(r, 'trigger_name'),
    at: integer(r, 'at'),
    result: text(r, 'result'),
  }));
}

// ---- schedules ----------------------------------------------------------------------------------

export function* anchorSchedule(
  binding: string,
  trigger: string,
  fingerprint: string,
  now: number,
): Steps<ScheduleState> {
  // A changed schedule starts over from now: the ticks of the old one are not caught up.
  yield q(
    `INSERT INTO @schedules AS cur (binding, trigger_name, fingerprint, anchor_at, last_run_at)
     VALUES ($1, $2, $3, $4, NULL)
     ON CONFLICT (binding, trigger_name) DO UPDATE
       SET fingerprint = excluded.fingerprint, anchor_at = excluded.anchor_at, last_run_at = NULL
       WHERE cur.fingerprint <> excluded.fingerprint`,
    binding,
    trigger,
    fingerprint,
    now,
  );
  const [row] = yield q(
    'SELECT * FROM @schedules WHERE binding = $1 AND trigger_name = $2',
    binding,
    trigger,
  );
  if (row === undefined)
    throw new StoreError(`schedule ${binding}/${trigger} vanished right after it was anchored`);
  return {
    fingerprint: text(row, 'fingerprint'),
    anchorAt: integer(row, 'anchor_at'),
    lastRunAt: integerOrNull(row, 'last_run_at'),
  };
}

/**
 * The claim of a tick: moving last_run_at forward to it succeeds for one caller only, and never
 * backwards (an older tick after a newer one ran is refused).
 */
function* claimTick(input: Omit<ScheduleRunInput, 'payload'>): Steps<boolean> {
  const claimed = yield q(
    `UPDATE @schedules SET last_run_at = $3
     WHERE binding = $1 AND trigger_name = $2 AND fingerprint = $4 AND anchor_at < $3
       AND (last_run_at IS NULL OR last_run_at < $3)
     RETURNING binding`,
    input.scope.binding,
    input.scope.trigger,
    input.runAt,
    input.fingerprint,
  );
  return claimed.length === 1;
}

export function* skipScheduleRuns(input: Omit<ScheduleRunInput, 'payload'>): Steps<boolean> {
  if (!(yield* claimTick(input))) return false;
  yield* upsertActivity(input.scope, 'skipped', input.now);
  return true;
}

export function* recordScheduleRun(input: ScheduleRunInput): Steps<boolean> {
  const { scope, runAt, now } = input;
  if (!(yield* claimTick(input))) return false;
  const id = groupIdOf(scope, scheduleGroupKey(runAt));
  yield q(
    `INSERT INTO @groups (id, workspace_id, binding, trigger_name, group_key, episode, storm, storm_of,
                          thread, state, resolved_at, opened_at, work_seq, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, 1, 0, NULL, NULL, 'resolved', $6, $6, 0, $6, $6)`,
    id,
    scope.workspaceId,
    scope.binding,
    scope.trigger,
    scheduleGroupKey(runAt),
    now,
  );
  yield* addWork(id, 'open', id, [], false, JSON.stringify(input.payload ?? null), now);
  yield* upsertActivity(scope, 'ran', now);
  return true;
}
