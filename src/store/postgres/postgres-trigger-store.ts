import type pg from 'pg';
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
 * The trigger store on the session store's PostgreSQL pool and schema (PostgresStore.triggers()).
 * Each method is one transaction at READ COMMITTED. Deliveries and schedule runs first take an
 * advisory lock on their Binding, so replicas counting its storm limit or creating the same group
 * queue behind each other; the outbox's claims are single conditional UPDATEs (a second replica
 * re-checks the lease on the row the first one wrote, and is refused).
 */
export class PostgresTriggerStore implements TriggerStore {
  readonly #pool: pg.Pool;
  readonly #schema: string;
  readonly #sql = new Map<string, string>();

  constructor(pool: pg.Pool, schema: string) {
    this.#pool = pool;
    this.#schema = schema;
  }

  recordDelivery(input: DeliveryInput): Promise<DeliveryResult> {
    return this.#transaction('recordDelivery', Q.recordDelivery(input), input.scope.binding);
  }

  async recordTriggerActivity(binding: string, trigger: string, result: string, now: number): Promise<void> {
    await this.#transaction('recordTriggerActivity', Q.recordActivity(binding, trigger, result, now));
  }

  triggerActivity(): Promise<TriggerActivity[]> {
    return this.#transaction('triggerActivity', Q.listActivity());
  }

  anchorSchedule(binding: string, trigger: string, fingerprint: string, now: number): Promise<ScheduleState> {
    return this.#transaction('anchorSchedule', Q.anchorSchedule(binding, trigger, fingerprint, now));
  }

  recordScheduleRun(input: ScheduleRunInput): Promise<boolean> {
    return this.#transaction('recordScheduleRun', Q.recordScheduleRun(input), input.scope.binding);
  }

  skipScheduleRuns(input: Omit<ScheduleRunInput, 'payload'>): Promise<boolean> {
    return this.#transaction('skipScheduleRuns', Q.skipScheduleRuns(input), input.scope.binding);
  }

  claimTriggerWork(owner: string, now: number, ttlMs: number, limit: number): Promise<ClaimedGroup[]> {
    return this.#transaction('claimTriggerWork', Q.claimWork(owner, now, ttlMs, limit));
  }

  async startTriggerWork(
    workId: string,
    groupId: string,
    owner: string,
    now: number,
    ttlMs: number,
  ): Promise<void> {
    if (!(await this.#transaction('startTriggerWork', Q.startWork(workId, groupId, owner, now, ttlMs))))
      throw new TriggerLeaseLostError(groupId, owner);
  }

  async setTriggerThread(groupId: string, owner: string, thread: SessionKey, now: number): Promise<void> {
    if (!(await this.#transaction('setTriggerThread', Q.setThread(groupId, owner, thread, now))))
      throw new TriggerLeaseLostError(groupId, owner);
  }

  async finishTriggerWork(
    workId: string,
    groupId: string,
    owner: string,
    outcome: 'done' | 'failed',
    now: number,
  ): Promise<void> {
    if (!(await this.#transaction('finishTriggerWork', Q.finishWork(workId, groupId, owner, outcome, now))))
      throw new TriggerLeaseLostError(groupId, owner);
  }

  async deferTriggerWork(
    workId: string,
    groupId: string,
    owner: string,
    nextAt: number,
    now: number,
  ): Promise<void> {
    if (!(await this.#transaction('deferTriggerWork', Q.deferWork(workId, groupId, owner, nextAt, now))))
      throw new TriggerLeaseLostError(groupId, owner);
  }

  async releaseTriggerGroup(groupId: string, owner: string): Promise<void> {
    await this.#transaction('releaseTriggerGroup', Q.releaseGroup(groupId, owner));
  }

  getTriggerGroup(groupId: string): Promise<TriggerGroup | undefined> {
    return this.#transaction('getTriggerGroup', Q.getGroup(groupId));
  }

  pruneTriggers(workBefore: number, groupsBefore: number): Promise<number> {
    return this.#transaction('pruneTriggers', Q.prune(workBefore, groupsBefore));
  }

  async #transaction<T>(operation: string, steps: Q.Steps<T>, lockBinding?: string): Promise<T> {
    let client: pg.PoolClient | undefined;
    let broken: Error | undefined;
    try {
      client = await this.#pool.connect();
      await client.query('BEGIN');
      if (lockBinding !== undefined) {
        await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [
          `agentkourier:triggers:${this.#schema}:${lockBinding}`,
        ]);
      }
      let next = steps.next();
      while (next.done !== true) {
        const result = await client.query<Q.Row>(this.#render(next.value.sql), next.value.params);
        next = steps.next(result.rows);
      }
      await client.query('COMMIT');
      return next.value;
    } catch (error) {
      await client?.query('ROLLBACK').catch((rollbackError: unknown) => {
        broken = rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError));
      });
      throw storeFailure(`postgres trigger store: ${operation}`, error);
    } finally {
      client?.release(broken);
    }
  }

  #render(sql: string): string {
    let rendered = this.#sql.get(sql);
    if (rendered === undefined) {
      rendered = Q.render(sql, (name) => `"${this.#schema}".${name}`, '$');
      this.#sql.set(sql, rendered);
    }
    return rendered;
  }
}
