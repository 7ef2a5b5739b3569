import type { Logger } from 'pino';
import { API_VERSION } from '../control/crds/common.js';
import type { Transition } from '../control/status.js';
import type { KubeApi } from './kube-api.js';

/**
 * Kubernetes Events for status transitions (`kubectl describe` shows them). Best effort: a
 * failed event is logged and dropped, never retried into a storm, and never holds up status.
 * Notes are our condition messages, which never carry a Secret value.
 */

export interface EventTarget {
  kind: 'AgentBackend' | 'Binding';
  namespace: string;
  name: string;
  uid?: string;
}

export class EventRecorder {
  readonly #api: KubeApi;
  readonly #instance: string;
  readonly #logger: Logger;

  constructor(api: KubeApi, reportingInstance: string, logger: Logger) {
    this.#api = api;
    this.#instance = reportingInstance;
    this.#logger = logger;
  }

  async record(target: EventTarget, transition: Transition): Promise<void> {
    try {
      await this.#api.createEvent(
        {
          regarding: { apiVersion: API_VERSION, ...target },
          type: transition.type,
          reason: transition.reason,
          note: transition.note,
          action: 'Reconcile',
        },
        this.#instance,
      );
    } catch (error) {
      this.#logger.warn(
        { kind: target.kind, namespace: target.namespace, name: target.name, err: error },
        'could not record an event',
      );
    }
  }
}
