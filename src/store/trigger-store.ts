import type { SessionKey } from '../core/store.js';
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
} from '../core/trigger-store.js';
import type { StepsRun, StepsRunner } from './sql-steps.js';
import * as Q from './trigger-queries.js';

/**
 * The TriggerStore port over the statements both databases share (./trigger-queries.ts): each
 * method's steps, whether they write, which Binding they serialise on, and the lease they are
 * fenced on. A database supplies only the runner that executes one method's steps as one
 * transaction (./sql-steps.ts: ./sqlite/steps-runner.ts, ./postgres/steps-runner.ts).
 */

const READ: StepsRun = { write: false };
const WRITE: StepsRun = { write: true };
const onBinding = (binding: string): StepsRun => ({ write: true, lockBinding: binding });

export class StepsTriggerStore implements TriggerStore {
  readonly #runner: StepsRunner;

  constructor(runner: StepsRunner) {
    this.#runner = runner;
  }

  recordDelivery(input: DeliveryInput): Promise<DeliveryResult> {
    return this.#runner.run('recordDelivery', Q.recordDelivery(input), onBinding(input.scope.binding));
  }

  async recordTriggerActivity(binding: string, trigger: string, result: string, now: number): Promise<void> {
    await this.#runner.run('recordTriggerActivity', Q.recordActivity(binding, trigger, result, now), WRITE);
  }

  triggerActivity(): Promise<TriggerActivity[]> {
    return this.#runner.run('triggerActivity', Q.listActivity(), READ);
  }

  anchorSchedule(binding: string, trigger: string, fingerprint: string, now: number): Promise<ScheduleState> {
    return this.#runner.run('anchorSchedule', Q.anchorSchedule(binding, trigger, fingerprint, now), WRITE);
  }

  recordScheduleRun(input: ScheduleRunInput): Promise<boolean> {
    return this.#runner.run('recordScheduleRun', Q.recordScheduleRun(input), onBinding(input.scope.binding));
  }

  skipScheduleRuns(input: Omit<ScheduleRunInput, 'payload'>): Promise<boolean> {
    return this.#runner.run('skipScheduleRuns', Q.skipScheduleRuns(input), onBinding(input.scope.binding));
  }

  claimTriggerWork(owner: string, now: number, ttlMs: number, limit: number): Promise<ClaimedGroup[]> {
    return this.#runner.run('claimTriggerWork', Q.claimWork(owner, now, ttlMs, limit), WRITE);
  }

  async startTriggerWork(
    workId: string,
    groupId: string,
    owner: string,
    now: number,
    ttlMs: number,
  ): Promise<void> {
    const steps = Q.startWork(workId, groupId, owner, now, ttlMs);
    if (!(await this.#runner.run('startTriggerWork', steps, WRITE)))
      throw new TriggerLeaseLostError(groupId, owner);
  }

  async setTriggerThread(groupId: string, owner: string, thread: SessionKey, now: number): Promise<void> {
    const steps = Q.setThread(groupId, owner, thread, now);
    if (!(await this.#runner.run('setTriggerThread', steps, WRITE)))
      throw new TriggerLeaseLostError(groupId, owner);
  }

  async finishTriggerWork(
    workId: string,
    groupId: string,
    owner: string,
    outcome: 'done' | 'failed',
    now: number,
  ): Promise<void> {
    const steps = Q.finishWork(workId, groupId, owner, outcome, now);
    if (!(await this.#runner.run('finishTriggerWork', steps, WRITE)))
      throw new TriggerLeaseLostError(groupId, owner);
  }

  async deferTriggerWork(
    workId: string,
    groupId: string,
    owner: string,
    nextAt: number,
    now: number,
  ): Promise<void> {
    const steps = Q.deferWork(workId, groupId, owner, nextAt, now);
    if (!(await this.#runner.run('deferTriggerWork', steps, WRITE)))
      throw new TriggerLeaseLostError(groupId, owner);
  }

  async releaseTriggerGroup(groupId: string, owner: string): Promise<void> {
    await this.#runner.run('releaseTriggerGroup', Q.releaseGroup(groupId, owner), WRITE);
  }

  getTriggerGroup(groupId: string): Promise<TriggerGroup | undefined> {
    return this.#runner.run('getTriggerGroup', Q.getGroup(groupId), READ);
  }

  pruneTriggers(workBefore: number, groupsBefore: number): Promise<number> {
    return this.#runner.run('pruneTriggers', Q.prune(workBefore, groupsBefore), WRITE);
  }
}
