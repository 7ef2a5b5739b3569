import type { Logger } from 'pino';
import { backoffDelay } from '../core/backoff.js';
import type { Clock } from '../core/clock.js';
import { KourierError } from '../core/errors.js';
import type { Inbound, ReceiveResult } from '../core/ports.js';
import type { SessionKey } from '../core/store.js';
import {
  type ClaimedGroup,
  type TriggerGroup,
  TriggerLeaseLostError,
  type TriggerStore,
  type TriggerWork,
} from '../core/trigger-store.js';
import {
  type PostRef,
  type TriggerChat,
  type TriggerConfig,
  type TriggerDirectory,
  type TriggerMessage,
  type TriggerObserver,
  TriggerPostRefusedError,
} from '../core/triggers.js';
import {
  alertFields,
  moreMessage,
  noteMessage,
  resolvedMessage,
  rootMessage,
  scheduleFields,
  scheduleMessage,
  stormMessage,
} from './summary.js';
import { readWorkPayload, type WorkPayload } from './work-payload.js';

/**
 * Does the work deliveries and schedule runs wrote (the outbox): posts a thread's root, records
 * the thread, hands the engine its turn; posts resolutions and storm entries. Any replica does it:
 * the group's lease in the store says which one, and a replica that dies leaves its groups to
 * the others once the lease expires.
 *
 * Each piece is counted (an attempt) before its effect. A post is stamped with the work's id,
 * so an attempt after a crash first looks for the post (PostRef.recover) instead of posting
 * twice; a turn is the engine's, which takes the same chat message id as the same turn (S-2).
 * A group's work runs in order; a transient failure defers it (with a backoff) and what follows
 * it waits.
 */

export interface WorkerTimings {
  leaseTtlMs: number;
  /** How often the store is looked at for work nobody is doing (a dead replica's, deferred work). */
  scanIntervalMs: number;
  retryBaseMs: number;
  retryMaxMs: number;
  /** Work still failing this long after it was written is given up. */
  giveUpAfterMs: number;
}

export const DEFAULT_WORKER_TIMINGS: WorkerTimings = {
  leaseTtlMs: 60_000,
  scanIntervalMs: 5_000,
  retryBaseMs: 1_000,
  retryMaxMs: 60_000,
  giveUpAfterMs: 60 * 60_000,
};

const DAY = 24 * 60 * 60_000;
/** Done work is kept a week (to read what happened); resolved groups a month. */
const KEEP_WORK_MS = 7 * DAY;
const KEEP_GROUPS_MS = 30 * DAY;
const PRUNE_EVERY_MS = 60 * 60_000;

export interface WorkerDeps {
  store: TriggerStore;
  engine: { receive(input: Inbound): Promise<ReceiveResult> };
  chat: TriggerChat;
  directory: TriggerDirectory;
  clock: Clock;
  owner: string;
  logger: Logger;
  observer?: TriggerObserver;
  timings?: Partial<WorkerTimings>;
}

/** The instruction of a turn about more alerts in a thread the agent already works in. */
export const MORE_ALERTS_INSTRUCTION = 'More alerts fired in the alert group of this thread.';
export const RESOLVED_INSTRUCTION =
  'The alert group of this thread has resolved: every alert in it is resolved now. Say briefly what that means for your findings, and what, if anything, still needs doing.';

/** Work that can never be done (its trigger is gone, its payload unreadable). */
class WorkGoneError extends KourierError {
  constructor(reason: string, message: string) {
    super(reason, message);
  }
}

const BATCH = 20;

export class TriggerWorker {
  readonly #d: WorkerDeps;
  readonly #t: WorkerTimings;
  readonly #log: Logger;
  #running: Promise<void> | undefined;
  #again = false;
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;
  #prunedAt = Number.NEGATIVE_INFINITY;

  constructor(deps: WorkerDeps) {
    this.#d = deps;
    this.#t = { ...DEFAULT_WORKER_TIMINGS, ...deps.timings };
    this.#log = deps.logger.child({ component: 'trigger-worker' });
  }

  start(): void {
    this.#stopped = false;
    this.#timer = setInterval(() => this.kick(), this.#t.scanIntervalMs);
    this.#timer.unref();
    this.kick();
  }

