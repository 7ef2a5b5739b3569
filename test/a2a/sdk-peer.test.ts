import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { A2AClient } from '../../src/a2a/client.js';
import { eventIds } from '../../src/core/agent/model.js';
import { answerText, collect, idsOf, lastState } from '../helpers/stream.js';
import { type SdkAgent, startSdkAgent } from '../peers/js-sdk-agent.js';

// The official @a2a-js/sdk@1.3.0 server, an independent A2A 1.0 implementation, as the peer.
describe('A2A client against the @a2a-js/sdk 1.3.0 server (A2A 1.0)', () => {
  let agent: SdkAgent;
  let client: A2AClient;

  beforeAll(async () => {
    agent = await startSdkAgent({ legacyCompat: true });
    client = new A2AClient({ endpoint: agent.endpoint, identity: { kind: 'bearer', token: 'tok-sdk' } });
  });
  afterAll(async () => agent.close());

  it('[M-1] streams a turn: task first, chunks appended, completed', async () => {
    const card = await client.card();
    expect(card.protocolVersion).toBe('1.0');
    const events = await collect(client.sendStreamingMessage({ messageId: 'm-sdk-1', text: 'hello' }));
    expect(events[0]?.kind).toBe('task');
    expect(answerText(events)).toBe('chunk 0 chunk 1 chunk 2 ');
    expect(lastState(events)).toBe('completed');
    const sent = agent.requests.find((r) => r.method === 'SendStreamingMessage');
    expect(sent?.headers['a2a-version']).toBe('1.0');
    expect(sent?.headers.authorization).toBe('Bearer tok-sdk');
    expect(sent?.body).toMatchObject({
      params: { message: { messageId: 'm-sdk-1', role: 'ROLE_USER', parts: [{ text: 'hello' }] } },
    });
  });

  it('[S-3] sends no contextId on a first turn, then the one the agent returned', async () => {
    const first = await collect(client.sendStreamingMessage({ messageId: 'm-sdk-2', text: 'one' }));
    const { contextId } = eventIds(
      first[0] ?? { kind: 'message', message: { messageId: '', role: 'agent', parts: [] } },
    );
    expect(contextId).not.toBe('');
    const second = await collect(
      client.sendStreamingMessage({ messageId: 'm-sdk-3', text: 'two', contextId }),
    );
    expect(idsOf(second).contextId).toBe(contextId);
    const bodies = agent.requests.filter((r) => r.method === 'SendStreamingMessage').map((r) => r.body);
    expect(JSON.stringify(bodies.at(-2))).not.toContain('contextId');
    expect(bodies.at(-1)).toMatchObject({ params: { message: { contextId } } });
  });

  it('[M-2] reads the finished task back with GetTask', async () => {
    const events = await collect(client.sendStreamingMessage({ messageId: 'm-sdk-4', text: 'read me' }));
    const { taskId } = idsOf(events);
    const task = await client.getTask(taskId);
    expect(task.id).toBe(taskId);
    expect(task.status.state).toBe('completed');
    expect(task.history.some((m) => m.messageId === 'm-sdk-4')).toBe(true);
  });

  it('[Q-2] answers a question with one text part to the paused task', async () => {
    const asked = await collect(client.sendStreamingMessage({ messageId: 'm-sdk-5', text: 'ask' }));
    expect(lastState(asked)).toBe('input-required');
    const { taskId, contextId } = idsOf(asked);
    const answered = await collect(
      client.sendStreamingMessage({ messageId: 'm-sdk-6', text: 'Ada', taskId, contextId }),
    );
    expect(answerText(answered)).toContain('hello Ada');
    expect(lastState(answered)).toBe('completed');
  });

  it('[M-3] resubscribes to a running task: a snapshot first, then the rest', async () => {
    const stream = client.sendStreamingMessage({ messageId: 'm-sdk-7', text: 'slow' });
    const first = await stream.next();
    if (first.done) throw new Error('no first event');
    const { taskId } = eventIds(first.value);
    await stream.return(undefined);
    const events = await collect(client.subscribeToTask(taskId));
    expect(events[0]?.kind).toBe('task');
    expect(lastState(events)).toBe('completed');
  });

  it('[M-4] cancels a running task', async () => {
    const stream = client.sendStreamingMessage({ messageId: 'm-sdk-8', text: 'slow' });
    const first = await stream.next();
    if (first.done) throw new Error('no first event');
    const { taskId } = eventIds(first.value);
    const canceled = await client.cancelTask(taskId);
    expect(canceled.status.state).toBe('canceled');
    const rest = await collect(stream);
    expect(lastState(rest)).toBe('canceled');
  });

  it('[M-6] lists the tasks of a context and finds a turn by its messageId', async () => {
    const events = await collect(client.sendStreamingMessage({ messageId: 'm-sdk-9', text: 'list me' }));
    const { contextId, taskId } = idsOf(events);
    await collect(client.sendStreamingMessage({ messageId: 'm-sdk-10', text: 'and me', contextId }));
    const found = await client.findTaskByMessageId(contextId, 'm-sdk-9');
    expect(found?.id).toBe(taskId);
    expect(await client.findTaskByMessageId(contextId, 'never-sent')).toBeUndefined();
    const list = agent.requests.filter((r) => r.method === 'ListTasks').at(-1);
    expect(list?.body).toMatchObject({ params: { contextId } });
  });

  it('[R-1] passes a bare Message on as a message event, naming no task', async () => {
    const events = await collect(client.sendStreamingMessage({ messageId: 'm-sdk-11', text: 'message' }));
    expect(events).toHaveLength(1);
    expect(events[0]?.kind).toBe('message');
  });

  it('[T-3] reports a failed task with its status message', async () => {
    const events = await collect(client.sendStreamingMessage({ messageId: 'm-sdk-12', text: 'fail' }));
    expect(lastState(events)).toBe('failed');
  });
});
