import { randomUUID } from 'node:crypto';
import { parseSseStream, type StreamResponse, TaskState } from '@a2a-js/sdk';
import { ClientFactory } from '@a2a-js/sdk/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sdkRequest } from '../../testkit/a2a-sdk.js';
import { at, str } from '../helpers/json-path.js';
import { type SdkAgent, startSdkAgent } from './js-sdk-agent.js';

const V1 = { 'A2A-Version': '1.0' };

function post(url: string, body: unknown, headers: Record<string, string>): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
}

async function rpc(
  url: string,
  method: string,
  params: unknown,
  headers: Record<string, string> = V1,
): Promise<unknown> {
  const res = await post(url, { jsonrpc: '2.0', id: randomUUID(), method, params }, headers);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  return res.json();
}

interface SseFrame {
  type: string;
  data: unknown;
}

/** Opens an SSE call and returns an iterator of parsed frames. */
async function openStream(
  url: string,
  method: string,
  params: unknown,
  headers: Record<string, string> = V1,
): Promise<AsyncGenerator<SseFrame, void, undefined>> {
  const res = await post(url, { jsonrpc: '2.0', id: randomUUID(), method, params }, headers);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toBe('text/event-stream');
  return (async function* () {
    for await (const ev of parseSseStream(res)) yield { type: ev.type, data: JSON.parse(ev.data) };
  })();
}

async function collect(frames: AsyncGenerator<SseFrame, void, undefined>): Promise<SseFrame[]> {
  const out: SseFrame[] = [];
  for await (const f of frames) out.push(f);
  return out;
}

/** The single key of a 1.0 StreamResponse result: task, message, statusUpdate or artifactUpdate. */
function kind1(frame: SseFrame): string {
  const result = at(frame.data, 'result');
  return typeof result === 'object' && result !== null ? Object.keys(result).join(',') : 'none';
}

function msg1(text: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text }], ...extra };
}

