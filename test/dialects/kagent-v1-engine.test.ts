import { afterEach, describe, expect, it } from 'vitest';
import type { BuiltReply, StructuredReply } from '../../src/core/ports.js';
import {
  type HitlRequest,
  hitlRequestOf,
  KAGENT_HITL_EXTENSION as URI,
} from '../../src/dialects/kagent-v1/index.js';
import { BINDING, type SentMessage, sentMessages, sentText } from '../helpers/engine-harness.js';
import { kagentApproval, kagentAskUser, kagentMalformed } from '../peers/contract-agent/contract-agent.js';
import {
  AGENT_PATH,
  type KagentHarness,
  type KagentHarnessOptions,
  startKagentHarness,
} from './kagent-harness.js';

/**
 * The kagent-v1 dialect end to end: the session engine, the real A2A client configured by
 * dialectSpec('kagent-v1'), and the contract agent playing kagent's runtime (its HITL v1
 * pauses, and its validation of the replies), on both wire versions.
 */

describe.each(['1.0', '0.3'] as const)('kagent-v1 dialect through the engine at %s', (version) => {
  const harnesses: KagentHarness[] = [];
  afterEach(async () => {
    await Promise.all(harnesses.splice(0).map((h) => h.close()));
  });

  async function harness(options: Partial<KagentHarnessOptions> = {}): Promise<KagentHarness> {
    const h = await startKagentHarness({ version, ...options });
    harnesses.push(h);
    return h;
  }

  const sendMethod = version === '1.0' ? 'SendStreamingMessage' : 'message/stream';
  const cancelMethod = version === '1.0' ? 'CancelTask' : 'tasks/cancel';

  const sent = (h: KagentHarness): SentMessage[] => sentMessages(h, sendMethod);
  const textOf = sentText;

  /** Starts a turn and waits for its pause to be shown; returns the pending question. */
  async function paused(
    h: KagentHarness,
    thread: string,
  ): Promise<{ sessionId: string; turnId: string; questionKey: string; request: HitlRequest }> {
    const { sessionId, turnId } = await h.say(thread, `${thread}-1`, 'do the thing');
    await h.surface.waitFor(() => h.surface.of(sessionId, 'question').length === 1, 5_000, 'the question');
    const session = await h.store.getSession(sessionId);
    const question = session?.question;
    const request = hitlRequestOf(question?.payload);
    if (question === null || question === undefined || request === undefined) throw new Error('no question');
    expect(question.kind).toBe('structured');
    return { sessionId, turnId, questionKey: question.questionKey, request };
  }

  /**
   * The Binding's dialect builds this message for the next reply, whatever the reply: an agent's
   * refusal of a reply (E-4) needs one the kagent-v1 dialect would never build.
   */
  function sendsAsBuilt(h: KagentHarness, built: BuiltReply): void {
    const route = h.registry.routes.get(BINDING);
    if (route === undefined) throw new Error('no route');
    h.registry.routes.set(BINDING, { ...route, dialect: { ...route.dialect, buildReply: () => built } });
  }

  async function completed(h: KagentHarness, sessionId: string): Promise<void> {
    await h.surface.waitFor(
      () => h.surface.of(sessionId, 'answer').some((m) => m.final === true),
      5_000,
      'the final answer',
    );
    await h.engine.idle();
  }

  it(`[Q-3][Q-2][S-6] answers questions with choices: the reply names the extension and carries the response, no label line (${version})`, async () => {
    const h = await harness();
    h.agent.enqueueFor(
      sendMethod,
      kagentAskUser([
        { question: 'Which DB?', choices: ['PostgreSQL', 'MySQL'] },
        { question: 'Anything else?' },
      ]),
    );
    const { sessionId, questionKey } = await paused(h, 't1');
    expect(h.surface.of(sessionId, 'question')[0]?.text).toBe('The agent asks:\nWhich DB?\nAnything else?');

    const result = await h.answer('t1', questionKey, {
      type: 'ask_user',
      answers: [['PostgreSQL'], ['Caching']],
    });
    expect(result.status).toBe('accepted');
    await completed(h, sessionId);

    const [, reply] = sent(h);
    const task = [...h.agent.tasks.values()][0];
    expect(reply?.taskId).toBe(task?.id);
    expect(reply?.contextId).toBe(task?.contextId);
    expect(reply?.extensions).toEqual([URI]);
    expect(reply?.metadata?.[URI]).toEqual({
      type: 'ask_user_response',
      id: 'ask-conf-1',
      answers: [{ answer: ['PostgreSQL'] }, { answer: ['Caching'] }],
    });
    expect(reply?.metadata?.['agentkourier.dev/actor']).toEqual({
      id: 'U777',
      name: 'Grace',
      email: 'grace@example.com',
    });
    expect(reply?.parts).toHaveLength(1);
    expect(textOf(reply)).toBe('Which DB? → PostgreSQL\nAnything else? → Caching');
    expect(textOf(reply)).not.toContain('[Test:');
    expect(h.agent.kagent.answers).toEqual([
      { taskId: task?.id, id: 'ask-conf-1', answers: [['PostgreSQL'], ['Caching']] },
    ]);
    expect(task?.status.state).toBe('completed');
    expect(h.surface.of(sessionId, 'answer').at(-1)?.text).toBe('Thanks: PostgreSQL; Caching');
  });

  it(`[Q-5][Q-3] approves add_numbers and denies check_status with a reason in one pause: only add_numbers runs (${version})`, async () => {
    const h = await harness();
    h.agent.enqueueFor(
      sendMethod,
      kagentApproval(
        [
          { id: 'adk-conf-1', callId: 'call_a', name: 'add_numbers', args: { a: 2, b: 3 } },
          { id: 'adk-conf-2', callId: 'call_b', name: 'check_status', args: { service: 'api' } },
        ],
        { results: { add_numbers: { result: 5 } } },
      ),
    );
    const { sessionId, questionKey } = await paused(h, 't1');
    expect(h.surface.of(sessionId, 'question')[0]?.text).toBe(
      'The agent needs approval for 2 tool calls: add_numbers, check_status',
    );
    const reply: StructuredReply = {
      type: 'tool_approval',
      decisions: [
        { id: 'adk-conf-1', approved: true },
        { id: 'adk-conf-2', approved: false, reason: 'not during the freeze' },
      ],
    };
    expect((await h.answer('t1', questionKey, reply)).status).toBe('accepted');
    await completed(h, sessionId);

    const taskId = [...h.agent.tasks.keys()][0];
    expect(h.agent.kagent.ran).toEqual([
      { taskId, id: 'adk-conf-1', callId: 'call_a', name: 'add_numbers', args: { a: 2, b: 3 } },
    ]);
    expect(h.agent.kagent.denied).toEqual([
      { taskId, id: 'adk-conf-2', name: 'check_status', reason: 'not during the freeze' },
    ]);
    expect(h.agent.kagent.refused).toEqual([]);
    expect(sent(h)[1]?.metadata?.[URI]).toEqual({
      type: 'tool_approval_response',
      approvals: [
        { id: 'adk-conf-1', approved: true },
        { id: 'adk-conf-2', approved: false, rejection_reason: 'not during the freeze' },
      ],
    });
    expect(textOf(sent(h)[1])).toBe('Approved add_numbers\nDenied check_status: not during the freeze');
    expect(h.surface.notices(sessionId)).toEqual([]);
  });

  it(`[Q-3] answers a sub-agent's pause with the sub-agent's tool call ids (${version})`, async () => {
    const h = await harness();
    h.agent.enqueueFor(
      sendMethod,
      kagentApproval([{ id: 'child-conf-1', name: 'delete_pod', args: { name: 'obsolete' } }], {
        subagent: { name: 'k8s_agent', taskId: 'child-task-1' },
      }),
    );
    const { sessionId, questionKey } = await paused(h, 't1');
    expect(h.surface.of(sessionId, 'question')[0]?.text).toBe(
      'The sub-agent k8s_agent needs approval for a tool call: delete_pod',
    );
    await h.answer('t1', questionKey, {
      type: 'tool_approval',
      decisions: [{ id: 'child-conf-1', approved: true }],
    });
    await completed(h, sessionId);
    expect(h.agent.kagent.ran.map((r) => [r.id, r.name, r.subagent])).toEqual([
      ['child-conf-1', 'delete_pod', 'k8s_agent'],
    ]);
    expect(sent(h)[1]?.metadata?.[URI]).toEqual({
      type: 'tool_approval_response',
      approvals: [{ id: 'child-conf-1', approved: true }],
    });
  });

  it(`[Q-3] answers a sub-agent's question with the child's ask_user id (${version})`, async () => {
    const h = await harness();
    h.agent.enqueueFor(
      sendMethod,
      kagentAskUser([{ question: 'Which namespace?', choices: ['prod', 'staging'] }], {
        subagent: { name: 'k8s_agent' },
      }),
    );
    const { sessionId, questionKey } = await paused(h, 't1');
    await h.answer('t1', questionKey, { type: 'ask_user', answers: [['staging']] });
    await completed(h, sessionId);
    expect(h.agent.kagent.answers.map((a) => [a.id, a.answers])).toEqual([['child-ask-1', [['staging']]]]);
    expect(h.agent.kagent.refused).toEqual([]);
  });

  it(`[R-9] shows tool calls and results as step cards, never ADK's confirmation plumbing (${version})`, async () => {
    const h = await harness();
    h.agent.enqueueFor(
      sendMethod,
      kagentApproval([{ id: 'c1', callId: 'call_a', name: 'add_numbers', args: { a: 2, b: 3 } }], {
        results: { add_numbers: { result: 5 } },
      }),
    );
    const { sessionId, questionKey } = await paused(h, 't1');
    await h.answer('t1', questionKey, { type: 'tool_approval', decisions: [{ id: 'c1', approved: true }] });
    await completed(h, sessionId);
    expect(h.surface.of(sessionId, 'step').map((m) => m.text)).toEqual([
      'call add_numbers {"a":2,"b":3}',
      'result add_numbers {"result":5}',
    ]);
  });

  it(`[Q-3][Q-1][M-4] cancels a malformed pause and tells the thread, without crashing (${version})`, async () => {
    const h = await harness();
    const payloads = [
      { type: 'tool_approval_request', tools: [] },
      { type: 'tool_approval_request', tools: [{ id: 'x', name: 'n' }] },
      { type: 'ask_user_request', id: 'a', questions: 'Which DB?' },
      { type: 'mystery_request' },
    ];
    for (const payload of payloads) h.agent.enqueueFor(sendMethod, kagentMalformed(payload));
    const sessions: string[] = [];
    for (const [i] of payloads.entries()) {
      const { sessionId } = await h.say(`t${i}`, `m${i}`, 'go');
      sessions.push(sessionId);
      await h.surface.waitFor(
        () => h.surface.notices(sessionId).includes('question-unsupported'),
        5_000,
        `the notice for payload ${i}`,
      );
    }
    await h.engine.idle();
    expect(h.agent.rpc(cancelMethod)).toHaveLength(payloads.length);
    for (const task of h.agent.tasks.values()) expect(task.status.state).toBe('canceled');
    for (const sessionId of sessions) {
      expect(h.surface.of(sessionId, 'question')).toHaveLength(0);
      const session = await h.store.getSession(sessionId);
      expect(session?.task).toBeNull();
      expect(session?.question).toBeNull();
    }
    // The engine goes on: the next turn in the same thread is answered.
    const next = await h.say('t0', 'after', 'hello again');
    await h.surface.waitFor(
      () => h.surface.of(next.sessionId, 'answer').some((m) => m.final === true),
      5_000,
    );
  });

  it(`[Q-5] takes one decision when two approvers press at once: the second is a duplicate (${version})`, async () => {
    const h = await harness();
    h.agent.enqueueFor(sendMethod, kagentApproval([{ id: 'c1', name: 'restart_deployment', args: {} }]));
    const { sessionId, questionKey } = await paused(h, 't1');
    const [first, second] = await Promise.all([
      h.answer('t1', questionKey, { type: 'tool_approval', decisions: [{ id: 'c1', approved: true }] }),
      h.answer('t1', questionKey, {
        type: 'tool_approval',
        decisions: [{ id: 'c1', approved: false, reason: 'no' }],
      }),
    ]);
    expect(first.status).toBe('accepted');
    expect(second.status).toBe('duplicate');
    await completed(h, sessionId);
    expect(sent(h)).toHaveLength(2);
    expect(h.agent.kagent.ran.map((r) => r.id)).toEqual(['c1']);
    expect(h.agent.kagent.denied).toEqual([]);
    // Once the question is answered, a late press is stale.
    const late = await h.answer('t1', questionKey, {
      type: 'tool_approval',
      decisions: [{ id: 'c1', approved: true }],
    });
    expect(late.status).toBe('stale');
  });

  it(`[Q-4][M-4] refuses an answer after the question timed out as stale (${version})`, async () => {
    const h = await harness({ settings: { questionTimeoutMs: 300 } });
    h.agent.enqueueFor(sendMethod, kagentApproval([{ id: 'c1', name: 'restart_deployment', args: {} }]));
    const { sessionId, questionKey } = await paused(h, 't1');
    await h.surface.waitFor(
      () => h.surface.notices(sessionId).includes('question-timeout'),
      5_000,
      'the timeout',
    );
    const late = await h.answer('t1', questionKey, {
      type: 'tool_approval',
      decisions: [{ id: 'c1', approved: true }],
    });
    expect(late.status).toBe('stale');
    await h.engine.idle();
    expect(sent(h)).toHaveLength(1);
    expect(h.agent.rpc(cancelMethod)).toHaveLength(1);
    expect(h.agent.kagent.ran).toEqual([]);
  });

  it(`[DT-2][DT-4][S-8] reaches the agent at url/agents/<ns>/<name> and asks for the extension on every call (${version})`, async () => {
    const h = await harness();
    h.agent.enqueueFor(sendMethod, kagentApproval([{ id: 'c1', name: 'add_numbers', args: { a: 1, b: 1 } }]));
    const { sessionId, questionKey } = await paused(h, 't1');
    await h.answer('t1', questionKey, { type: 'tool_approval', decisions: [{ id: 'c1', approved: true }] });
    await completed(h, sessionId);
    const card = h.agent.requests.filter((r) => r.httpMethod === 'GET');
    expect(card.map((r) => r.path)).toEqual([`${AGENT_PATH}/.well-known/agent-card.json`]);
    const calls = h.agent.requests.filter((r) => r.rpcMethod !== undefined);
    expect(new Set(calls.map((r) => r.rpcMethod)).size).toBeGreaterThan(1); // sends and reads
    for (const call of calls) {
      expect(call.path).toBe(AGENT_PATH);
      expect(call.headers['a2a-extensions']).toBe(URI);
      if (version === '0.3') expect(call.headers['x-a2a-extensions']).toBe(URI);
    }
    expect(h.agent.kagent.ran.map((r) => r.id)).toEqual(['c1']);
  });

  it(`[S-8][Q-1] without the extension in the card, asks for none, and kagent's hint-only pause is a text question (${version})`, async () => {
    const h = await harness({ card: {} });
    h.agent.enqueueFor(sendMethod, kagentApproval([{ id: 'c1', name: 'restart_deployment', args: {} }]));
    const { sessionId } = await h.say('t1', '1', 'restart it');
    await h.surface.waitFor(() => h.surface.of(sessionId, 'question').length === 1, 5_000, 'the question');
    const session = await h.store.getSession(sessionId);
    expect(session?.question?.kind).toBe('text');
    expect(h.surface.of(sessionId, 'question')[0]?.text).toBe(
      "Tool 'restart_deployment' requires approval before execution. (restart_deployment)",
    );
    for (const call of h.agent.requests) expect(call.headers['a2a-extensions']).toBeUndefined();
    // A typed reply is ordinary text to kagent: it never reaches the paused tool.
    const reply = await h.say('t1', '2', 'yes, go ahead');
    await h.surface.waitFor(
      () => h.surface.of(reply.sessionId, 'answer').some((m) => m.final === true),
      5_000,
    );
    expect(sent(h)[1]?.extensions).toBeUndefined();
    expect(h.agent.kagent.plain.map((p) => p.text)).toEqual([
      '[Test: Ada (U123) <ada@example.com>]\nyes, go ahead',
    ]);
    expect(h.agent.kagent.ran).toEqual([]);
  });

  it(`[DT-4] refuses an agent that requires an extension kagent-v1 does not speak, not one that requires HITL (${version})`, async () => {
    const refused = await harness({
      card: { extensions: [{ uri: URI }, { uri: 'https://example.com/ext/secret/v1', required: true }] },
    });
    const { sessionId } = await refused.say('t1', '1', 'hi');
    await refused.surface.waitFor(() => refused.surface.notices(sessionId).includes('agent-refused'), 5_000);
    expect(refused.surface.of(sessionId, 'notice')[0]?.text).toContain(
      'agent requires an unsupported extension',
    );
    expect(refused.agent.rpc(sendMethod)).toHaveLength(0);

    const accepted = await harness({ card: { extensions: [{ uri: URI, required: true }] } });
    const ok = await accepted.say('t1', '1', 'hi');
    await accepted.surface.waitFor(() =>
      accepted.surface.of(ok.sessionId, 'answer').some((m) => m.final === true),
    );
    expect(accepted.surface.notices(ok.sessionId)).toEqual([]);
  });

  it(`[E-4][Q-5] cancels the task when kagent refuses the reply, and runs nothing (${version})`, async () => {
    const h = await harness();
    h.agent.enqueueFor(
      sendMethod,
      kagentApproval([
        { id: 'c1', name: 'add_numbers', args: {} },
        { id: 'c2', name: 'check_status', args: {} },
      ]),
    );
    const { sessionId, questionKey } = await paused(h, 't1');
    // A reply the dialect's builders would never make: one id left out.
    sendsAsBuilt(h, {
      text: 'Approved add_numbers',
      metadata: { [URI]: { type: 'tool_approval_response', approvals: [{ id: 'c1', approved: true }] } },
    });
    const answered = { type: 'tool_approval', decisions: [{ id: 'c1', approved: true }] } as const;
    expect(
      (await h.answer('t1', questionKey, { ...answered, decisions: [...answered.decisions] })).status,
    ).toBe('accepted');
    await h.surface.waitFor(
      () => h.surface.notices(sessionId).includes('answer-rejected'),
      5_000,
      'the notice',
    );
    await h.engine.idle();
    expect(h.agent.kagent.refused.map((r) => r.reason)).toEqual([
      'Tool approval response is missing ids: c2',
    ]);
    expect(h.agent.kagent.ran).toEqual([]);
    expect(h.agent.rpc(cancelMethod)).toHaveLength(1);
  });

  it(`[T-3] reports the failed task when kagent's executor fails on a refused reply (${version})`, async () => {
    const h = await harness();
    h.agent.enqueueFor(
      sendMethod,
      kagentAskUser([{ question: 'Which DB?' }, { question: 'Why?' }], { onInvalid: 'failed' }),
    );
    const { sessionId, questionKey } = await paused(h, 't1');
    // One answer for two questions: what kagent refuses, and the dialect never builds.
    sendsAsBuilt(h, {
      text: 'PostgreSQL',
      metadata: {
        [URI]: { type: 'ask_user_response', id: 'ask-conf-1', answers: [{ answer: ['PostgreSQL'] }] },
      },
    });
    await h.answer('t1', questionKey, { type: 'ask_user', answers: [['PostgreSQL'], ['because']] });
    await h.surface.waitFor(() => h.surface.notices(sessionId).includes('task-failed'), 5_000, 'the notice');
    expect(h.agent.kagent.refused.map((r) => r.reason)).toEqual([
      'ask_user response must answer every question',
    ]);
  });

  it(`[Q-3] keeps typed messages waiting behind a pending approval (${version})`, async () => {
    const h = await harness();
    h.agent.enqueueFor(sendMethod, kagentApproval([{ id: 'c1', name: 'add_numbers', args: {} }]));
    const { sessionId, questionKey } = await paused(h, 't1');
    await h.say('t1', 'typed', 'and also this');
    // The typed message is stored and its session driven until it waits: then nothing was sent.
    await h.engine.idle();
    expect(sent(h)).toHaveLength(1);
    await h.answer('t1', questionKey, { type: 'tool_approval', decisions: [{ id: 'c1', approved: true }] });
    await h.surface.waitFor(
      () => h.surface.of(sessionId, 'answer').filter((m) => m.final === true).length === 2,
      5_000,
      'both answers',
    );
    const [, answer, typed] = sent(h);
    expect(answer?.extensions).toEqual([URI]);
    expect(typed?.taskId).toBeUndefined();
    expect(textOf(typed)).toContain('and also this');
  });
});
