import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { A2AClient } from '../../src/a2a/client.js';
import { TaskNotFoundError, UnsupportedByVersionError } from '../../src/core/agent/errors.js';
import { answerText, collect, failureOf, idsOf, lastState } from '../helpers/stream.js';
import { type SdkV03Agent, startSdkV03Agent } from '../peers/js-sdk-v03-agent.js';

// @a2a-js/sdk 0.3.14, the last native A2A 0.3 release (kind-based wire, `final`, no ListTasks).
describe('A2A client against the native @a2a-js/sdk 0.3.14 server (A2A 0.3)', () => {
  let agent: SdkV03Agent;
  let client: A2AClient;

  beforeAll(async () => {
    agent = await startSdkV03Agent();
    client = new A2AClient({
      endpoint: `${agent.endpoint}/`,
      identity: { kind: 'user-id', userId: 'U42' },
      headers: { 'X-Team': 'payments' },
      extensions: ['urn:x-test:ext'],
    });
  });
  afterAll(async () => agent.close());

  it('[M-1][S-1] streams a 0.3 turn: one text part, kind-based wire, no A2A-Version header', async () => {
    const card = await client.card();
    expect(card).toMatchObject({ protocolVersion: '0.3', cardFormat: '0.3' });
    const events = await collect(client.sendStreamingMessage({ messageId: 'v03-1', text: 'hello' }));
    expect(events.map((e) => e.kind)).toEqual([
      'task',
      'status-update',
      'artifact-update',
      'artifact-update',
      'artifact-update',
      'status-update',
    ]);
    expect(answerText(events)).toBe('chunk 0 chunk 1 chunk 2 ');
    expect(lastState(events)).toBe('completed');
    const sent = agent.requests.find((r) => r.method === 'message/stream');
    expect(sent?.headers['a2a-version']).toBeUndefined();
    expect(sent?.headers['x-user-id']).toBe('U42');
    expect(sent?.headers.authorization).toBeUndefined();
    expect(sent?.headers['x-team']).toBe('payments');
    expect(sent?.body).toMatchObject({
      params: {
        message: {
          kind: 'message',
          role: 'user',
          messageId: 'v03-1',
          parts: [{ kind: 'text', text: 'hello' }],
        },
      },
    });
  });

  it('[Q-2] answers a question on 0.3', async () => {
    const asked = await collect(client.sendStreamingMessage({ messageId: 'v03-2', text: 'ask' }));
    expect(lastState(asked)).toBe('input-required');
    const { taskId, contextId } = idsOf(asked);
    const answered = await collect(
      client.sendStreamingMessage({ messageId: 'v03-3', text: 'Ada', taskId, contextId }),
    );
    expect(answerText(answered)).toBe('hello Ada');
    const sent = agent.requests.filter((r) => r.method === 'message/stream').at(-1);
    expect(sent?.body).toMatchObject({ params: { message: { taskId, contextId } } });
  });

  it('[M-2][M-3][M-4] reads, resubscribes to and cancels a 0.3 task', async () => {
    const stream = client.sendStreamingMessage({ messageId: 'v03-4', text: 'slow' });
    const first = await stream.next();
    if (first.done) throw new Error('no first event');
    await stream.return(undefined);
    const { taskId } = idsOf([first.value]);
    expect((await client.getTask(taskId)).status.state).toBe('working');
    const subscription = client.subscribeToTask(taskId);
    const snapshot = await subscription.next();
    expect(snapshot.done === false && snapshot.value.kind).toBe('task');
    expect((await client.cancelTask(taskId)).status.state).toBe('canceled');
    expect(lastState(await collect(subscription))).toBe('canceled');
    expect(agent.requests.map((r) => r.method)).toEqual(
      expect.arrayContaining(['tasks/get', 'tasks/resubscribe', 'tasks/cancel']),
    );
  });

  it('[E-5] maps -32001 in an `event: error` frame to TaskNotFoundError', async () => {
    const { error, events } = await failureOf(client.subscribeToTask('nope'));
    expect(events).toHaveLength(0);
    expect(error).toBeInstanceOf(TaskNotFoundError);
    await expect(client.getTask('nope')).rejects.toBeInstanceOf(TaskNotFoundError);
  });

  it('[M-6] has no ListTasks on 0.3 and never calls it', async () => {
    expect(await client.canListTasks()).toBe(false);
    await expect(client.findTaskByMessageId('ctx', 'v03-1')).rejects.toBeInstanceOf(
      UnsupportedByVersionError,
    );
    expect(agent.requests.some((r) => r.method.toLowerCase().includes('list'))).toBe(false);
  });
});
