import { readFileSync } from 'node:fs';
import type { Logger } from 'pino';
import { Registry } from 'prom-client';
import type { ClientTelemetry } from '../a2a/telemetry.js';
import type { ControlPlaneTelemetry } from '../control/telemetry.js';
import type { EventSink } from '../core/ports.js';
import type { SessionStore } from '../core/store.js';
import type { TriggerStore } from '../core/trigger-store.js';
import type { SlackTelemetry } from '../surfaces/slack/web-api/client.js';
import { ApprovalAuditLog } from './approval-audit.js';
import { BrokerMetrics, fanOut } from './metrics.js';
import { measuredStore, measuredTriggerStore } from './store-metrics.js';
import { startTracing, type Tracing } from './tracing.js';
import { TurnLog } from './turn-log.js';
import { OtelTurnTracer } from './turn-tracer.js';

/**
 * Metrics, traces and logs of one broker process, built once in the composition root
 * (app/broker.ts, for both modes) and handed to each piece as the small interface it asks for:
 * the engine gets an event sink and a turn tracer, the store is wrapped, each Binding's client
 * gets its call telemetry, Slack and the control plane their observers and tracers.
 */

export { createLogger, type LogFormat } from './logging.js';
export { BrokerMetrics, fanOut } from './metrics.js';
export { opsRoutes } from './ops-routes.js';
export { startTracing, type Tracing, tracingConfig } from './tracing.js';

/** The version in package.json (the build info metric, the service.version of traces). */
export function brokerVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      version?: unknown;
    };
    return typeof pkg.version === 'string' ? pkg.version : 'unknown';
  } catch {
    return 'unknown';
  }
}

export interface ObservabilityOptions {
  env: Readonly<Record<string, string | undefined>>;
  logger: Logger;
}

export class Observability {
  readonly registry: Registry;
  readonly metrics: BrokerMetrics;
  readonly tracing: Tracing;
  readonly turns: OtelTurnTracer;
  /** The approval audit every surface writes to: one log line per decision, and its listeners. */
  readonly approvals: ApprovalAuditLog;
  readonly #log: TurnLog;

  constructor(options: ObservabilityOptions) {
    const version = brokerVersion();
    this.registry = new Registry();
    this.metrics = new BrokerMetrics(this.registry, { version });
    this.tracing = startTracing({ env: options.env, version });
    this.turns = new OtelTurnTracer(this.tracing.tracer('agentkourier.engine'));
    this.#log = new TurnLog(options.logger);
    this.approvals = new ApprovalAuditLog(options.logger.child({ component: 'approvals' }));
  }

  /** What the engine's events go to: metrics, the turn log, and any other sink given. */
  events(...others: EventSink[]): EventSink {
    return fanOut(this.metrics, this.#log, ...others);
  }

  /** The store, with every operation counted and timed. */
  store(store: SessionStore): SessionStore {
    return measuredStore(store, this.metrics);
  }

  /** The trigger store, with every operation counted and timed like the session store's. */
  triggerStore(store: TriggerStore): TriggerStore {
    return measuredTriggerStore(store, this.metrics);
  }

  /** A Binding's client telemetry: call spans, and calls counted under the Binding. */
  client(binding: string): ClientTelemetry {
    return {
      tracer: this.tracing.tracer('agentkourier.a2a'),
      onCall: (call) => this.metrics.agentCall(binding, call),
    };
  }

  get controlPlane(): ControlPlaneTelemetry {
    return {
      observer: this.metrics,
      tracer: this.tracing.tracer('agentkourier.controller'),
      client: (binding) => this.client(binding),
    };
  }

  get slack(): SlackTelemetry {
    return { observer: this.metrics, tracer: this.tracing.tracer('agentkourier.slack') };
  }

  /** Ends the spans of unsettled turns (exported as interrupted), then flushes and stops tracing. */
  async close(): Promise<void> {
    this.turns.close();
    await this.tracing.shutdown();
  }
}
