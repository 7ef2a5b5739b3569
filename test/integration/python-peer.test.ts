import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { A2AClient } from '../../src/a2a/client.js';
import { TaskNotFoundError } from '../../src/core/agent/errors.js';
import { eventIds } from '../../src/core/agent/model.js';
import { answerText, collect, failureOf, idsOf, lastState } from '../helpers/stream.js';
import { type PythonPeer, startPythonPeer } from '../peers/python-peer.js';

// The official Python SDK (a2a-sdk, pinned in test/peers/python/requirements.txt) in another
// process: an A2A implementation that shares no code with ours or with the JS SDK. Its SSE uses
// CRLF and `: ping` comments, and its 0.3 errors arrive as plain data frames.
describe.each([
  { versions: '1.0,0.3', speaks: '1.0' },
  { versions: '0.3', speaks: '0.3' },
])('A2A client against the Python a2a-sdk server, speaking $speaks', ({ versions, speaks }) => {
  let peer: PythonPeer;
  let client: A2AClient;

  beforeAll(async () => {
    peer = await startPythonPeer(versions);
    client = new A2AClient({ endpoint: peer.endpoint, identity: { kind: 'user-id', userId: 'U123' } });
  });
  afterAll(async () => peer.close());

  it(`[M-1] streams a turn with chunks appended (${speaks})`, async () => {
    expect((await client.card()).protocolVersion).toBe(speaks);
    const events = await collect(client.sendStreamingMessage({ messageId: `py-${speaks}-1`, text: 'hello' }));
    expect(events[0]?.kind).toBe('task');
    expect(answerText(events)).toBe('chunk 0 chunk 1 chunk 2 ');
    expect(lastState(events)).toBe('completed');
  });

  it(`[M-2] reads the task back with GetTask (${speaks})`, async () => {
    const events = await collect(client.sendStreamingMessage({ messageId: `py-${speaks}-2`, text: 'hello' }));
    const task = await client.getTask(idsOf(events).taskId);
    expect(task.status.state).toBe('completed');
    expect(task.contextId).toBe(idsOf(events).contextId);
  });

  it(`[Q-2] answers a question on the paused task (${speaks})`, async () => {
    const asked = await collect(client.sendStreamingMessage({ messageId: `py-${speaks}-3`, text: 'ask' }));
    expect(lastState(asked)).toBe('input-required');
    const { taskId, contextId } = idsOf(asked);
    const answered = await collect(
      client.sendStreamingMessage({ messageId: `py-${speaks}-4`, text: 'Grace', taskId, contextId }),
    );
    expect(answerText(answered)).toBe('hello Grace');
    expect(lastState(answered)).toBe('completed');
  });

  it(`[M-3][M-4] resubscribes to a running task, then cancels it (${speaks})`, async () => {
    const stream = client.sendStreamingMessage({ messageId: `py-${speaks}-5`, text: 'slow' });
    const first = await stream.next();
    if (first.done) throw new Error('no first event');
    await stream.return(undefined);
    const { taskId } = eventIds(first.value);
    const subscription = client.subscribeToTask(taskId);
    const snapshot = await subscription.next();
    expect(snapshot.done === false && snapshot.value.kind).toBe('task');
    const canceled = await client.cancelTask(taskId);
    expect(canceled.status.state).toBe('canceled');
    expect(lastState(await collect(subscription))).toBe('canceled');
  });

  it(`[E-5] maps an unknown task to TaskNotFoundError, on a read and on a stream (${speaks})`, async () => {
    await expect(client.getTask('no-such-task')).rejects.toBeInstanceOf(TaskNotFoundError);
    const { error } = await failureOf(client.subscribeToTask('no-such-task'));
    expect(error).toBeInstanceOf(TaskNotFoundError);
  });

  it(`[T-3] reports a failed task (${speaks})`, async () => {
    const events = await collect(client.sendStreamingMessage({ messageId: `py-${speaks}-6`, text: 'fail' }));
    expect(lastState(events)).toBe('failed');
  });

  if (speaks === '1.0') {
    it('[M-6] finds a turn by messageId through ListTasks, across pages', async () => {
      const first = await collect(client.sendStreamingMessage({ messageId: 'py-list-1', text: 'hello' }));
      const { contextId, taskId } = idsOf(first);
      for (let i = 2; i <= 4; i++) {
        await collect(client.sendStreamingMessage({ messageId: `py-list-${i}`, text: 'hello', contextId }));
      }
      const paged = new A2AClient({
        endpoint: peer.endpoint,
        identity: { kind: 'user-id', userId: 'U123' },
        listTasks: { pageSize: 1 },
      });
      expect((await paged.findTaskByMessageId(contextId, 'py-list-1'))?.id).toBe(taskId);
      const all: string[] = [];
      for await (const task of paged.listTasks(contextId)) all.push(task.id);
      expect(all).toHaveLength(4);
    });
  } else {
    it('[M-6] never asks a 0.3 agent for ListTasks', async () => {
      expect(await client.canListTasks()).toBe(false);
    });
  }
});
