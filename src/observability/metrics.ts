import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import type { CallDiagnostic } from '../a2a/client.js';
import type { EngineEvent } from '../core/events.js';
import type { EventSink } from '../core/ports.js';

/**
 * Prometheus metrics with the `agentkourier_` prefix, fed by the engine's typed events and the
 * A2A client's diagnostics channel. Written by hand in the text exposition format: a handful of
 * counters and one histogram do not need a client library. Labels carry Binding refs, codes and
 * outcomes — never a token, a message or a user.
 */

type Labels = Record<string, string>;

function key(labels: Labels): string {
  return Object.keys(labels)
    .sort()
    .map((k) => `${k}="${escapeLabel(labels[k] ?? '')}"`)
    .join(',');
}

function escapeLabel(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}

class Counter {
  readonly #values = new Map<string, number>();
  constructor(
    readonly name: string,
    readonly help: string,
  ) {}
  inc(labels: Labels, by = 1): void {
    const k = key(labels);
    this.#values.set(k, (this.#values.get(k) ?? 0) + by);
  }
  value(labels: Labels): number {
    return this.#values.get(key(labels)) ?? 0;
  }
  render(): string {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} counter`];
    for (const [k, v] of this.#values) lines.push(`${this.name}{${k}} ${v}`);
    return lines.join('\n');
  }
}

class Histogram {
  readonly #series = new Map<string, { buckets: number[]; sum: number; count: number }>();
  constructor(
    readonly name: string,
    readonly help: string,
    readonly bounds: readonly number[],
  ) {}
  observe(labels: Labels, value: number): void {
    const k = key(labels);
    let s = this.#series.get(k);
    if (s === undefined) {
      s = { buckets: this.bounds.map(() => 0), sum: 0, count: 0 };
      this.#series.set(k, s);
    }
    for (let i = 0; i < this.bounds.length; i++)
      if (value <= (this.bounds[i] ?? 0)) s.buckets[i] = (s.buckets[i] ?? 0) + 1;
    s.sum += value;
    s.count++;
  }
  render(): string {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} histogram`];
    for (const [k, s] of this.#series) {
      const sep = k === '' ? '' : ',';
      this.bounds.forEach((b, i) => {
        lines.push(`${this.name}_bucket{${k}${sep}le="${b}"} ${s.buckets[i] ?? 0}`);
      });
      lines.push(`${this.name}_bucket{${k}${sep}le="+Inf"} ${s.count}`);
      lines.push(`${this.name}_sum{${k}} ${s.sum}`);
      lines.push(`${this.name}_count{${k}} ${s.count}`);
    }
    return lines.join('\n');
  }
}

export class Metrics implements EventSink {
  readonly turnsReceived = new Counter('agentkourier_turns_received_total', 'Chat messages taken as turns.');
  readonly turnsSettled = new Counter('agentkourier_turns_settled_total', 'Turns settled, by outcome.');
  readonly credentialRejections = new Counter(
    'agentkourier_credential_rejections_total',
    'Calls the agent answered with HTTP 401 or 403 (E-1).',
  );
  readonly agentErrors = new Counter(
    'agentkourier_agent_errors_total',
    'Failed calls to agents, by error code.',
  );
  readonly notices = new Counter('agentkourier_notices_total', 'Notices posted in threads, by kind.');
  readonly retries = new Counter('agentkourier_turn_retries_total', 'Turns sent again, by reason.');
  readonly a2aCalls = new Counter('agentkourier_a2a_calls_total', 'A2A calls, by method and outcome.');
  readonly turnDuration = new Histogram(
    'agentkourier_turn_duration_seconds',
    'Time from a turn being received to it settling.',
    [0.5, 1, 2.5, 5, 10, 30, 60, 300, 900],
  );
  readonly #onCall = (message: unknown): void => {
    const call = message as CallDiagnostic;
    this.a2aCalls.inc({ method: call.method, outcome: call.outcome });
  };

  constructor() {
    subscribe('agentkourier:a2a:call', this.#onCall);
  }

  readonly #sources: Array<() => string> = [];

  close(): void {
    unsubscribe('agentkourier:a2a:call', this.#onCall);
  }

  /** Adds metrics kept elsewhere (the Slack approval counters) to what `render()` returns. */
  addSource(render: () => string): void {
    this.#sources.push(render);
  }

  emit(event: EngineEvent): void {
    const binding = event.binding;
    switch (event.type) {
      case 'turn.received':
        this.turnsReceived.inc({ binding, kind: event.kind });
        break;
      case 'turn.settled':
        this.turnsSettled.inc({
          binding,
          outcome: event.outcome.startsWith('error:') ? 'error' : event.outcome,
        });
        this.turnDuration.observe({ binding }, event.durationMs / 1000);
        break;
      case 'credentials.rejected':
        this.credentialRejections.inc({ binding });
        break;
      case 'agent.error':
        this.agentErrors.inc({ binding, code: event.code });
        break;
      case 'notice.posted':
        this.notices.inc({ binding, kind: event.kind });
        break;
      case 'turn.retry':
        this.retries.inc({ binding, reason: event.reason });
        break;
      default:
        break;
    }
  }

  render(): string {
    return `${[
      this.turnsReceived,
      this.turnsSettled,
      this.credentialRejections,
      this.agentErrors,
      this.notices,
      this.retries,
      this.a2aCalls,
      this.turnDuration,
    ]
      .map((m) => m.render())
      .concat(this.#sources.map((render) => render().trimEnd()))
      .join('\n')}\n`;
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
