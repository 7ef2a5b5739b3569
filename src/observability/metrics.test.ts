import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { A2AClient } from '../a2a/client.js';
import { StaleWriteError } from '../core/errors.js';
import type { EngineEvent } from '../core/events.js';
import { SqliteStore } from '../store/sqlite/sqlite-store.js';
import { BrokerMetrics, fanOut } from './metrics.js';
import { measuredStore } from './store-metrics.js';

function fresh(): { metrics: BrokerMetrics; text: () => Promise<string> } {
  const registry = new Registry();
  const metrics = new BrokerMetrics(registry, { version: '1.2.3' });
  return { metrics, text: () => registry.metrics() };
}

const base = { sessionId: 's', binding: 'team-a/support', at: 0 };

describe('BrokerMetrics', () => {
  it('[E-1] counts credential rejections per Binding, and settled turns by outcome and code', async () => {
    const { metrics, text } = fresh();
    const events: EngineEvent[] = [
      { ...base, type: 'credentials.rejected', status: 401 },
      { ...base, type: 'credentials.rejected', status: 403 },
      {
        ...base,
        type: 'turn.settled',
        turnId: 't1',
        outcome: 'error:credentials_rejected',
        taskId: null,
        durationMs: 1500,
        answerLength: 0,
      },
      {
        ...base,
        type: 'turn.settled',
        turnId: 't2',
        outcome: 'failed',
        category: 'rate limit',
        taskId: 'task-2',
        durationMs: 200,
        answerLength: 0,
      },
      {
        ...base,
        type: 'turn.settled',
        turnId: 't3',
        outcome: 'completed',
        taskId: 'task-3',
        durationMs: 700,
        answerLength: 12,
      },
    ];
    for (const e of events) metrics.emit(e);
    const out = await text();
    expect(out).toContain('# TYPE agentkourier_credential_rejections_total counter');
    expect(out).toContain('agentkourier_credential_rejections_total{binding="team-a/support"} 2');
    expect(out).toContain(
      'agentkourier_turns_settled_total{binding="team-a/support",outcome="error",code="credentials_rejected"} 1',
    );
    expect(out).toContain(
      'agentkourier_turns_settled_total{binding="team-a/support",outcome="failed",code="rate_limit"} 1',
    );
    expect(out).toContain(
      'agentkourier_turns_settled_total{binding="team-a/support",outcome="completed",code=""} 1',
    );
    expect(out).toContain(
      'agentkourier_turn_duration_seconds_bucket{le="2.5",binding="team-a/support",outcome="error"} 1',
    );
    expect(out).toContain(
      'agentkourier_turn_duration_seconds_bucket{le="1",binding="team-a/support",outcome="error"} 0',
    );
  });

  it('maps each engine event it counts to its metric', async () => {
    const { metrics, text } = fresh();
    const events: EngineEvent[] = [
      { ...base, type: 'turn.received', turnId: 'a', kind: 'message', queued: false },
      { ...base, type: 'turn.received', turnId: 'b', kind: 'message', queued: true },
      { ...base, type: 'answer.started', turnId: 'a', latencyMs: 300 },
      { ...base, type: 'agent.busy', turnId: 'a', code: 'agent_busy', delayMs: 1500 },
      { ...base, type: 'agent.busy', turnId: 'a', code: 'agent_throttled', delayMs: 500 },
      { ...base, type: 'stream.lost', turnId: 'a', taskId: 'task', code: 'lost_connection' },
      { ...base, type: 'task.resubscribed', taskId: 'task' },
      { ...base, type: 'task.polled', taskId: 'task' },
      { ...base, type: 'task.polled', taskId: 'task', latencyMs: 40 },
      { ...base, type: 'turn.unknown', turnId: 'a' },
      { ...base, type: 'turn.lookup', turnId: 'a', result: 'absent' },
      { ...base, type: 'turn.resent', turnId: 'a', attempt: 2 },
      { ...base, type: 'question.asked', taskId: 'q', kind: 'structured', approval: true },
      { ...base, type: 'question.asked', taskId: 'q2', kind: 'text', approval: false },
      { ...base, type: 'question.answered', taskId: 'q2' },
      { ...base, type: 'question.timeout', taskId: 'q', kind: 'structured', approval: true },
      { ...base, type: 'task.cancel', taskId: 'q', reason: 'question-timeout', ok: false },
      { ...base, type: 'notice.posted', kind: 'cancel-failed' },
    ];
    for (const e of events) metrics.emit(e);
    const out = await text();
    for (const line of [
      'agentkourier_turns_received_total{binding="team-a/support",kind="message"} 2',
      'agentkourier_turns_queued_total{binding="team-a/support"} 1',
      'agentkourier_first_answer_text_seconds_count{binding="team-a/support"} 1',
      'agentkourier_first_answer_text_seconds_sum{binding="team-a/support"} 0.3',
      'agentkourier_busy_backoffs_total{binding="team-a/support"} 2',
      'agentkourier_busy_backoff_seconds_total{binding="team-a/support"} 2',
      'agentkourier_stream_drops_total{binding="team-a/support"} 1',
      'agentkourier_resubscribes_total{binding="team-a/support"} 1',
      'agentkourier_polls_total{binding="team-a/support"} 2',
      'agentkourier_poll_duration_seconds_count{binding="team-a/support"} 1',
      'agentkourier_poll_duration_seconds_sum{binding="team-a/support"} 0.04',
      'agentkourier_unknown_outcomes_total{binding="team-a/support"} 1',
      'agentkourier_task_lookups_total{binding="team-a/support",result="absent"} 1',
      'agentkourier_turn_resends_total{binding="team-a/support"} 1',
      'agentkourier_questions_asked_total{binding="team-a/support",kind="approval"} 1',
      'agentkourier_questions_asked_total{binding="team-a/support",kind="text"} 1',
      'agentkourier_questions_answered_total{binding="team-a/support"} 1',
      'agentkourier_question_timeouts_total{binding="team-a/support",kind="approval"} 1',
      'agentkourier_task_cancels_total{binding="team-a/support",reason="question-timeout",result="failed"} 1',
      'agentkourier_notices_total{binding="team-a/support",kind="cancel-failed"} 1',
    ]) {
      expect(out).toContain(line);
    }
  });

  it('counts a Binding’s agent calls by method and outcome, from the client’s own report', async () => {
    const { metrics, text } = fresh();
    const client = new A2AClient(
      { endpoint: 'http://127.0.0.1:1/a2a', identity: { kind: 'user-id', userId: 'U' } },
      { onCall: (call) => metrics.agentCall('ns/b', call) },
    );
    await expect(client.card()).rejects.toMatchObject({ code: 'unreachable' });
    const out = await text();
    expect(out).toContain(
      'agentkourier_agent_calls_total{binding="ns/b",method="GetAgentCard",outcome="unreachable"} 1',
    );
    expect(out).toContain(
      'agentkourier_agent_call_duration_seconds_count{binding="ns/b",method="GetAgentCard"} 1',
    );
    // Never the endpoint: a URL may carry a credential.
    expect(out).not.toContain('127.0.0.1');
  });

  it('times and counts store operations through the decorator, failures apart', async () => {
    const { metrics, text } = fresh();
    const store = measuredStore(new SqliteStore(':memory:'), metrics);
    await store.migrate();
    expect(store.sharedByReplicas).toBe(false);
    const session = await store.openSession({
      key: { surface: 'test', workspaceId: 'T1', channelId: 'C1', threadId: '1.1' },
      binding: 'ns/b',
      now: 1,
    });
    expect(await store.getSession(session.id)).toMatchObject({ id: session.id });
    await expect(store.commit({ session: { ...session, version: 99 }, now: 2 })).rejects.toBeInstanceOf(
      StaleWriteError,
    );
    await store.close();
    const out = await text();
    expect(out).toContain('agentkourier_store_operations_total{operation="openSession",result="ok"} 1');
    expect(out).toContain('agentkourier_store_operations_total{operation="getSession",result="ok"} 1');
    expect(out).toContain('agentkourier_store_operations_total{operation="commit",result="error"} 1');
    expect(out).toContain('agentkourier_store_operation_duration_seconds_count{operation="migrate"} 1');
  });

  it('reads active sessions at each scrape, and keeps two registries apart', async () => {
    const a = fresh();
    const b = fresh();
    let active = 3;
    a.metrics.countActiveSessions(() => active);
    expect(await a.text()).toContain('agentkourier_active_sessions 3');
    active = 1;
    expect(await a.text()).toContain('agentkourier_active_sessions 1');
    expect(await b.text()).toContain('agentkourier_active_sessions 0');
    a.metrics.emit({ ...base, type: 'credentials.rejected', status: 401 });
    expect(await b.text()).not.toContain('agentkourier_credential_rejections_total{');
  });
});

