import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

/**
 * The catalogue: every `agentkourier_*` metric with its help text, labels and buckets, on the
 * Registry given (BrokerMetrics, ./metrics.ts, feeds them). One list on purpose: it is the
 * contract docs/observability.md and the dashboard read, easiest to review in one place.
 *
 * Labels are bounded: Binding refs ('namespace/name', configuration), methods, outcomes, codes
 * and kinds. Never a thread, user, task or message id, never a URL.
 */

/** Seconds: turns run from a second to many minutes (kagent agents, tool approvals). */
const TURN_BUCKETS = [0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900, 1800];
/** Seconds: one call to an agent or Slack, or one store operation. */
const CALL_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];
const STORE_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

/** Every metric, registered on `registry`. */
export function defineMetrics(registry: Registry) {
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
      'GetTask reads of a task followed by polling: its agent cannot be subscribed to (M-3), or does not stream and its backend polls (P-3).',
      ['binding'],
    ),
    pollDuration: histogram(
      'agentkourier_poll_duration_seconds',
      'How long each of those GetTask reads took, retries of a failed read included.',
      ['binding'],
      CALL_BUCKETS,
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
    feedback: counter(
      'agentkourier_feedback_total',
      "Feedback presses that set a person's latest value on an answer (a first press, or a change of mind counted once under the new value); repeats count nothing.",
      ['binding', 'value'],
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

    // ---- retention ------------------------------------------------------------------------------------

    retentionForgotten: counter(
      'agentkourier_retention_forgotten_total',
      'Rows the retention sweep forgot, by kind (threads, turns, feedback, webchat_threads; words: settled turns whose words it cleared).',
      ['kind'],
    ),
    retentionFailures: counter(
      'agentkourier_retention_sweep_failures_total',
      'Retention sweeps that failed (the next one tries again).',
      [],
    ),
    storeThreads: new Gauge({
      name: 'agentkourier_store_threads',
      help: 'Threads (sessions) in the store, as the last retention sweep counted them.',
      registers,
    }),
    storeBytes: new Gauge({
      name: 'agentkourier_store_bytes',
      help: "The store's size on disk in bytes, as the last retention sweep measured it (SQLite: the file's pages; PostgreSQL: the schema's tables with indexes).",
      registers,
    }),

    // ---- identity -------------------------------------------------------------------------------------

    identityExchanges: counter(
      'agentkourier_identity_exchanges_total',
      'Token exchanges at an identity provider for a per-person identity, by Binding and result (ok, refused, unavailable); a token still kept is not counted.',
      ['binding', 'result'],
    ),
  };
}

export type MetricSet = ReturnType<typeof defineMetrics>;