  /** Looks for work now (a delivery was recorded here), or right after the current round. */
  kick(): void {
    if (this.#stopped) return;
    if (this.#running !== undefined) {
      this.#again = true;
      return;
    }
    this.#running = this.#rounds().finally(() => {
      this.#running = undefined;
    });
  }

  /** Resolves when no round is running (tests). */
  async idle(): Promise<void> {
    while (this.#running !== undefined) await this.#running;
  }

  /** Stops taking work; the round in flight finishes its current piece and releases its leases. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#timer);
    await this.idle();
  }

  async #rounds(): Promise<void> {
    do {
      this.#again = false;
      let claimed: ClaimedGroup[];
      try {
        claimed = await this.#d.store.claimTriggerWork(
          this.#d.owner,
          this.#d.clock.now(),
          this.#t.leaseTtlMs,
          BATCH,
        );
      } catch (error) {
        this.#log.warn({ err: describe(error) }, 'could not look for trigger work; will try again');
        return;
      }
      for (const c of claimed) {
        if (this.#stopped) {
          await this.#release(c.group);
          continue;
        }
        await this.#group(c);
      }
      if (claimed.length === BATCH) this.#again = true;
    } while (this.#again && !this.#stopped);
    await this.#prune();
  }

  /** Now and then (every replica, harmlessly at once), forgets what no delivery needs again. */
  async #prune(): Promise<void> {
    const now = this.#d.clock.now();
    if (now - this.#prunedAt < PRUNE_EVERY_MS) return;
    this.#prunedAt = now;
    try {
      await this.#d.store.pruneTriggers(now - KEEP_WORK_MS, now - KEEP_GROUPS_MS);
    } catch (error) {
      this.#log.warn({ err: describe(error) }, 'could not prune old trigger state; will try again');
    }
  }

  async #release(group: TriggerGroup): Promise<void> {
    await this.#d.store.releaseTriggerGroup(group.id, this.#d.owner).catch(() => undefined);
  }

  async #group(claimed: ClaimedGroup): Promise<void> {
    const { group } = claimed;
    let thread = group.thread;
    try {
      for (const work of claimed.work) {
        if (this.#stopped || work.nextAt > this.#d.clock.now()) break;
        const outcome = await this.#one(group, work, thread);
        if (outcome.kind === 'lost') return;
        if (outcome.kind === 'deferred') break;
        thread = outcome.thread;
      }
    } finally {
      await this.#release(group);
    }
  }

  async #one(
    group: TriggerGroup,
    work: TriggerWork,
    thread: SessionKey | null,
  ): Promise<{ kind: 'done'; thread: SessionKey | null } | { kind: 'deferred' } | { kind: 'lost' }> {
    const { store, owner, clock } = this.#d;
    const binding = group.scope.binding;
    try {
      const next = await this.#do(group, work, thread);
      await store.finishTriggerWork(work.id, group.id, owner, 'done', clock.now());
      return { kind: 'done', thread: next };
    } catch (error) {
      if (error instanceof TriggerLeaseLostError) {
        this.#log.info({ group: group.id }, 'another replica took this trigger group over');
        return { kind: 'lost' };
      }
      const now = clock.now();
      const permanent = error instanceof TriggerPostRefusedError || error instanceof WorkGoneError;
      const expired = now - work.createdAt >= this.#t.giveUpAfterMs;
      if (permanent || expired) {
        const reason = permanent && error instanceof KourierError ? error.code : 'gave_up';
        this.#log.error(
          {
            binding,
            trigger: group.scope.trigger,
            work: work.id,
            kind: work.kind,
            reason,
            err: describe(error),
          },
          'trigger work failed and was given up',
        );
        this.#d.observer?.triggerWorkFailed(binding, reason);
        try {
          await store.finishTriggerWork(work.id, group.id, owner, 'failed', now);
        } catch {
          return { kind: 'lost' };
        }
        return { kind: 'done', thread };
      }
      const delay = backoffDelay(work.attempts, { baseMs: this.#t.retryBaseMs, maxMs: this.#t.retryMaxMs });
      this.#log.warn(
        { binding, work: work.id, kind: work.kind, retryInMs: delay, err: describe(error) },
        'trigger work failed; will try again',
      );
      try {
        await store.deferTriggerWork(work.id, group.id, owner, now + delay, now);
      } catch {
        return { kind: 'lost' };
      }
      return { kind: 'deferred' };
    }
  }

  /** One piece of work; returns the group's thread after it. */
  async #do(group: TriggerGroup, work: TriggerWork, thread: SessionKey | null): Promise<SessionKey | null> {
    const { store, owner, clock, directory } = this.#d;
    const trigger = directory.get(group.scope.binding, group.scope.trigger);
    if (trigger === undefined) {
      // Not known yet (the control plane is still reconciling after a start) or gone: tried
      // again until the work is given up.
      throw new KourierError(
        'trigger_unknown',
        `trigger ${group.scope.trigger} of ${group.scope.binding} is not configured here`,
      );
    }
    const payload = readWorkPayload(work.payload);
    if (payload === undefined) throw new WorkGoneError('unreadable_work', `work ${work.id} does not read`);
    await store.startTriggerWork(work.id, group.id, owner, clock.now(), this.#t.leaseTtlMs);
    const ref: PostRef = { id: work.id, since: work.createdAt, recover: work.attempts > 0 };

    const open = async (message: TriggerMessage): Promise<SessionKey> => {
      const key = await this.#d.chat.startThread(payload.place, message, ref);
      await store.setTriggerThread(group.id, owner, key, clock.now());
      this.#d.observer?.triggerThreadOpened(group.scope.binding, trigger.kind);
      return key;
    };

    switch (work.kind) {
      case 'open': {
        const key = thread ?? (await open(rootOf(trigger, payload, work)));
        await this.#turn(trigger, key, work, payload, trigger.instruction);
        return key;
      }
      case 'turn': {
        if (thread === null) {
          // The root never made it (given up): this work starts the thread instead.
          const key = await open(rootOf(trigger, payload, work));
          await this.#turn(trigger, key, work, payload, trigger.instruction);
          return key;
        }
        if (payload.type === 'alerts')
          await this.#d.chat.postInThread(thread, moreMessage(payload.view, work.identities), ref);
        await this.#turn(trigger, thread, work, payload, `${MORE_ALERTS_INSTRUCTION} ${trigger.instruction}`);
        return thread;
      }
      case 'resolved': {
        if (thread === null || payload.type !== 'alerts') return thread;
        await this.#d.chat.postInThread(
          thread,
          resolvedMessage(payload.view, work.identities, work.allResolved),
          ref,
        );
        if (trigger.onResolved === 'turn' && work.allResolved)
          await this.#turn(trigger, thread, work, payload, RESOLVED_INSTRUCTION);
        return thread;
      }
      case 'note': {
        if (payload.type !== 'alerts') return thread;
        let key: SessionKey;
        let entry = ref;
        if (thread === null) {
          // The storm root never made it: this work posts it, then its entry (a ref of its own).
          key = await open(stormMessage(trigger, trigger.threadsPerMinute));
          entry = { ...ref, id: `${work.id}.entry` };
        } else {
          key = thread;
        }
        await this.#d.chat.postInThread(
          key,
          noteMessage(payload.view, work.identities, work.allResolved),
          entry,
        );
        return key;
      }
    }
  }

  async #turn(
    trigger: TriggerConfig,
    key: SessionKey,
    work: TriggerWork,
    payload: WorkPayload,
    instruction: string,
  ): Promise<void> {
    if (payload.type === 'storm') return;
    const fields =
      payload.type === 'schedule'
        ? scheduleFields(trigger, payload.run)
        : alertFields(payload.view, work.identities);
    await this.#d.engine.receive({
      kind: 'trigger',
      key,
      binding: trigger.binding,
      chatMessageId: work.id,
      instruction,
      fields,
    });
  }
}

function rootOf(trigger: TriggerConfig, payload: WorkPayload, work: TriggerWork): TriggerMessage {
  switch (payload.type) {
    case 'storm':
      return stormMessage(trigger, payload.threadsPerMinute);
    case 'schedule':
      return scheduleMessage(trigger, payload.run);
    case 'alerts':
      return rootMessage(payload.view, work.identities);
  }
}

function describe(error: unknown): Record<string, unknown> {
  if (error instanceof KourierError) return { name: error.name, code: error.code };
  if (error instanceof Error) return { name: error.name };
  return { name: typeof error };
}