describe('fanOut', () => {
  const at = { sessionId: 's1', binding: 'team-a/support', at: 1 };
  const agentEvent: EngineEvent = { ...at, type: 'agent.event', turnId: 't1', kind: 'artifact-update' };
  const settled: EngineEvent = {
    ...at,
    type: 'turn.settled',
    turnId: 't1',
    outcome: 'completed',
    taskId: null,
    durationMs: 1,
    answerLength: 0,
  };

  it('sends agent.event only to the sinks that ask for it, and every other event to all', () => {
    const asking: EngineEvent[] = [];
    const other: EngineEvent[] = [];
    const sink = fanOut({ agentEvents: true, emit: (e) => asking.push(e) }, { emit: (e) => other.push(e) });
    expect(sink.agentEvents).toBe(true);
    sink.emit(agentEvent);
    sink.emit(settled);
    expect(asking).toEqual([agentEvent, settled]);
    expect(other).toEqual([settled]);
  });

  it('asks for agent.event only when one of its sinks does (the broker’s own sinks do not)', () => {
    expect(fanOut({ emit: () => undefined }, { agentEvents: false, emit: () => undefined }).agentEvents).toBe(
      false,
    );
    const metrics = new BrokerMetrics(new Registry(), { version: '1.2.3' });
    expect(fanOut(metrics).agentEvents).toBe(false);
  });
});