describe.each([false, true])('legacyCompat %s', (legacyCompat) => {
  let agent: SdkAgent;
  beforeAll(async () => {
    agent = await startSdkAgent({ legacyCompat });
  });
  afterAll(async () => {
    await agent.close();
  });

  it('js-sdk peer: serves the agent card at the endpoint path and at the root well-known path', async () => {
    expect(agent.endpoint).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/a2a$/);
    const versions = legacyCompat ? ['1.0', '0.3'] : ['1.0'];
    const origin = new URL(agent.endpoint).origin;
    for (const url of [
      `${agent.endpoint}/.well-known/agent-card.json`,
      `${origin}/.well-known/agent-card.json`,
    ]) {
      const res = await fetch(url, { headers: V1 });
      expect(res.status).toBe(200);
      const card: unknown = await res.json();
      expect(at(card, 'name')).toBe('sdk-peer');
      expect(at(card, 'version')).toBe('1.0.0');
      expect(at(card, 'capabilities', 'streaming')).toBe(true);
      expect(at(card, 'defaultInputModes')).toEqual(['text/plain']);
      expect(at(card, 'skills', 0, 'id')).toBe('scripted');
      expect(at(card, 'supportedInterfaces')).toEqual(
        versions.map((v) => ({
          url: agent.endpoint,
          protocolBinding: 'JSONRPC',
          tenant: '',
          protocolVersion: v,
        })),
      );
      expect(at(card, 'url')).toBeUndefined();
    }
    // Without A2A-Version the compat card handler answers with a hybrid 0.3 card.
    const bare: unknown = await (await fetch(`${agent.endpoint}/.well-known/agent-card.json`)).json();
    expect(at(bare, 'url')).toBe(legacyCompat ? agent.endpoint : undefined);
    expect(at(bare, 'protocolVersion')).toBe(legacyCompat ? '0.3' : undefined);
    expect(at(bare, 'supportedInterfaces', 0, 'protocolVersion')).toBe('1.0');
  });

  it('js-sdk peer: the official client streams "hello" as 3 chunks of one artifact, then completed', async () => {
    const client = await new ClientFactory().createFromUrl(
      `${agent.endpoint}/.well-known/agent-card.json`,
      '',
    );
    const events: StreamResponse[] = [];
    for await (const ev of client.sendMessageStream(sdkRequest('hello'))) events.push(ev);

    expect(events.map((e) => e.payload?.$case)).toEqual([
      'task',
      'statusUpdate',
      'artifactUpdate',
      'artifactUpdate',
      'artifactUpdate',
      'statusUpdate',
    ]);
    const states: TaskState[] = [];
    const chunks: Array<{ id: string; text: string; append: boolean; lastChunk: boolean }> = [];
    for (const { payload } of events) {
      if (payload?.$case === 'task') states.push(payload.value.status?.state ?? TaskState.UNRECOGNIZED);
      if (payload?.$case === 'statusUpdate')
        states.push(payload.value.status?.state ?? TaskState.UNRECOGNIZED);
      if (payload?.$case === 'artifactUpdate') {
        const part = payload.value.artifact?.parts[0]?.content;
        chunks.push({
          id: payload.value.artifact?.artifactId ?? '',
          text: part?.$case === 'text' ? part.value : '',
          append: payload.value.append,
          lastChunk: payload.value.lastChunk,
        });
      }
    }
    expect(states).toEqual([
      TaskState.TASK_STATE_SUBMITTED,
      TaskState.TASK_STATE_WORKING,
      TaskState.TASK_STATE_COMPLETED,
    ]);
    expect(chunks.map((c) => c.text).join('')).toBe('chunk 0 chunk 1 chunk 2 ');
    expect(chunks.map((c) => [c.id, c.append, c.lastChunk])).toEqual([
      ['answer', false, false],
      ['answer', true, false],
      ['answer', true, true],
    ]);

    const last = agent.requests.at(-1);
    expect(last?.method).toBe('SendStreamingMessage');
    expect(last?.headers['a2a-version']).toBe('1.0');
    expect(at(last?.body, 'params', 'message', 'parts', 0, 'text')).toBe('hello');
  });

  it('js-sdk peer: "ask" pauses in input-required and the answer on the same task completes it', async () => {
    const first = await collect(
      await openStream(agent.endpoint, 'SendStreamingMessage', { message: msg1('ask') }),
    );
    expect(first.map(kind1)).toEqual(['task', 'artifactUpdate', 'statusUpdate']);
    expect(at(first[1]?.data, 'result', 'artifactUpdate', 'artifact', 'artifactId')).toBe('asking');
    const status = at(first[2]?.data, 'result', 'statusUpdate', 'status');
    expect(at(status, 'state')).toBe('TASK_STATE_INPUT_REQUIRED');
    expect(at(status, 'message', 'role')).toBe('ROLE_AGENT');
    expect(at(status, 'message', 'parts')).toEqual([{ text: 'What is your name?', mediaType: 'text/plain' }]);
    const taskId = str(at(first[0]?.data, 'result', 'task', 'id'));
    const contextId = str(at(first[0]?.data, 'result', 'task', 'contextId'));

    const second = await collect(
      await openStream(agent.endpoint, 'SendStreamingMessage', {
        message: msg1('Ada', { taskId, contextId }),
      }),
    );
    expect(second.map(kind1)).toEqual(['task', 'statusUpdate', 'artifactUpdate', 'statusUpdate']);
    expect(at(second[0]?.data, 'result', 'task', 'id')).toBe(taskId);
    expect(at(second[2]?.data, 'result', 'artifactUpdate', 'artifact', 'parts', 0, 'text')).toBe('hello Ada');
    expect(at(second[3]?.data, 'result', 'statusUpdate', 'status', 'state')).toBe('TASK_STATE_COMPLETED');
  });

  it('js-sdk peer: "slow" can be subscribed to while running and cancelled', async () => {
    const started = Date.now();
    const frames = await openStream(agent.endpoint, 'SendStreamingMessage', { message: msg1('slow') });
    // Read with next(): breaking out of for-await would close the stream.
    const head: SseFrame[] = [];
    for (let r = await frames.next(); !r.done; r = await frames.next()) {
      head.push(r.value);
      if (kind1(r.value) === 'artifactUpdate') break;
    }
    expect(head.map(kind1)).toEqual(['task', 'statusUpdate', 'artifactUpdate']);
    const taskId = str(at(head[0]?.data, 'result', 'task', 'id'));

    const sub = await openStream(agent.endpoint, 'SubscribeToTask', { id: taskId });
    const snapshot = await sub.next();
    expect(snapshot.done).toBe(false);
    expect(at(snapshot.value?.data, 'result', 'task', 'id')).toBe(taskId);
    expect(at(snapshot.value?.data, 'result', 'task', 'status', 'state')).toBe('TASK_STATE_WORKING');
    expect(at(snapshot.value?.data, 'result', 'task', 'artifacts', 0, 'parts', 0, 'text')).toBe('chunk 0 ');

    const canceled = await rpc(agent.endpoint, 'CancelTask', { id: taskId });
    expect(at(canceled, 'result', 'id')).toBe(taskId);
    expect(at(canceled, 'result', 'status', 'state')).toBe('TASK_STATE_CANCELED');

    const rest = await collect(frames);
    expect(rest.map((f) => at(f.data, 'result', 'statusUpdate', 'status', 'state'))).toEqual([
      'TASK_STATE_CANCELED',
    ]);
    const subRest = await collect(sub);
    expect(subRest.map((f) => at(f.data, 'result', 'statusUpdate', 'status', 'state'))).toEqual([
      'TASK_STATE_CANCELED',
    ]);
    expect(Date.now() - started).toBeLessThan(2500);

    // A repeat cancel is idempotent; subscribing to the now-terminal task is refused.
    expect(at(await rpc(agent.endpoint, 'CancelTask', { id: taskId }), 'result', 'status', 'state')).toBe(
      'TASK_STATE_CANCELED',
    );
    expect(at(await rpc(agent.endpoint, 'SubscribeToTask', { id: taskId }), 'error', 'code')).toBe(-32004);
  });

  it('js-sdk peer: "fail" ends failed with a status message and "message" answers with a bare Message', async () => {
    const failed = await collect(
      await openStream(agent.endpoint, 'SendStreamingMessage', { message: msg1('fail') }),
    );
    expect(failed.map(kind1)).toEqual(['task', 'statusUpdate']);
    const status = at(failed[1]?.data, 'result', 'statusUpdate', 'status');
    expect(at(status, 'state')).toBe('TASK_STATE_FAILED');
    expect(at(status, 'message', 'parts', 0, 'text')).toBe('rate limit exceeded');

    const reply = await collect(
      await openStream(agent.endpoint, 'SendStreamingMessage', { message: msg1('message') }),
    );
    expect(reply.map(kind1)).toEqual(['message']);
    expect(at(reply[0]?.data, 'result', 'message', 'role')).toBe('ROLE_AGENT');
    expect(at(reply[0]?.data, 'result', 'message', 'parts', 0, 'text')).toBe('just a message');
    expect(at(reply[0]?.data, 'result', 'message', 'taskId')).toBeUndefined();
  });

  it('js-sdk peer: routes by the A2A-Version header', async () => {
    if (!legacyCompat) {
      const res = await rpc(agent.endpoint, 'SendMessage', { message: msg1('hello') }, {});
      expect(at(res, 'error', 'code')).toBe(-32009);
      return;
    }
    // No header means 0.3: kind-based events, `final` only on the terminal status.
    const frames = await collect(
      await openStream(
        agent.endpoint,
        'message/stream',
        {
          message: {
            kind: 'message',
            messageId: randomUUID(),
            role: 'user',
            parts: [{ kind: 'text', text: 'hello' }],
          },
        },
        {},
      ),
    );
    expect(frames.map((f) => at(f.data, 'result', 'kind'))).toEqual([
      'task',
      'status-update',
      'artifact-update',
      'artifact-update',
      'artifact-update',
      'status-update',
    ]);
    expect(frames.map((f) => at(f.data, 'result', 'final'))).toEqual([
      undefined,
      false,
      undefined,
      undefined,
      undefined,
      true,
    ]);
    expect(at(frames[5]?.data, 'result', 'status', 'state')).toBe('completed');
    expect(frames.map((f) => at(f.data, 'result', 'artifact', 'parts', 0, 'text')).join('')).toBe(
      'chunk 0 chunk 1 chunk 2 ',
    );
    // A 1.0 method name without the header lands in the 0.3 dispatcher.
    expect(at(await rpc(agent.endpoint, 'SendMessage', { message: msg1('x') }, {}), 'error', 'code')).toBe(
      -32601,
    );
  });

  it('js-sdk peer: records every POST before the SDK handles it, even ones it rejects', async () => {
    const before = agent.requests.length;
    const res = await fetch(agent.endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...V1, 'x-probe': 'yes' },
      body: '{not json',
    });
    expect(await res.json()).toEqual({
      jsonrpc: '2.0',
      id: null,
      error: { code: -32700, message: 'Invalid JSON payload.' },
    });
    const got = await rpc(agent.endpoint, 'GetTask', { id: 'no-such-task' });
    expect(at(got, 'error', 'code')).toBe(-32001);

    const recorded = agent.requests.slice(before);
    expect(recorded.map((r) => r.method)).toEqual(['', 'GetTask']);
    expect(recorded[0]?.headers['x-probe']).toBe('yes');
    expect(recorded[0]?.body).toBe('{not json');
    expect(at(recorded[1]?.body, 'params', 'id')).toBe('no-such-task');
  });
});

