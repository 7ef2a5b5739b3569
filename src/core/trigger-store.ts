import { KourierError } from './errors.js';
import type { SessionKey } from './store.js';

/**
 * The durable state of triggers (docs/triggers.md) and the port that keeps it. SQLite and
 * PostgreSQL implement it beside the session store, on the same database, and pass one shared
 * suite (test/store/trigger-contract.ts).
 *
 * The model: an alert *group* (Alertmanager's groupKey, a webhook's dedupe key, a schedule's run)
 * maps to one thread, per workspace, Binding and trigger. The *alerts* of a group are claimed by
 * identity: a claim is a row with a unique key, so of two replicas given the same notification
 * exactly one sees an alert as new, and only it writes the *work* that alert causes (open the
 * thread, a turn, a resolution). Work is an outbox: written with the claims, in one transaction,
 * then done by whichever replica holds the group's lease, and done again after a crash until it
 * is marked done. Nothing is lost between "claimed" and "acted on".
 */

export interface TriggerScope {
  /** The chat workspace the threads live in (Slack team id; 'local' for the web chat). */
  workspaceId: string;
  /** 'namespace/name' of the Binding. */
  binding: string;
  trigger: string;
}

export type AlertState = 'firing' | 'resolved';

/** One alert of a delivery, by the identity that makes a repeat recognisable. */
export interface AlertClaim {
  identity: string;
  status: AlertState;
}

export interface DeliveryLimits {
  /** New threads a Binding's triggers may open in any minute; the rest join the storm thread. */
  threadsPerMinute: number;
  /** A storm thread takes further throttled groups while it was used within this time. */
  stormWindowMs: number;
  /** A group resolved longer ago than this starts a new thread when it fires again. */
  reopenAfterMs: number;
}

export interface DeliveryInput {
  scope: TriggerScope;
  /** The group's key as the sender gave it (hashed into the group's id; kept shortened). */
  groupKey: string;
  alerts: readonly AlertClaim[];
  /** A resolution that names no alerts (a generic webhook): every firing alert of the group resolves. */
  resolveAll?: boolean;
  /** The normalised delivery, for the work to compose messages from (JSON). */
  payload: unknown;
  /** What the open work of a new storm thread carries, should this delivery start one (JSON). */
  stormPayload: unknown;
  limits: DeliveryLimits;
  now: number;
}

/**
 * opened: a new thread. continued: new alerts in a known group (a turn in its thread).
 * resolved: alerts of the group resolved. throttled: a new group beyond the storm limit (an
 * entry in the storm thread). duplicate: nothing new (a repeat, a retry). ignored: nothing to act
 * on (a resolution of a group never seen firing).
 */
export type DeliveryOutcome = 'opened' | 'continued' | 'resolved' | 'throttled' | 'duplicate' | 'ignored';

export interface DeliveryResult {
  outcome: DeliveryOutcome;
  groupId: string;
  /** The alerts this delivery claimed as newly firing, and as newly resolved. */
  newFiring: string[];
  newlyResolved: string[];
}

/**
 * open: post the group's root and send its first turn. turn: new alerts in the thread, as a
 * turn. resolved: a resolution notice (and, if the trigger asks, a turn). note: a throttled
 * group's entry in the storm thread (no agent run).
 */
export type TriggerWorkKind = 'open' | 'turn' | 'resolved' | 'note';

export interface TriggerWork {
  /** Unique; also the chat message id of the turn it sends (S-2: a resend is the same turn). */
  id: string;
  /** The group whose thread the work goes to (for a note: the storm thread's group). */
  groupId: string;
  seq: number;
  kind: TriggerWorkKind;
  /** The group the work is about (the throttled group, for a note; else groupId). */
  sourceGroupId: string;
  /** The alerts it is about. */
  identities: string[];
  /** For a resolution: no alert of the group fires any more. */
  allResolved: boolean;
  payload: unknown;
  /** Attempts started so far: above 0, an earlier attempt may have posted already. */
  attempts: number;
  /** Not tried before this (a transient failure deferred it). */
  nextAt: number;
  createdAt: number;
}

