import type { SessionStore } from '../core/store.js';
import type { TriggerStore } from '../core/trigger-store.js';
import type { StoreObserver } from './metrics.js';

/**
 * The session store with every operation counted and timed (`store_operations_total`,
 * `store_operation_duration_seconds`): a decorator on the port, so neither the engine nor the
 * stores know about metrics. The lease renewals and event claims are operations too: a slow
 * PostgreSQL shows in them first.
 */

const OPERATIONS = [
  'migrate',
  'openSession',
  'getSession',
  'addTurn',
  'openSessionAndAddTurn',
  'getTurn',
  'setAnswerRef',
  'openTurns',
  'commit',
  'sessionsWithWork',
  'workToScan',
  'claimInboundEvent',
  'acquireLease',
  'renewLeases',
  'releaseLease',
  'revokeLease',
] as const satisfies ReadonlyArray<keyof SessionStore>;

const TRIGGER_OPERATIONS = [
  'recordDelivery',
  'recordTriggerActivity',
  'triggerActivity',
  'anchorSchedule',
  'recordScheduleRun',
  'skipScheduleRuns',
  'claimTriggerWork',
  'startTriggerWork',
  'setTriggerThread',
  'finishTriggerWork',
  'deferTriggerWork',
  'releaseTriggerGroup',
  'getTriggerGroup',
  'pruneTriggers',
] as const satisfies ReadonlyArray<keyof TriggerStore>;

/** The trigger store, measured the same way (its operations under their own names). */
export function measuredTriggerStore(store: TriggerStore, observer: StoreObserver): TriggerStore {
  return measure(store, TRIGGER_OPERATIONS, observer) as unknown as TriggerStore;
}

export function measuredStore(store: SessionStore, observer: StoreObserver): SessionStore {
  const measured = measure(store, OPERATIONS, observer);
  return {
    ...(measured as Omit<SessionStore, 'sharedByReplicas' | 'close' | 'probeWrite'>),
    get sharedByReplicas() {
      return store.sharedByReplicas;
    },
    close: () => store.close(),
    // Readiness's own write, every few seconds: not an operation of the broker's to count.
    probeWrite: () => store.probeWrite(),
  } satisfies SessionStore;
}

function measure<T extends object>(
  store: T,
  operations: ReadonlyArray<keyof T & string>,
  observer: StoreObserver,
): Record<string, unknown> {
  const measured: Record<string, unknown> = {};
  for (const operation of operations) {
    const call = (store[operation] as (...args: unknown[]) => Promise<unknown>).bind(store);
    measured[operation] = async (...args: unknown[]): Promise<unknown> => {
      const started = performance.now();
      try {
        const result = await call(...args);
        observer.storeOperation(operation, 'ok', (performance.now() - started) / 1000);
        return result;
      } catch (error) {
        observer.storeOperation(operation, 'error', (performance.now() - started) / 1000);
        throw error;
      }
    };
  }
  return measured;
}
