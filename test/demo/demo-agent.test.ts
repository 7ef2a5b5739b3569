import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { A2AClient } from '../../src/a2a/client.js';
import { type StreamEvent, textOf } from '../../src/core/agent/model.js';
import { type DemoAgent, startDemoAgent } from '../../src/demo/demo-agent.js';
import { HITL_URI } from '../../src/demo/scenarios.js';
import { toolStepsOf } from '../../src/dialects/tool-steps.js';
import { answerText, collect, idsOf, lastState } from '../helpers/stream.js';

describe('the demo agent (a real A2A 1.0 server on the official SDK)', () => {
  let demo: DemoAgent;
  let client: A2AClient;
  beforeAll(async () => {
    demo = await startDemoAgent({ chunkDelayMs: 0 });
    client = new A2AClient({
      endpoint: demo.endpoint,
      identity: { kind: 'user-id', userId: 'U1' },
      extensions: [HITL_URI],
    });
  });
  afterAll(async () => demo.close());

  it('advertises streaming and the HITL extension at the kagent layout', async () => {
    const card = await client.card();
    expect(card).toMatchObject({ protocolVersion: '1.0', streaming: true });
    expect(card.extensions).toEqual([{ uri: HITL_URI, required: false }]);
    expect(demo.endpoint).toMatch(/\/agents\/demo\/assistant$/);
  });

  it('streams an answer in artifact chunks, after a tool step', async () => {
    const events = await collect(
      client.sendStreamingMessage({ messageId: 'd1', text: '[Web: Ada]\nhello there' }),
    );
    expect(lastState(events)).toBe('completed');
    expect(events.filter((e) => e.kind === 'artifact-update').length).toBeGreaterThan(10);
    expect(answerText(events)).toContain('hello there');
    const steps = events.flatMap((e) => toolStepsOf(e));
    expect(steps.map((s) => `${s.kind}:${s.toolName}`)).toEqual(['call:search_docs', 'result:search_docs']);
  });

  it("searches for the person's words, not the broker's label line in front of them", async () => {
    const events = await collect(
      client.sendStreamingMessage({
        messageId: 'd1-label',
        text: '[Web chat: Local user (webchat-local)]\nhello there',
      }),
    );
    const call = events.flatMap((e) => toolStepsOf(e)).find((s) => s.kind === 'call');
    expect(call?.summary).toContain('hello there');
    expect(call?.summary).not.toContain('Web chat');
    expect(answerText(events)).toContain('You said: _hello there_');
  });

  it('asks a text question and answers the reply', async () => {
    const asked = await collect(client.sendStreamingMessage({ messageId: 'd2', text: 'ask me something' }));
    expect(lastState(asked)).toBe('input-required');
    const status = asked.findLast((e) => e.kind === 'status-update');
    expect(status?.kind === 'status-update' && textOf(status.status.message?.parts ?? [])).toContain(
      'staging or production',
    );
    const { taskId, contextId } = idsOf(asked);
    const answered = await collect(
      client.sendStreamingMessage({ messageId: 'd3', text: 'staging', taskId, contextId }),
    );
    expect(lastState(answered)).toBe('completed');
    expect(answerText(answered)).toContain('staging');
  });

  it('asks for two tools through kagent HITL and runs only the approved one', async () => {
    const asked = await collect(client.sendStreamingMessage({ messageId: 'd4', text: 'approve a deploy' }));
    const pause = asked.findLast((e) => e.kind === 'status-update');
    if (pause?.kind !== 'status-update') throw new Error('no pause');
    expect(pause.status.state).toBe('input-required');
    expect(pause.status.message?.extensions).toEqual([HITL_URI]);
    const request = pause.status.message?.metadata?.[HITL_URI] as {
      type: string;
      tools: Array<{ id: string; name: string }>;
    };
    expect(request.type).toBe('tool_approval_request');
    expect(request.tools.map((t) => t.name)).toEqual(['restart_deployment', 'delete_pod']);
    const { taskId, contextId } = idsOf(asked);
    const [restart, del] = request.tools;
    const answered = await collect(
      client.sendStreamingMessage({
        messageId: 'd5',
        text: 'Approved restart_deployment; denied delete_pod',
        taskId,
        contextId,
        extensions: [HITL_URI],
        metadata: {
          [HITL_URI]: {
            type: 'tool_approval_response',
            approvals: [
              { id: restart?.id, approved: true },
              { id: del?.id, approved: false, rejection_reason: 'not during the freeze' },
            ],
          },
        },
      }),
    );
    expect(lastState(answered)).toBe('completed');
    const text = answerText(answered);
    expect(text).toContain('Ran `restart_deployment`');
    expect(text).toContain('Did not run `delete_pod` (denied: not during the freeze)');
    expect(answered.flatMap((e) => toolStepsOf(e)).map((s) => s.toolName)).toEqual([
      'restart_deployment',
      'restart_deployment',
    ]);
  });

  it('sends only a text hint for an approval when the extension was not asked for', async () => {
    const plain = new A2AClient({ endpoint: demo.endpoint, identity: { kind: 'user-id', userId: 'U1' } });
    const asked = await collect(plain.sendStreamingMessage({ messageId: 'd6', text: 'approve it' }));
    const pause = asked.findLast((e) => e.kind === 'status-update');
    expect(pause?.kind === 'status-update' && pause.status.message?.metadata).toBeUndefined();
  });

  it('answers ordinary text, even with a word near a documented one ("hello after restart")', async () => {
    for (const [id, text] of [
      ['d8', 'hello after restart'],
      ['d9', 'please deploy and tell me a story'],
      ['d10', 'any question? an error?'],
    ]) {
      const events = await collect(
        client.sendStreamingMessage({ messageId: id as string, text: text as string }),
      );
      expect(lastState(events), text).toBe('completed');
      const paused = events.some((e) => e.kind === 'status-update' && e.status.state === 'input-required');
      expect(paused, text).toBe(false);
    }
  });

  it("[R-2][R-5] a canceled answer's stream ends with the canceled status, naming the task's context", async () => {
    // The broker reads an event without the task's context as no answer: had the demo's
    // cancel left the context out, the stream would end unsettled and a Stop would be read as
    // a dropped stream, followed with GetTask a second later ("Reconnecting" in the web chat).
    const slow = await startDemoAgent({ chunkDelayMs: 20 });
    try {
      const agent = new A2AClient({ endpoint: slow.endpoint, identity: { kind: 'user-id', userId: 'U1' } });
      const events: StreamEvent[] = [];
      let canceled: Promise<unknown> | undefined;
      for await (const event of agent.sendStreamingMessage({ messageId: 'd11', text: 'long' })) {
        events.push(event);
        if (canceled === undefined && event.kind === 'artifact-update') {
          canceled = agent.cancelTask(event.taskId);
        }
      }
      await canceled;
      const { taskId, contextId } = idsOf(events);
      const last = events.at(-1);
      expect(last).toMatchObject({ kind: 'status-update', taskId, contextId, status: { state: 'canceled' } });
      expect(contextId).not.toBe('');
    } finally {
      await slow.close();
    }
  });

  it('fails when asked to', async () => {
    const events = await collect(client.sendStreamingMessage({ messageId: 'd7', text: 'please fail' }));
    expect(lastState(events)).toBe('failed');
  });
});
