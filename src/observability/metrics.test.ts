import { afterEach, describe, expect, it } from 'vitest';
import { A2AClient } from '../a2a/client.js';
import { Metrics } from './metrics.js';

describe('metrics', () => {
  const open: Metrics[] = [];
  afterEach(() => {
    for (const m of open.splice(0)) m.close();
  });

  it('[E-1] counts credential rejections per Binding, in the Prometheus text format', () => {
    const metrics = new Metrics();
    open.push(metrics);
    const base = { sessionId: 's', binding: 'team-a/support', at: 0 };
    metrics.emit({ ...base, type: 'credentials.rejected', status: 401 });
    metrics.emit({ ...base, type: 'credentials.rejected', status: 403 });
    metrics.emit({
      ...base,
      type: 'turn.settled',
      turnId: 't',
      outcome: 'error:credentials_rejected',
      durationMs: 1500,
      answerLength: 0,
    });
    const text = metrics.render();
    expect(text).toContain('# TYPE agentkourier_credential_rejections_total counter');
    expect(text).toContain('agentkourier_credential_rejections_total{binding="team-a/support"} 2');
    expect(text).toContain('agentkourier_turns_settled_total{binding="team-a/support",outcome="error"} 1');
    expect(text).toContain('agentkourier_turn_duration_seconds_bucket{binding="team-a/support",le="2.5"} 1');
    expect(text).toContain('agentkourier_turn_duration_seconds_bucket{binding="team-a/support",le="1"} 0');
  });

  it('renders metrics kept elsewhere after its own', () => {
    const metrics = new Metrics();
    open.push(metrics);
    metrics.addSource(
      () =>
        '# TYPE agentkourier_approval_decisions_total counter\nagentkourier_approval_decisions_total{decision="approved"} 3\n',
    );
    expect(metrics.render()).toMatch(
      /agentkourier_a2a_calls_total[\s\S]*agentkourier_approval_decisions_total\{decision="approved"\} 3\n$/,
    );
  });

  it('counts A2A calls from the client diagnostics channel', async () => {
    const metrics = new Metrics();
    open.push(metrics);
    const client = new A2AClient({
      endpoint: 'http://127.0.0.1:1/a2a',
      identity: { kind: 'user-id', userId: 'U' },
    });
    await client.card().catch(() => undefined);
    expect(metrics.a2aCalls.value({ method: 'card', outcome: 'unreachable' })).toBe(1);
  });
});
