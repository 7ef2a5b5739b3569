import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { ThreadSummary, ThreadView } from '../../../src/surfaces/webchat/index.js';
import { type ContractAgent, script, startContractAgent } from '../../peers/contract-agent/contract-agent.js';
import { BINDING, startWebChatHarness, type WebChatHarness } from './harness.js';

/**
 * A pause drawn from the neutral form survives a restart of the broker: the thread and its
 * prompt come back from the store, and a decision made after the restart reaches the agent's
 * paused task. Two shapes: a sub-agent's approval with two tool calls, and questions with
 * choices, one of them multiple.
 */

const NESTED_APPROVAL = {
  type: 'tool_approval_request',
  hint: 'Remote agent k8s_agent requires approval',
  tools: [{ id: 'parent-conf', call_id: 'parent-call', name: 'k8s_agent', args: { request: 'clean up' } }],
  nested: {
    subagent_name: 'k8s_agent',
    task_id: 'child-task',
    context_id: 'child-ctx',
    tools: [
      { id: 'child-1', call_id: 'c1', name: 'delete_pod', args: { name: 'obsolete' } },
      { id: 'child-2', call_id: 'c2', name: 'scale_deployment', args: { name: 'api', replicas: 0 } },
    ],
  },
};

const ASK = {
  type: 'ask_user_request',
  id: 'ask-1',
  questions: [
    { question: 'Which DB?', choices: ['PostgreSQL', 'MySQL'], multiple: false },
    { question: 'Which features?', choices: ['Auth', 'Caching'], multiple: true },
  ],
};

describe('a structured question across a restart of the web chat and its engine', () => {
  let agent: ContractAgent | undefined;
  let h: WebChatHarness | undefined;
  let dir: string | undefined;
  afterEach(async () => {
    await h?.close();
    await agent?.close();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    h = agent = dir = undefined;
  });

  async function pausedThenRestarted(payload: unknown): Promise<{ thread: ThreadView; promptId: string }> {
    agent = await startContractAgent({ version: '1.0' });
    dir = mkdtempSync(join(tmpdir(), 'ak-webchat-restart-'));
    const restart = { file: join(dir, 'state.db'), agent };
    h = await startWebChatHarness({ restart });
    agent.enqueueFor(
      'SendStreamingMessage',
      script([{ event: 'task' }, { event: 'input-required', parts: [{ data: payload }] }]),
    );
    const res = await h.api('POST', '/api/threads', { binding: BINDING, text: 'go' });
    const { thread } = res.json as { thread: ThreadSummary };
    const kinds = ['approval', 'question'];
    await h.waitForThread(thread.id, (t) => t.messages.some((m) => kinds.includes(m.kind)), 'the prompt');
    await h.engine.idle();
    await h.close();
    h = await startWebChatHarness({ restart });
    const back = await h.waitForThread(
      thread.id,
      (t) => t.messages.some((m) => (m.approval?.status ?? m.question?.status) === 'open'),
      'the prompt, open again',
    );
    const prompt = back.messages.find((m) => kinds.includes(m.kind));
    return { thread: back, promptId: prompt?.id ?? '' };
  }

  it("a sub-agent's approval of two tool calls is decided after the restart and reaches the paused task", async () => {
    const { thread, promptId } = await pausedThenRestarted(NESTED_APPROVAL);
    const prompt = thread.messages.find((m) => m.id === promptId);
    expect(prompt?.approval?.tools.map((t) => t.name)).toEqual(['delete_pod', 'scale_deployment']);
    const w = h as WebChatHarness;
    (agent as ContractAgent).enqueueFor(
      'SendStreamingMessage',
      script([{ event: 'working' }, { event: 'chunk', text: 'Done.' }, { event: 'completed' }]),
    );
    const decided = await w.api('POST', `/api/threads/${thread.id}/messages/${promptId}/answer`, {
      decisions: [
        { id: 'child-1', approved: true },
        { id: 'child-2', approved: false, reason: 'not during business hours' },
      ],
    });
    expect(decided.status, decided.text).toBe(202);
    await w.waitForThread(
      thread.id,
      (t) => t.messages.some((m) => m.kind === 'answer' && m.final === true && m.text === 'Done.'),
      'the answer after the decision',
    );
    // The dialect built the reply from the question's own data, kept in the store across the restart.
    expect(w.answered).toHaveLength(1);
    expect(w.answered[0]).toMatchObject({
      payload: NESTED_APPROVAL,
      reply: {
        type: 'tool_approval',
        decisions: [
          { id: 'child-1', approved: true },
          { id: 'child-2', approved: false, reason: 'not during business hours' },
        ],
      },
    });
    const sent = (agent as ContractAgent).rpc('SendStreamingMessage');
    expect(sent).toHaveLength(2);
  });

  it('questions with choices, one of them multiple, are answered after the restart', async () => {
    const { thread, promptId } = await pausedThenRestarted(ASK);
    const prompt = thread.messages.find((m) => m.id === promptId);
    expect(prompt?.question?.items).toEqual([
      { question: 'Which DB?', choices: ['PostgreSQL', 'MySQL'], multiple: false },
      { question: 'Which features?', choices: ['Auth', 'Caching'], multiple: true },
    ]);
    const w = h as WebChatHarness;
    (agent as ContractAgent).enqueueFor(
      'SendStreamingMessage',
      script([{ event: 'working' }, { event: 'chunk', text: 'Noted.' }, { event: 'completed' }]),
    );
    const answered = await w.api('POST', `/api/threads/${thread.id}/messages/${promptId}/answer`, {
      answers: [['PostgreSQL'], ['Auth', 'Caching']],
    });
    expect(answered.status, answered.text).toBe(202);
    await w.waitForThread(
      thread.id,
      (t) => t.messages.some((m) => m.kind === 'answer' && m.text === 'Noted.'),
      'the answer',
    );
    expect(w.answered[0]).toMatchObject({
      payload: ASK,
      reply: { type: 'ask_user', answers: [['PostgreSQL'], ['Auth', 'Caching']] },
    });
  });
});
