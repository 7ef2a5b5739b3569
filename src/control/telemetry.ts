import type { Tracer } from '@opentelemetry/api';
import type { ClientTelemetry } from '../a2a/telemetry.js';

/**
 * What the control plane reports, for metrics (observability's BrokerMetrics implements it) and
 * traces: reconciles by kind and result, leadership, and agent card reads by result. Local mode
 * reports the same from its file.
 */
export interface ControlPlaneObserver {
  reconciled(kind: 'AgentBackend' | 'Binding', result: 'ok' | 'error', seconds: number): void;
  leading(isLeader: boolean): void;
  /** `result`: 'ok', or the reason status shows (CardFetchFailed, NoJSONRPCInterface, …). */
  cardRead(binding: string, result: string): void;
}

export interface ControlPlaneTelemetry {
  observer?: ControlPlaneObserver;
  /** Spans of reconciles; default: the global tracer (a no-op without an SDK). */
  tracer?: Tracer;
  /** The telemetry each Binding's A2A client reports to. */
  client?: (binding: string) => ClientTelemetry;
}
