import type { DatabaseSync, SQLInputValue, StatementSync } from 'node:sqlite';
import type { SessionKey } from '../../core/store.js';
import {
  type ClaimedGroup,
  type DeliveryInput,
  type DeliveryResult,
  type ScheduleRunInput,
  type ScheduleState,
  type TriggerActivity,
  type TriggerGroup,
  TriggerLeaseLostError,
  type TriggerStore,
} from '../../core/trigger-store.js';
import { storeFailure } from '../rows.js';
import * as Q from '../trigger-queries.js';

/**
 * The trigger store on the session store's SQLite database (SqliteStore.triggers()). Each method
 * runs its statements synchronously, inside BEGIN IMMEDIATE when it writes, so nothing else in
 * the process interleaves with it (the same rule as the session store).
 */
export class SqliteTriggerStore implements TriggerStore {
  readonly #db: DatabaseSync;
  readonly #statements = new Map<string, StatementSync>();

  constructor(db: DatabaseSync) {
    this.#db = db;
  }

  async recordDelivery(input: DeliveryInput): Promise<DeliveryResult> {
    return this.#write('recordDelivery', Q.recordDelivery(input));
  }

  async recordTriggerActivity(binding: string, trigger: string, result: string, now: number): Promise<void> {
    this.#write('recordTriggerActivity', Q.recordActivity(binding, trigger, result, now));
  }

  async triggerActivity(): Promise<TriggerActivity[]> {
    return this.#read('triggerActivity', Q.listActivity());
  }

  async anchorSchedule(
    binding: string,
    trigger: string,
    fingerprint: string,
    now: number,
  ): Promise<ScheduleState> {
    return this.#write('anchorSchedule', Q.anchorSchedule(binding, trigger, fingerprint, now));
  }

  async recordScheduleRun(input: ScheduleRunInput): Promise<boolean> {
    return this.#write('recordScheduleRun', Q.recordScheduleRun(input));
  }

  async skipScheduleRuns(input: Omit<ScheduleRunInput, 'payload'>): Promise<boolean> {
    return this.#write('skipScheduleRuns', Q.skipScheduleRuns(input));
  }

  async claimTriggerWork(owner: string, now: number, ttlMs: number, limit: number): Promise<ClaimedGroup[]> {
    return this.#write('claimTriggerWork', Q.claimWork(owner, now, ttlMs, limit));
  }

  async startTriggerWork(
    workId: string,
    groupId: string,
    owner: string,
    now: number,
    ttlMs: number,
  ): Promise<void> {
    const started = this.#write('startTriggerWork', Q.startWork(workId, groupId, owner, now, ttlMs));
    if (!started) throw new TriggerLeaseLostError(groupId, owner);
  }

  async setTriggerThread(groupId: string, owner: string, thread: SessionKey, now: number): Promise<void> {
    if (!this.#write('setTriggerThread', Q.setThread(groupId, owner, thread, now)))
      throw new TriggerLeaseLostError(groupId, owner);
  }

  async finishTriggerWork(
    workId: string,
    groupId: string,
    owner: string,
    outcome: 'done' | 'failed',
    now: number,
  ): Promise<void> {
    if (!this.#write('finishTriggerWork', Q.finishWork(workId, groupId, owner, outcome, now)))
      throw new TriggerLeaseLostError(groupId, owner);
  }

  async deferTriggerWork(
    workId: string,
    groupId: string,
    owner: string,
    nextAt: number,
    now: number,
  ): Promise<void> {
    if (!this.#write('deferTriggerWork', Q.deferWork(workId, groupId, owner, nextAt, now)))
      throw new TriggerLeaseLostError(groupId, owner);
  }

  async releaseTriggerGroup(groupId: string, owner: string): Promise<void> {
    this.#write('releaseTriggerGroup', Q.releaseGroup(groupId, owner));
  }

  async getTriggerGroup(groupId: string): Promise<TriggerGroup | undefined> {
    return this.#read('getTriggerGroup', Q.getGroup(groupId));
  }

  async pruneTriggers(workBefore: number, groupsBefore: number): Promise<number> {
    return this.#write('pruneTriggers', Q.prune(workBefore, groupsBefore));
  }

  #read<T>(operation: string, steps: Q.Steps<T>): T {
    try {
      return this.#run(steps);
    } catch (cause) {
      throw storeFailure(`sqlite trigger store: ${operation}`, cause);
    }
  }

  #write<T>(operation: string, steps: Q.Steps<T>): T {
    try {
      this.#db.exec('BEGIN IMMEDIATE');
      try {
        const result = this.#run(steps);
        this.#db.exec('COMMIT');
        return result;
      } catch (error) {
        try {
          if (this.#db.isTransaction) this.#db.exec('ROLLBACK');
        } catch {}
        throw error;
      }
    } catch (cause) {
      throw storeFailure(`sqlite trigger store: ${operation}`, cause);
    }
  }

  #run<T>(steps: Q.Steps<T>): T {
    let next = steps.next();
    while (next.done !== true) {
      const query = next.value;
      const rows = this.#statement(query.sql).all(...(query.params as SQLInputValue[]));
      next = steps.next(rows);
    }
    return next.value;
  }

  #statement(sql: string): StatementSync {
    let statement = this.#statements.get(sql);
    if (statement === undefined) {
      statement = this.#db.prepare(Q.render(sql, (name) => name, '?'));
      this.#statements.set(sql, statement);
    }
    return statement;
  }
}
