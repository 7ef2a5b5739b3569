import { Counter, collectDefaultMetrics, Gauge, Histogram, type Registry } from 'prom-client';
import type { CallReport } from '../a2a/telemetry.js';
import type { EngineEvent } from '../core/events.js';
import type { EventSink } from '../core/ports.js';
import type { TriggerObserver } from '../core/triggers.js';

/**
 * Every `agentkourier_*` metric, on the one prom-client Registry the composition root builds
 * and hands in (no module singletons: two brokers in one process, as in tests, never mix).
 * Fed by the engine's typed events (`emit`), the A2A client's call reports, and the small
 * observer interfaces of the Slack surface, the control plane and the store, which this class
 * implements and the composition root passes to each.
 *
 * Labels are bounded: Binding refs ('namespace/name', configuration), methods, outcomes, codes
 * and kinds. Never a thread, user, task or message id, never a URL.
 * (One file for every metric on purpose: the list is the contract docs/observability.md and the
 * dashboard read, and it is easiest to review in one place.)
 */

/** Seconds: turns run from a second to many minutes (kagent agents, tool approvals). */
const TURN_BUCKETS = [0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900, 1800];
/** Seconds: one call to an agent or Slack, or one store operation. */
const CALL_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];
const STORE_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

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

/** Every metric, registered on `registry`. */
function defineMetrics(registry: Registry) {
  const registers = [registry];
  const counter = <L extends string>(name: string, help: string, labelNames: readonly L[]) =>
    new Counter({ name, help, labelNames, registers });
  const histogram = <L extends string>(
    name: string,
    help: string,
    labelNames: readonly L[],
    buckets: number[],
  ) => new Histogram({ name, help, labelNames, buckets, registers });
  return {
    // ---- turns and the engine ---------------------------------------------------------------------

    turnsReceived: counter(
      'agentkourier_turns_received_total',
      'Chat messages taken as turns, by kind (message, answer, trigger, context).',
      ['binding', 'kind'],
    ),
    turnsQueued: counter(
      'agentkourier_turns_queued_total',
      'Turns received while their thread had a task running: they wait behind it (R-7).',
      ['binding'],
    ),
    turnsSettled: counter(
      'agentkourier_turns_settled_total',
      'Turns settled, by outcome (completed, failed, rejected, canceled, input-required, auth-required, error) and code (the error code, or the failure category).',
      ['binding', 'outcome', 'code'],
    ),
    turnDuration: histogram(
      'agentkourier_turn_duration_seconds',
      'Time from a chat message being received to its turn settling.',
      ['binding', 'outcome'],
      TURN_BUCKETS,
    ),
    firstText: histogram(
      'agentkourier_first_answer_text_seconds',
      'Time from a chat message being received to the first text of its answer.',
      ['binding'],
      TURN_BUCKETS,
    ),
    agentErrors: counter(
      'agentkourier_agent_errors_total',
      'Failed sends and streams of turns, by error code.',
      ['binding', 'code'],
    ),
    streamDrops: counter(
      'agentkourier_stream_drops_total',
      'Streams of accepted tasks that broke before the task settled (the task is followed).',
      ['binding'],
    ),
    resubscribes: counter(
      'agentkourier_resubscribes_total',
      'SubscribeToTask calls made to follow a task again (M-3).',
      ['binding'],
    ),
    polls: counter(
      'agentkourier_polls_total',
      'GetTask reads of a task whose agent cannot be subscribed to (M-3).',
      ['binding'],
    ),
    unknownOutcomes: counter(
      'agentkourier_unknown_outcomes_total',
      'Turns whose send may or may not have reached the agent, being resolved (E-7, R-8).',
      ['binding'],
    ),
    lookups: counter(
      'agentkourier_task_lookups_total',
      'ListTasks lookups of turns of unknown outcome, by result (found, absent, failed, unsupported).',
      ['binding', 'result'],
    ),
    resends: counter(
      'agentkourier_turn_resends_total',
      'Turns of unknown outcome sent again with the same messageId (R-8).',
      ['binding'],
    ),
    retries: counter(
      'agentkourier_turn_retries_total',
      'Sends retried after a backoff, by reason (the error code).',
      ['binding', 'reason'],
    ),
    busyBackoffs: counter(
      'agentkourier_busy_backoffs_total',
      'Times an agent said it was busy or throttled and the turn waited to be sent again (E-3).',
      ['binding'],
    ),
    busyBackoffSeconds: counter(
      'agentkourier_busy_backoff_seconds_total',
      'Time turns waited because their agent was busy or throttled.',
      ['binding'],
    ),
    credentialRejections: counter(
      'agentkourier_credential_rejections_total',
      'Calls the agent answered with HTTP 401 or 403 (E-1).',
      ['binding'],
    ),
    questionsAsked: counter(
      'agentkourier_questions_asked_total',
      'Questions shown in chat, by kind (text, structured, approval).',
      ['binding', 'kind'],
    ),
    questionsAnswered: counter(
      'agentkourier_questions_answered_total',
      'Questions whose answer was sent to the agent.',
      ['binding'],
    ),
    questionTimeouts: counter(
      'agentkourier_question_timeouts_total',
      'Questions not answered in time, by kind: their task was canceled (Q-4).',
      ['binding', 'kind'],
    ),
    approvalDecisions: counter(
      'agentkourier_approval_decisions_total',
      'Tool-call decisions sent to agents, by decision (approved, denied) and surface.',
      ['binding', 'decision', 'surface'],
    ),
    approvalRefusals: counter(
      'agentkourier_approval_refusals_total',
      'Presses on approval prompts refused, by reason.',
      ['binding', 'reason'],
    ),
    cancels: counter(
      'agentkourier_task_cancels_total',
      'Tasks the broker canceled, by reason and result (ok, failed: the cancel did not take, M-4).',
      ['binding', 'reason', 'result'],
    ),
    notices: counter('agentkourier_notices_total', 'Notices the broker posted in threads, by kind.', [
      'binding',
      'kind',
    ]),

    // ---- agents ---------------------------------------------------------------------------------------

    agentCalls: counter(
      'agentkourier_agent_calls_total',
      'Calls to agents, by A2A method (1.0 names whatever the wire version) and outcome (ok or the error code).',
      ['binding', 'method', 'outcome'],
    ),
    agentCallDuration: histogram(
      'agentkourier_agent_call_duration_seconds',
      'Duration of calls to agents; for streams, until the stream ended.',
      ['binding', 'method'],
      CALL_BUCKETS,
    ),
    cardFetches: counter(
      'agentkourier_card_fetches_total',
      'Agent card reads of Bindings, by result (ok, or the reason status shows).',
      ['binding', 'result'],
    ),

    // ---- Slack ----------------------------------------------------------------------------------------

    slackCalls: counter(
      'agentkourier_slack_api_calls_total',
      'Slack Web API calls, by method and result (ok, rate_limited, refused, unavailable, malformed).',
      ['method', 'result'],
    ),
    slackCallDuration: histogram(
      'agentkourier_slack_api_call_duration_seconds',
      'Duration of Slack Web API calls (after their rate budget let them go).',
      ['method'],
      CALL_BUCKETS,
    ),
    slackRateLimited: counter(
      'agentkourier_slack_rate_limited_total',
      'Slack Web API calls answered with HTTP 429.',
      ['method'],
    ),
    slackRateLimitWait: counter(
      'agentkourier_slack_rate_limit_wait_seconds_total',
      'Time Slack asked the broker to wait (Retry-After of its 429s), by method.',
      ['method'],
    ),
    slackBudgetWait: histogram(
      'agentkourier_slack_budget_wait_seconds',
      'Time calls waited for their method’s rate budget in their workspace before going out.',
      ['method'],
      CALL_BUCKETS,
    ),

    // ---- triggers -------------------------------------------------------------------------------------

    triggerDeliveries: counter(
      'agentkourier_trigger_deliveries_total',
      'Trigger deliveries and schedule runs, by kind (alertmanager, webhook, schedule) and result (opened, continued, resolved, throttled, duplicate, ignored, ran, skipped, invalid, unauthorized, not_ready, unknown, …).',
      ['binding', 'kind', 'result'],
    ),
    triggerThreads: counter(
      'agentkourier_trigger_threads_opened_total',
      'Threads triggers started (a root posted and recorded), by kind.',
      ['binding', 'kind'],
    ),
    triggerThrottled: counter(
      'agentkourier_trigger_throttled_total',
      'Alert groups beyond their Binding’s storm limit: listed in the storm thread, without a thread or an agent run of their own.',
      ['binding'],
    ),
    triggerWorkFailures: counter(
      'agentkourier_trigger_work_failures_total',
      'Trigger work given up (a root, turn or resolution that could not be done), by reason.',
      ['binding', 'reason'],
    ),

    // ---- control plane and store ----------------------------------------------------------------------

    reconciles: counter(
      'agentkourier_reconciles_total',
      'Reconciles of AgentBackends and Bindings, by kind and result (ok, error).',
      ['kind', 'result'],
    ),
    reconcileDuration: histogram(
      'agentkourier_reconcile_duration_seconds',
      'Duration of reconciles, by kind.',
      ['kind'],
      CALL_BUCKETS,
    ),
    leader: new Gauge({
      name: 'agentkourier_leader',
      help: '1 while this replica holds the leader Lease (reads cards, writes status), else 0.',
      registers,
    }),
    storeOperations: counter(
      'agentkourier_store_operations_total',
      'Session store operations, by operation and result (ok, error).',
      ['operation', 'result'],
    ),
    storeDuration: histogram(
      'agentkourier_store_operation_duration_seconds',
      'Duration of session store operations.',
      ['operation'],
      STORE_BUCKETS,
    ),
  };
}

export type MetricSet = ReturnType<typeof defineMetrics>;

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

  approvalDecided(binding: string, decision: 'approved' | 'denied', surface: string): void {
    this.m.approvalDecisions.inc({ binding, decision, surface });
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

/** Sends every event to each sink (metrics, logs, traces). */
export function fanOut(...sinks: EventSink[]): EventSink {
  return {
    emit: (event) => {
      for (const sink of sinks) sink.emit(event);
    },
  };
}
