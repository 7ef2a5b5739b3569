import { createHash } from 'node:crypto';
import { Cron } from 'croner';
import type { Logger } from 'pino';
import type { Clock } from '../core/clock.js';
import type { TriggerStore } from '../core/trigger-store.js';
import type {
  TriggerConfig,
  TriggerDirectory,
  TriggerObserver,
  TriggerPlace,
  TriggerSchedule,
} from '../core/triggers.js';
import type { ScheduleRun } from './summary.js';
import type { WorkPayload } from './work-payload.js';

/**
 * Schedule triggers: a cron expression in a time zone, one new thread per tick (croner computes
 * the ticks; five fields, minute precision). Every replica runs this loop; a tick is claimed in
 * the store (its last run moves forward in one conditional update), so exactly one replica runs
 * it, and a tick that passed while every replica was down is run when one starts again — those
 * of the last `catchUpWindowMs`, at most `maxCatchUp` of them; older ones are skipped, counted
 * and logged. A new or changed schedule starts from the moment it is first seen.
 */

export interface SchedulerOptions {
  directory: TriggerDirectory;
  store: TriggerStore;
  place(trigger: TriggerConfig): TriggerPlace | undefined;
  clock: Clock;
  logger: Logger;
  observer?: TriggerObserver;
  /** Called after a tick was claimed (the worker does its work). */
  ran(): void;
  /** The loop looks again at least this often (a surface that came up, a store that failed). */
  recheckMs?: number;
  catchUpWindowMs?: number;
  maxCatchUp?: number;
}

const DAY = 24 * 60 * 60_000;
/** Ticks computed per schedule and round at most (a per-minute schedule after a week is 10k). */
const MAX_TICKS = 20_000;

/** Validates a schedule: throws (RangeError, TypeError) for a bad expression or time zone. */
export function compileSchedule(schedule: TriggerSchedule): Cron {
  const cron = new Cron(schedule.cron, { timezone: schedule.timeZone, mode: '5-part', paused: true });
  // croner checks the time zone only when it computes a date.
  cron.nextRun(new Date(0));
  return cron;
}

export function scheduleFingerprint(schedule: TriggerSchedule): string {
  return createHash('sha256')
    .update(JSON.stringify([schedule.cron, schedule.timeZone]))
    .digest('hex')
    .slice(0, 32);
}

export class Scheduler {
  readonly #o: SchedulerOptions;
  readonly #log: Logger;
  readonly #crons = new Map<string, { fingerprint: string; cron: Cron }>();
  #wake = new AbortController();
  #stop = new AbortController();
  #loop: Promise<void> | undefined;
  #unsubscribe: (() => void) | undefined;

  constructor(options: SchedulerOptions) {
    this.#o = options;
    this.#log = options.logger.child({ component: 'trigger-scheduler' });
  }

  start(): void {
    this.#stop = new AbortController();
    this.#unsubscribe = this.#o.directory.onChange(() => this.#wake.abort());
    this.#loop = this.#run();
  }

  async stop(): Promise<void> {
    this.#unsubscribe?.();
    this.#stop.abort();
    this.#wake.abort();
    await this.#loop;
  }

  /** Runs one round now (tests): claims every due tick. */
  async round(): Promise<number> {
    let next = Number.POSITIVE_INFINITY;
    const now = this.#o.clock.now();
    const present = new Set(this.#o.directory.list().map((t) => `${t.binding}/${t.name}`));
    for (const id of this.#crons.keys()) if (!present.has(id)) this.#crons.delete(id);
    for (const trigger of this.#o.directory.list()) {
      if (trigger.kind !== 'schedule' || trigger.schedule === undefined || trigger.problem !== undefined)
        continue;
      try {
        next = Math.min(next, await this.#schedule(trigger, trigger.schedule, now));
      } catch (error) {
        this.#log.warn(
          {
            binding: trigger.binding,
            trigger: trigger.name,
            err: error instanceof Error ? error.name : 'error',
          },
          'could not run a schedule; will try again',
        );
      }
    }
    return next;
  }

  async #run(): Promise<void> {
    const recheck = this.#o.recheckMs ?? 30_000;
    while (!this.#stop.signal.aborted) {
      this.#wake = new AbortController();
      const next = await this.round();
      const wait = Math.max(0, Math.min(recheck, next - this.#o.clock.now()));
      await this.#o.clock
        .sleep(wait, AbortSignal.any([this.#wake.signal, this.#stop.signal]))
        .catch(() => undefined);
    }
  }

  /** Claims the due ticks of one schedule; returns when its next tick is. */
  async #schedule(trigger: TriggerConfig, schedule: TriggerSchedule, now: number): Promise<number> {
    const id = `${trigger.binding}/${trigger.name}`;
    const fingerprint = scheduleFingerprint(schedule);
    let compiled = this.#crons.get(id);
    if (compiled?.fingerprint !== fingerprint) {
      compiled = { fingerprint, cron: compileSchedule(schedule) };
      this.#crons.set(id, compiled);
    }
    const { cron } = compiled;
    const nextTick = cron.nextRun(new Date(now))?.getTime() ?? Number.POSITIVE_INFINITY;
    const place = this.#o.place(trigger);
    // No surface for its threads yet: the ticks wait (and are caught up once there is one).
    if (place === undefined) return nextTick;
    const state = await this.#o.store.anchorSchedule(trigger.binding, trigger.name, fingerprint, now);
    const due: number[] = [];
    let from = new Date(Math.max(state.anchorAt, state.lastRunAt ?? state.anchorAt));
    for (let i = 0; i < MAX_TICKS; i++) {
      const tick = cron.nextRun(from);
      if (tick === null || tick.getTime() > now) break;
      due.push(tick.getTime());
      from = tick;
    }
    const window = this.#o.catchUpWindowMs ?? DAY;
    const max = this.#o.maxCatchUp ?? 10;
    const runnable = due.filter((t) => t > now - window).slice(-max);
    const skipped = due.length - runnable.length;
    const scope = { workspaceId: place.workspaceId, binding: trigger.binding, trigger: trigger.name };
    if (skipped > 0) {
      const lastSkipped = due[due.length - runnable.length - 1] ?? 0;
      // Moves the last run past them without running them, so they are not counted again.
      if (await this.#o.store.skipScheduleRuns({ scope, runAt: lastSkipped, fingerprint, now })) {
        this.#log.warn(
          { binding: trigger.binding, trigger: trigger.name, skipped },
          'schedule ticks missed while no replica ran were too old to run; skipped',
        );
        for (let i = 0; i < skipped; i++)
          this.#o.observer?.triggerDelivery(trigger.binding, 'schedule', 'skipped');
      }
    }
    for (const runAt of runnable) {
      const run: ScheduleRun = {
        scheduledFor: new Date(runAt).toISOString(),
        cron: schedule.cron,
        timeZone: schedule.timeZone,
      };
      const payload: WorkPayload = { type: 'schedule', place, run };
      if (await this.#o.store.recordScheduleRun({ scope, runAt, fingerprint, payload, now })) {
        this.#log.info(
          { binding: trigger.binding, trigger: trigger.name, runAt: run.scheduledFor },
          'schedule ran',
        );
        this.#o.observer?.triggerDelivery(trigger.binding, 'schedule', 'ran');
        this.#o.ran();
      }
    }
    return nextTick;
  }
}
