import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { type Clock, systemClock } from '../core/clock.js';
import type { Inbound, ReceiveResult } from '../core/ports.js';
import type { DeliveryLimits, TriggerStore } from '../core/trigger-store.js';
import type {
  TriggerChat,
  TriggerConfig,
  TriggerDirectory,
  TriggerObserver,
  TriggerPlace,
} from '../core/triggers.js';
import { type DeliveryOutcome, triggerRoutes } from './http.js';
import type { ParsedDelivery } from './payloads.js';
import { Scheduler } from './scheduler.js';
import type { WorkPayload } from './work-payload.js';
import { TriggerWorker, type WorkerTimings } from './worker.js';

/**
 * Triggers, wired (docs/triggers.md): the webhook routes, the worker that turns recorded work
 * into threads and turns, and the scheduler. Built in the composition root with the directory
 * the control plane feeds, the store, the engine and the chat surfaces' trigger port.
 *
 *   const triggers = new Triggers({ directory, store, chat, engine, owner, logger });
 *   server.on('request', (req, res) => triggers.routes(req, res) || other(req, res));
 *   triggers.start();   // worker and scheduler
 *   …
 *   await triggers.stop();
 */

export { TRIGGER_LIMITS } from './limits.js';
export { compileSchedule } from './scheduler.js';

export interface TriggersOptions {
  directory: TriggerDirectory;
  store: TriggerStore;
  chat: TriggerChat;
  engine: { receive(input: Inbound): Promise<ReceiveResult> };
  /** This replica's name in the work leases (the engine's owner). */
  owner: string;
  logger: Logger;
  clock?: Clock;
  observer?: TriggerObserver;
  /** While true, deliveries are answered 503 (the process is shutting down). */
  draining?: () => boolean;
  worker?: Partial<WorkerTimings>;
  scheduler?: { recheckMs?: number; catchUpWindowMs?: number; maxCatchUp?: number };
  limits?: Partial<Omit<DeliveryLimits, 'threadsPerMinute'>>;
}

const DEFAULT_LIMITS: Omit<DeliveryLimits, 'threadsPerMinute'> = {
  stormWindowMs: 10 * 60_000,
  reopenAfterMs: 24 * 60 * 60_000,
};

export class Triggers {
  /** Takes a request to /triggers/… (true) or leaves it to the caller (false). */
  readonly routes: (req: IncomingMessage, res: ServerResponse) => boolean;
  readonly worker: TriggerWorker;
  readonly scheduler: Scheduler;
  readonly #o: TriggersOptions;
  readonly #clock: Clock;
  readonly #limits: Omit<DeliveryLimits, 'threadsPerMinute'>;

  constructor(options: TriggersOptions) {
    this.#o = options;
    this.#clock = options.clock ?? systemClock;
    this.#limits = { ...DEFAULT_LIMITS, ...options.limits };
    this.worker = new TriggerWorker({
      store: options.store,
      engine: options.engine,
      chat: options.chat,
      directory: options.directory,
      clock: this.#clock,
      owner: options.owner,
      logger: options.logger,
      ...(options.observer === undefined ? {} : { observer: options.observer }),
      ...(options.worker === undefined ? {} : { timings: options.worker }),
    });
    this.scheduler = new Scheduler({
      directory: options.directory,
      store: options.store,
      place: (trigger) => options.chat.place(trigger),
      clock: this.#clock,
      logger: options.logger,
      ...(options.observer === undefined ? {} : { observer: options.observer }),
      ran: () => this.worker.kick(),
      ...options.scheduler,
    });
    this.routes = triggerRoutes({
      directory: options.directory,
      place: (trigger) => options.chat.place(trigger),
      deliver: (trigger, place, parsed) => this.deliver(trigger, place, parsed),
      refused: (trigger, result) => {
        void options.store
          .recordTriggerActivity(trigger.binding, trigger.name, result, this.#clock.now())
          .catch(() => undefined);
      },
      logger: options.logger,
      ...(options.draining === undefined ? {} : { draining: options.draining }),
      ...(options.observer === undefined ? {} : { observer: options.observer }),
    });
  }

  /** Records a parsed delivery (claims and work, atomically) and wakes the worker. */
  async deliver(
    trigger: TriggerConfig,
    place: TriggerPlace,
    parsed: ParsedDelivery,
  ): Promise<DeliveryOutcome> {
    const payload: WorkPayload = { type: 'alerts', place, view: parsed.view };
    const storm: WorkPayload = { type: 'storm', place, threadsPerMinute: trigger.threadsPerMinute };
    const result = await this.#o.store.recordDelivery({
      scope: { workspaceId: place.workspaceId, binding: trigger.binding, trigger: trigger.name },
      groupKey: parsed.groupKey,
      alerts: parsed.claims,
      resolveAll: parsed.resolveAll,
      payload,
      stormPayload: storm,
      limits: { ...this.#limits, threadsPerMinute: trigger.threadsPerMinute },
      now: this.#clock.now(),
    });
    this.#o.observer?.triggerDelivery(trigger.binding, trigger.kind, result.outcome);
    if (result.outcome === 'throttled') this.#o.observer?.triggerThrottled(trigger.binding);
    if (result.outcome !== 'duplicate' && result.outcome !== 'ignored') this.worker.kick();
    this.#o.logger.info(
      {
        binding: trigger.binding,
        trigger: trigger.name,
        outcome: result.outcome,
        newAlerts: result.newFiring.length,
        resolvedAlerts: result.newlyResolved.length,
      },
      'trigger delivery',
    );
    return {
      outcome: result.outcome,
      group: result.groupId,
      newAlerts: result.newFiring.length,
      resolvedAlerts: result.newlyResolved.length,
    };
  }

  start(): void {
    this.worker.start();
    this.scheduler.start();
  }

  async stop(): Promise<void> {
    await this.scheduler.stop();
    await this.worker.stop();
  }
}