describe('options', () => {
  it('js-sdk peer: chunkCount and chunkDelayMs shape the answer, and close() ends open streams', async () => {
    const agent = await startSdkAgent({ legacyCompat: false, chunkCount: 2, chunkDelayMs: 40 });
    try {
      const started = Date.now();
      const frames = await collect(
        await openStream(agent.endpoint, 'SendStreamingMessage', { message: msg1('hi') }),
      );
      expect(Date.now() - started).toBeGreaterThanOrEqual(35);
      const chunks = frames.filter((f) => kind1(f) === 'artifactUpdate');
      expect(
        chunks.map((f) => at(f.data, 'result', 'artifactUpdate', 'artifact', 'parts', 0, 'text')),
      ).toEqual(['chunk 0 ', 'chunk 1 ']);
      expect(at(chunks[1]?.data, 'result', 'artifactUpdate', 'lastChunk')).toBe(true);

      // A running "slow" task must not keep close() waiting.
      const slow = await openStream(agent.endpoint, 'SendStreamingMessage', { message: msg1('slow') });
      await slow.next();
      const closing = Date.now();
      await agent.close();
      expect(Date.now() - closing).toBeLessThan(1000);
      await expect(collect(slow)).rejects.toMatchObject({ name: 'TypeError', message: 'terminated' });
    } finally {
      await agent.close();
    }
  });
});