export interface TriggerGroup {
  id: string;
  scope: TriggerScope;
  /** The group key, shortened for storage (the id is derived from the whole key). */
  groupKey: string;
  /** Counts the group's threads: a group that fires again long after it resolved gets a new one. */
  episode: number;
  /** The storm thread of its scope rather than an alert group. */
  storm: boolean;
  /** Set once its root is posted and recorded. */
  thread: SessionKey | null;
  createdAt: number;
}

export interface ClaimedGroup {
  group: TriggerGroup;
  /** Its pending work, in seq order. */
  work: TriggerWork[];
}

/** The last delivery of a trigger, for the Binding's status. */
export interface TriggerActivity {
  binding: string;
  trigger: string;
  at: number;
  result: string;
}

export interface ScheduleRunInput {
  scope: TriggerScope;
  /** The tick being run (ms since epoch): unique per trigger, so a run is claimed once. */
  runAt: number;
  /** The schedule it belongs to (cron and time zone): a run of an older schedule is refused. */
  fingerprint: string;
  payload: unknown;
  now: number;
}

export interface ScheduleState {
  fingerprint: string;
  /** Ticks before this are not run (when the schedule was first seen, or changed). */
  anchorAt: number;
  /** The last tick run, if any. */
  lastRunAt: number | null;
}

export interface TriggerStore {
  /**
   * Claims the alerts of a delivery and writes the work they cause, atomically; a delivery
   * whose alerts are all claimed already is a duplicate and writes nothing but its activity.
   */
  recordDelivery(input: DeliveryInput): Promise<DeliveryResult>;
  /** Records that a trigger was called and how it ended, when nothing else is written (a 400). */
  recordTriggerActivity(binding: string, trigger: string, result: string, now: number): Promise<void>;
  /** The last delivery of every trigger. */
  triggerActivity(): Promise<TriggerActivity[]>;

  /**
   * The schedule's state, anchored at `now` when it is new or its fingerprint changed (so a new
   * schedule does not run the ticks before it existed).
   */
  anchorSchedule(binding: string, trigger: string, fingerprint: string, now: number): Promise<ScheduleState>;
  /** Claims a tick and writes its work; false when it was claimed already (by any replica). */
  recordScheduleRun(input: ScheduleRunInput): Promise<boolean>;
  /** Claims every tick up to `runAt` without running them (too old to catch up). */
  skipScheduleRuns(input: Omit<ScheduleRunInput, 'payload'>): Promise<boolean>;

  /**
   * Leases up to `limit` groups that have pending work due (not deferred to later) and whose
   * lease is free or expired, for `owner` until now + ttlMs; returns them with their work.
   */
  claimTriggerWork(owner: string, now: number, ttlMs: number, limit: number): Promise<ClaimedGroup[]>;
  /**
   * Counts an attempt of a piece of work, before its effect, and renews the group's lease until
   * now + ttlMs. Throws LeaseLostError when `owner` no longer holds the lease (or the work is
   * done already); every write below is fenced the same way.
   */
  startTriggerWork(workId: string, groupId: string, owner: string, now: number, ttlMs: number): Promise<void>;
  /** Records the thread a group's root was posted as. */
  setTriggerThread(groupId: string, owner: string, thread: SessionKey, now: number): Promise<void>;
  /** done: nothing more to do. failed: given up (counted and logged). */
  finishTriggerWork(
    workId: string,
    groupId: string,
    owner: string,
    outcome: 'done' | 'failed',
    now: number,
  ): Promise<void>;
  /** Tries the work again at `nextAt` (a transient failure). */
  deferTriggerWork(
    workId: string,
    groupId: string,
    owner: string,
    nextAt: number,
    now: number,
  ): Promise<void>;
  releaseTriggerGroup(groupId: string, owner: string): Promise<void>;
  /** The group, if it exists (tests and the storm thread's count). */
  getTriggerGroup(groupId: string): Promise<TriggerGroup | undefined>;
  /**
   * Deletes work done or given up before `workBefore`, and groups resolved (or storm threads
   * last used) before `groupsBefore`, with their claims; returns how many rows of work and groups.
   */
  pruneTriggers(workBefore: number, groupsBefore: number): Promise<number>;
}

/** The replica no longer holds a trigger group's lease (or its work is done already): it stops. */
export class TriggerLeaseLostError extends KourierError {
  constructor(groupId: string, owner: string) {
    super('lease_lost', `replica ${owner} no longer holds the lease of trigger group ${groupId}`);
  }
}
