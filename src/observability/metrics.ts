import { collectDefaultMetrics, Gauge, type Registry } from 'prom-client';
import type { CallReport } from '../a2a/telemetry.js';
import type { EngineEvent } from '../core/events.js';
import type { EventSink } from '../core/ports.js';
import type { RetentionObserver } from '../core/retention-sweeper.js';
import type { TriggerObserver } from '../core/triggers.js';
import { defineMetrics, type MetricSet } from './metric-set.js';

/**
 * Every `agentkourier_*` metric, on the one prom-client Registry the composition root builds
 * and hands in (no module singletons: two brokers in one process, as in tests, never mix).
 * Fed by the engine's typed events (`emit`), the A2A client's call reports, and the small
 * observer interfaces of the Slack surface, the control plane and the store, which this class
 * implements and the composition root passes to each.
 *
 * The metrics themselves, their names, labels and buckets, are the catalogue in
 * ./metric-set.ts; this file only feeds them.
 */

const DEFAULT_GAUGES_NAMED_TOTAL = [
  'nodejs_active_handles_total',
  'nodejs_active_requests_total',
  'nodejs_active_resources_total',
];

export interface BuildInfo {
  version: string;
}

/** What a store operation's timing says (observability/store-metrics.ts measures it). */
export interface StoreObserver {
  storeOperation(operation: string, result: 'ok' | 'error', seconds: number): void;
}

/** How a turn settled, as the outcome and code labels say it. */
export function outcomeLabels(
  outcome: string,
  category: string | undefined,
): { outcome: string; code: string } {
  if (outcome.startsWith('error:')) return { outcome: 'error', code: outcome.slice('error:'.length) };
  if (outcome === 'failed') return { outcome, code: (category ?? 'unknown').replaceAll(' ', '_') };
  return { outcome, code: '' };
}

export class BrokerMetrics implements EventSink, StoreObserver, TriggerObserver {
  readonly registry: Registry;
  /** The metrics themselves (tests read them through the Registry's text, as Prometheus does). */
  readonly m: MetricSet;

  constructor(registry: Registry, build: BuildInfo) {
    this.registry = registry;
    // Node's own: CPU, memory, event loop lag, GC, handles. Their standard names (process_*,
    // nodejs_*) are kept, unprefixed, so the usual Node dashboards and alerts read them.
    collectDefaultMetrics({ register: registry });
    // Three of them are gauges named *_total, which Prometheus's conventions (and `promtool check
    // metrics`) keep for counters; each is the sum of a gauge that stays (nodejs_active_handles,
    // …, by type), so nothing is lost.
    for (const name of DEFAULT_GAUGES_NAMED_TOTAL) registry.removeSingleMetric(name);
    this.m = defineMetrics(registry);
    const info = new Gauge({
      name: 'agentkourier_build_info',
      help: 'Always 1; the labels say which build runs.',
      labelNames: ['version', 'node_version'],
      registers: [registry],
    });
    info.set({ version: build.version, node_version: process.version }, 1);
    const read = (): number => this.#activeSessions();
    new Gauge({
      name: 'agentkourier_active_sessions',
      help: 'Threads this replica is driving right now (a turn being sent or followed, a question pending).',
      registers: [registry],
      collect() {
        this.set(read());
      },
    });
  }

  #activeSessions: () => number = () => 0;

  // ---- recording ------------------------------------------------------------------------------------

  /** The active-sessions gauge reads this at every scrape (the engine's own count). */
  countActiveSessions(read: () => number): void {
    this.#activeSessions = read;
  }

  /** The retention sweep's rows and measures (core/retention-sweeper.ts). */
  readonly retention: RetentionObserver = {
    swept: (kind, rows) => {
      if (rows > 0) this.m.retentionForgotten.inc({ kind }, rows);
    },
    measured: ({ threads, bytes }) => {
      this.m.storeThreads.set(threads);
      this.m.storeBytes.set(bytes);
    },
    failed: () => this.m.retentionFailures.inc(),
  };

  /** A per-person identity's token exchange at the identity provider (src/identity/exchange.ts). */
  identityExchanged(binding: string, result: 'ok' | 'refused' | 'unavailable'): void {
    this.m.identityExchanges.inc({ binding, result });
  }

  emit(event: EngineEvent): void {
    const binding = event.binding;
    switch (event.type) {
      case 'turn.received':
        this.m.turnsReceived.inc({ binding, kind: event.kind });
        if (event.queued) this.m.turnsQueued.inc({ binding });
        break;
      case 'turn.settled': {
        const labels = outcomeLabels(event.outcome, event.category);
        this.m.turnsSettled.inc({ binding, ...labels });
        this.m.turnDuration.observe({ binding, outcome: labels.outcome }, event.durationMs / 1000);
        break;
      }
      case 'answer.started':
        this.m.firstText.observe({ binding }, event.latencyMs / 1000);
        break;
      case 'approval.decided':
        if (event.approved > 0)
          this.m.approvalDecisions.inc(
            { binding, decision: 'approved', surface: event.surface },
            event.approved,
          );
        if (event.denied > 0)
          this.m.approvalDecisions.inc({ binding, decision: 'denied', surface: event.surface }, event.denied);
        break;
      case 'credentials.rejected':
        this.m.credentialRejections.inc({ binding });
        break;
      case 'agent.error':
        this.m.agentErrors.inc({ binding, code: event.code });
        break;
      case 'agent.busy':
        this.m.busyBackoffs.inc({ binding });
        this.m.busyBackoffSeconds.inc({ binding }, event.delayMs / 1000);
        break;
      case 'stream.lost':
        this.m.streamDrops.inc({ binding });
        break;
      case 'task.resubscribed':
        this.m.resubscribes.inc({ binding });
        break;
      case 'task.polled':
        this.m.polls.inc({ binding });
        if (event.latencyMs !== undefined) this.m.pollDuration.observe({ binding }, event.latencyMs / 1000);
        break;
      case 'turn.unknown':
        this.m.unknownOutcomes.inc({ binding });
        break;
      case 'turn.lookup':
        this.m.lookups.inc({ binding, result: event.result });
        break;
      case 'turn.resent':
        this.m.resends.inc({ binding });
        break;
      case 'turn.retry':
        this.m.retries.inc({ binding, reason: event.reason });
        break;
      case 'question.asked':
        this.m.questionsAsked.inc({ binding, kind: event.approval ? 'approval' : event.kind });
        break;
      case 'question.answered':
        this.m.questionsAnswered.inc({ binding });
        break;
      case 'question.timeout':
        this.m.questionTimeouts.inc({ binding, kind: event.approval ? 'approval' : event.kind });
        break;
      case 'task.cancel':
        this.m.cancels.inc({ binding, reason: event.reason, result: event.ok ? 'ok' : 'failed' });
        break;
      case 'notice.posted':
        this.m.notices.inc({ binding, kind: event.kind });
        break;
      default:
        break;
    }
  }

  /** One finished call of a Binding's client. */
  agentCall(binding: string, call: CallReport): void {
    this.m.agentCalls.inc({ binding, method: call.operation, outcome: call.outcome });
    this.m.agentCallDuration.observe({ binding, method: call.operation }, call.durationMs / 1000);
  }

  cardRead(binding: string, result: string): void {
    this.m.cardFetches.inc({ binding, result });
  }

  slackCall(method: string, result: string, seconds: number): void {
    this.m.slackCalls.inc({ method, result });
    this.m.slackCallDuration.observe({ method }, seconds);
  }

  slackThrottled(method: string, retryAfterMs: number): void {
    this.m.slackRateLimited.inc({ method });
    this.m.slackRateLimitWait.inc({ method }, retryAfterMs / 1000);
  }

  slackWaited(method: string, seconds: number): void {
    this.m.slackBudgetWait.observe({ method }, seconds);
  }

  feedbackGiven(binding: string, value: 'positive' | 'negative'): void {
    this.m.feedback.inc({ binding, value });
  }

  approvalRefused(binding: string, reason: string): void {
    this.m.approvalRefusals.inc({ binding, reason });
  }

  triggerDelivery(binding: string, kind: string, result: string): void {
    this.m.triggerDeliveries.inc({ binding, kind, result });
  }

  triggerThreadOpened(binding: string, kind: string): void {
    this.m.triggerThreads.inc({ binding, kind });
  }

  triggerThrottled(binding: string): void {
    this.m.triggerThrottled.inc({ binding });
  }

  triggerWorkFailed(binding: string, reason: string): void {
    this.m.triggerWorkFailures.inc({ binding, reason });
  }

  reconciled(kind: string, result: 'ok' | 'error', seconds: number): void {
    this.m.reconciles.inc({ kind, result });
    this.m.reconcileDuration.observe({ kind }, seconds);
  }

  leading(isLeader: boolean): void {
    this.m.leader.set(isLeader ? 1 : 0);
  }

  storeOperation(operation: string, result: 'ok' | 'error', seconds: number): void {
    this.m.storeOperations.inc({ operation, result });
    this.m.storeDuration.observe({ operation }, seconds);
  }
}

/**
 * Sends every event to each sink (metrics, logs, traces); `agent.event` only to the sinks that
 * ask for it, and the engine builds it only if one of them does (EventSink.agentEvents).
 */
export function fanOut(...sinks: EventSink[]): EventSink {
  const perAgentEvent = sinks.filter((sink) => sink.agentEvents === true);
  return {
    agentEvents: perAgentEvent.length > 0,
    emit: (event) => {
      for (const sink of event.type === 'agent.event' ? perAgentEvent : sinks) sink.emit(event);
    },
  };
}
