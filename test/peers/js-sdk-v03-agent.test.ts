import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { at, str } from '../helpers/json-path.js';
import { type SdkV03Agent, startSdkV03Agent } from './js-sdk-v03-agent.js';

function post(url: string, body: unknown, accept: string): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept },
    body: JSON.stringify(body),
  });
}

async function rpc(url: string, method: string, params: unknown): Promise<unknown> {
  const res = await post(url, { jsonrpc: '2.0', id: randomUUID(), method, params }, 'application/json');
  expect(res.status).toBe(200);
  return res.json();
}

interface SseFrame {
  /** The `event:` field, 'message' when absent. */
  event: string;
  /** Parsed JSON of the joined `data:` lines. */
  data: unknown;
  /** Every field name seen in the frame, in order (pins the framing: only `data`, or `event` + `data`). */
  fields: string[];
}

/** Splits an SSE body into frames by hand: blank-line separated blocks of `field: value` lines. */
async function* sseFrames(res: Response): AsyncGenerator<SseFrame, void, undefined> {
  if (res.body === null) throw new Error('no body');
  const decoder = new TextDecoder();
  let buffer = '';
  const reader = res.body.getReader();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        let event = 'message';
        const data: string[] = [];
        const fields: string[] = [];
        for (const line of block.split('\n')) {
          const colon = line.indexOf(':');
          const field = colon < 0 ? line : line.slice(0, colon);
          const val = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
          fields.push(field);
          if (field === 'event') event = val;
          if (field === 'data') data.push(val);
        }
        yield { event, data: JSON.parse(data.join('\n')), fields };
      }
    }
    expect(buffer).toBe('');
  } finally {
    reader.releaseLock();
  }
}

/** Opens an SSE call; returns the request id and an iterator of frames. */
async function openStream(
  url: string,
  method: string,
  params: unknown,
): Promise<{ id: string; frames: AsyncGenerator<SseFrame, void, undefined> }> {
  const id = randomUUID();
  const res = await post(url, { jsonrpc: '2.0', id, method, params }, 'text/event-stream');
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toBe('text/event-stream');
  return { id, frames: sseFrames(res) };
}

async function collect(frames: AsyncGenerator<SseFrame, void, undefined>): Promise<SseFrame[]> {
  const out: SseFrame[] = [];
  for await (const f of frames) out.push(f);
  return out;
}

async function stream(url: string, method: string, params: unknown): Promise<SseFrame[]> {
  return collect((await openStream(url, method, params)).frames);
}

function kind(frame: SseFrame): unknown {
  return at(frame.data, 'result', 'kind');
}

function msg(text: string, extra: Record<string, unknown> = {}): { message: Record<string, unknown> } {
  return {
    message: {
      kind: 'message',
      messageId: randomUUID(),
      role: 'user',
      parts: [{ kind: 'text', text }],
      ...extra,
    },
  };
}

describe('js-sdk 0.3 peer', () => {
  let agent: SdkV03Agent;
  beforeAll(async () => {
    agent = await startSdkV03Agent();
  });
  afterAll(async () => {
    await agent.close();
  });

  it('js-sdk 0.3 peer: serves a pure 0.3 card at the endpoint path and at the root well-known path', async () => {
    expect(agent.endpoint).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/a2a$/);
    const origin = new URL(agent.endpoint).origin;
    for (const url of [
      `${agent.endpoint}/.well-known/agent-card.json`,
      `${origin}/.well-known/agent-card.json`,
    ]) {
      const res = await fetch(url);
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({
        name: 'sdk-v03-peer',
        description: 'Test peer built on the official @a2a-js/sdk 0.3 server',
        protocolVersion: '0.3.0',
        version: '1.0.0',
        url: agent.endpoint,
        preferredTransport: 'JSONRPC',
        capabilities: { streaming: true, pushNotifications: false, stateTransitionHistory: false },
        defaultInputModes: ['text/plain'],
        defaultOutputModes: ['text/plain'],
        skills: [
          {
            id: 'scripted',
            name: 'Scripted replies',
            description: 'Replies chosen by the message text: ask, slow, fail, message, or anything else',
            tags: ['test'],
            examples: ['hello', 'ask', 'slow', 'fail', 'message'],
          },
        ],
      });
    }
  });

  it('js-sdk 0.3 peer: message/stream sends task, working, 3 chunks of one artifact, completed (final), no closing Task', async () => {
    const before = agent.requests.length;
    const { id, frames: it } = await openStream(agent.endpoint, 'message/stream', msg('hello'));
    const frames = await collect(it);

    // Plain `data:` frames, one JSON-RPC response each, all echoing the request id.
    expect(frames.map((f) => f.fields)).toEqual(frames.map(() => ['data']));
    expect(frames.map((f) => [at(f.data, 'jsonrpc'), at(f.data, 'id')])).toEqual(
      frames.map(() => ['2.0', id]),
    );
    expect(frames.map(kind)).toEqual([
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
    const task = at(frames[0]?.data, 'result');
    expect(at(task, 'status', 'state')).toBe('submitted');
    expect(at(task, 'history', 0, 'parts')).toEqual([{ kind: 'text', text: 'hello' }]);
    const taskId = str(at(task, 'id'));
    const contextId = str(at(task, 'contextId'));
    expect(frames.map((f) => at(f.data, 'result', 'taskId') ?? at(f.data, 'result', 'id'))).toEqual(
      frames.map(() => taskId),
    );
    expect(frames.map((f) => at(f.data, 'result', 'contextId'))).toEqual(frames.map(() => contextId));
    expect(at(frames[1]?.data, 'result', 'status', 'state')).toBe('working');
    expect(
      frames.slice(2, 5).map((f) => {
        const r = at(f.data, 'result');
        return [
          at(r, 'artifact', 'artifactId'),
          at(r, 'artifact', 'parts'),
          at(r, 'append'),
          at(r, 'lastChunk'),
        ];
      }),
    ).toEqual([
      ['answer', [{ kind: 'text', text: 'chunk 0 ' }], false, false],
      ['answer', [{ kind: 'text', text: 'chunk 1 ' }], true, false],
      ['answer', [{ kind: 'text', text: 'chunk 2 ' }], true, true],
    ]);
    expect(at(frames[5]?.data, 'result', 'status', 'state')).toBe('completed');
    expect(at(frames[5]?.data, 'result', 'status', 'message')).toBeUndefined();

    const recorded = agent.requests.slice(before);
    expect(recorded.map((r) => r.method)).toEqual(['message/stream']);
    expect(recorded[0]?.headers.accept).toBe('text/event-stream');
    expect(at(recorded[0]?.body, 'id')).toBe(id);
    expect(at(recorded[0]?.body, 'params', 'message', 'parts', 0, 'text')).toBe('hello');
  });

  it('js-sdk 0.3 peer: tasks/get returns the stored task with merged artifact parts; unknown ids get -32001', async () => {
    const frames = await stream(agent.endpoint, 'message/stream', msg('hello'));
    const taskId = str(at(frames[0]?.data, 'result', 'id'));

    const got = at(await rpc(agent.endpoint, 'tasks/get', { id: taskId }), 'result');
    expect(at(got, 'kind')).toBe('task');
    expect(at(got, 'id')).toBe(taskId);
    expect(at(got, 'status', 'state')).toBe('completed');
    expect(at(got, 'artifacts')).toEqual([
      {
        artifactId: 'answer',
        name: 'answer',
        parts: [
          { kind: 'text', text: 'chunk 0 ' },
          { kind: 'text', text: 'chunk 1 ' },
          { kind: 'text', text: 'chunk 2 ' },
        ],
      },
    ]);
    // Without historyLength the SDK empties the history; with it, the user's message is there.
    expect(at(got, 'history')).toEqual([]);
    const withHistory = await rpc(agent.endpoint, 'tasks/get', { id: taskId, historyLength: 10 });
    expect(at(withHistory, 'result', 'history', 0, 'parts', 0, 'text')).toBe('hello');

    expect(await rpc(agent.endpoint, 'tasks/get', { id: 'no-such-task' })).toEqual({
      jsonrpc: '2.0',
      id: expect.any(String),
      error: { code: -32001, message: 'Task not found: no-such-task' },
    });
    // A completed task cannot be cancelled.
    expect(at(await rpc(agent.endpoint, 'tasks/cancel', { id: taskId }), 'error', 'code')).toBe(-32002);
  });

  it('js-sdk 0.3 peer: "ask" pauses in input-required (final) and the answer on the same task completes it', async () => {
    const first = await stream(agent.endpoint, 'message/stream', msg('ask'));
    expect(first.map(kind)).toEqual(['task', 'artifact-update', 'status-update']);
    expect(at(first[1]?.data, 'result', 'artifact', 'artifactId')).toBe('asking');
    const update = at(first[2]?.data, 'result');
    expect(at(update, 'final')).toBe(true);
    expect(at(update, 'status', 'state')).toBe('input-required');
    expect(at(update, 'status', 'message', 'kind')).toBe('message');
    expect(at(update, 'status', 'message', 'role')).toBe('agent');
    expect(at(update, 'status', 'message', 'parts')).toEqual([{ kind: 'text', text: 'What is your name?' }]);
    const taskId = str(at(first[0]?.data, 'result', 'id'));
    const contextId = str(at(first[0]?.data, 'result', 'contextId'));
    expect(at(update, 'status', 'message', 'taskId')).toBe(taskId);

    const paused = await rpc(agent.endpoint, 'tasks/get', { id: taskId });
    expect(at(paused, 'result', 'status', 'state')).toBe('input-required');

    const second = await stream(agent.endpoint, 'message/stream', msg('Ada', { taskId, contextId }));
    expect(second.map(kind)).toEqual(['task', 'status-update', 'artifact-update', 'status-update']);
    expect(second.map((f) => at(f.data, 'result', 'final'))).toEqual([undefined, false, undefined, true]);
    expect(at(second[0]?.data, 'result', 'id')).toBe(taskId);
    expect(at(second[0]?.data, 'result', 'status', 'state')).toBe('input-required');
    expect(at(second[2]?.data, 'result', 'artifact', 'parts', 0, 'text')).toBe('hello Ada');
    expect(at(second[3]?.data, 'result', 'status', 'state')).toBe('completed');

    const done = at(await rpc(agent.endpoint, 'tasks/get', { id: taskId, historyLength: 10 }), 'result');
    expect(at(done, 'status', 'state')).toBe('completed');
    expect(at(done, 'artifacts')).toEqual([
      {
        artifactId: 'asking',
        name: 'asking',
        parts: [{ kind: 'text', text: 'I need to know who you are.' }],
      },
      { artifactId: 'answer', name: 'answer', parts: [{ kind: 'text', text: 'hello Ada' }] },
    ]);
    const history = at(done, 'history');
    expect(
      Array.isArray(history) ? history.map((m) => [at(m, 'role'), at(m, 'parts', 0, 'text')]) : history,
    ).toEqual([
      ['user', 'ask'],
      ['agent', 'What is your name?'],
      ['user', 'Ada'],
    ]);
  });

  it('js-sdk 0.3 peer: tasks/resubscribe on "slow" replays a Task snapshot, then both streams end on tasks/cancel', async () => {
    const started = Date.now();
    const { frames } = await openStream(agent.endpoint, 'message/stream', msg('slow'));
    // Read with next(): breaking out of for-await would close the stream.
    const head: SseFrame[] = [];
    for (let r = await frames.next(); !r.done; r = await frames.next()) {
      head.push(r.value);
      if (kind(r.value) === 'artifact-update') break;
    }
    expect(head.map(kind)).toEqual(['task', 'status-update', 'artifact-update']);
    const taskId = str(at(head[0]?.data, 'result', 'id'));

    const sub = await openStream(agent.endpoint, 'tasks/resubscribe', { id: taskId });
    const snapshot = await sub.frames.next();
    expect(snapshot.done).toBe(false);
    const snap = at(snapshot.value?.data, 'result');
    expect(at(snapshot.value?.data, 'id')).toBe(sub.id);
    expect(at(snap, 'kind')).toBe('task');
    expect(at(snap, 'id')).toBe(taskId);
    expect(at(snap, 'status', 'state')).toBe('working');
    expect(at(snap, 'artifacts')).toEqual([
      { artifactId: 'answer', name: 'answer', parts: [{ kind: 'text', text: 'chunk 0 ' }] },
    ]);

    const canceled = at(await rpc(agent.endpoint, 'tasks/cancel', { id: taskId }), 'result');
    expect(at(canceled, 'kind')).toBe('task');
    expect(at(canceled, 'id')).toBe(taskId);
    expect(at(canceled, 'status', 'state')).toBe('canceled');
    expect(at(canceled, 'status', 'message', 'parts', 0, 'text')).toBe('canceled');

    const terminal = (f: SseFrame): unknown[] => [
      kind(f),
      at(f.data, 'result', 'status', 'state'),
      at(f.data, 'result', 'final'),
    ];
    expect((await collect(frames)).map(terminal)).toEqual([['status-update', 'canceled', true]]);
    expect((await collect(sub.frames)).map(terminal)).toEqual([['status-update', 'canceled', true]]);
    expect(Date.now() - started).toBeLessThan(2500);

    // A repeat cancel is refused; resubscribing to the terminal task yields its snapshot and ends.
    expect(at(await rpc(agent.endpoint, 'tasks/cancel', { id: taskId }), 'error', 'code')).toBe(-32002);
    const again = await stream(agent.endpoint, 'tasks/resubscribe', { id: taskId });
    expect(again.map((f) => [kind(f), at(f.data, 'result', 'status', 'state')])).toEqual([
      ['task', 'canceled'],
    ]);
  });

  it('js-sdk 0.3 peer: streaming calls on unknown task ids answer 200 SSE with one `event: error` frame', async () => {
    const quiet = vi.spyOn(console, 'error').mockImplementation(() => undefined);
    try {
      const { id, frames } = await openStream(agent.endpoint, 'tasks/resubscribe', { id: 'no-such-task' });
      const got = await collect(frames);
      expect(got.map((f) => [f.event, f.fields])).toEqual([['error', ['event', 'data']]]);
      expect(got[0]?.data).toEqual({
        jsonrpc: '2.0',
        id,
        error: { code: -32001, message: 'Task not found: no-such-task' },
      });

      const follow = await stream(agent.endpoint, 'message/stream', msg('x', { taskId: 'no-such-task' }));
      expect(follow.map((f) => [f.event, at(f.data, 'error', 'code')])).toEqual([['error', -32001]]);
      expect(quiet).toHaveBeenCalled();
    } finally {
      quiet.mockRestore();
    }
    expect(at(await rpc(agent.endpoint, 'tasks/cancel', { id: 'no-such-task' }), 'error', 'code')).toBe(
      -32001,
    );
  });

  it('js-sdk 0.3 peer: "fail" ends failed with a status message and "message" answers with a bare Message', async () => {
    const failed = await stream(agent.endpoint, 'message/stream', msg('fail'));
    expect(failed.map(kind)).toEqual(['task', 'status-update']);
    const update = at(failed[1]?.data, 'result');
    expect(at(update, 'final')).toBe(true);
    expect(at(update, 'status', 'state')).toBe('failed');
    expect(at(update, 'status', 'message', 'parts', 0, 'text')).toBe('rate limit exceeded');

    const reply = await stream(agent.endpoint, 'message/stream', msg('message'));
    expect(reply.map(kind)).toEqual(['message']);
    expect(at(reply[0]?.data, 'result', 'role')).toBe('agent');
    expect(at(reply[0]?.data, 'result', 'parts')).toEqual([{ kind: 'text', text: 'just a message' }]);
    expect(at(reply[0]?.data, 'result', 'taskId')).toBeUndefined();
    expect(typeof at(reply[0]?.data, 'result', 'contextId')).toBe('string');
  });

  it('js-sdk 0.3 peer: records every POST before the SDK handles it, even ones it rejects', async () => {
    const before = agent.requests.length;
    const res = await fetch(agent.endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-probe': 'yes' },
      body: '{not json',
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({
      jsonrpc: '2.0',
      id: null,
      error: { code: -32700, message: 'Invalid JSON payload.' },
    });
    // 1.0 method names are unknown to a native 0.3 server.
    expect(at(await rpc(agent.endpoint, 'SendMessage', msg('x')), 'error', 'code')).toBe(-32601);

    const recorded = agent.requests.slice(before);
    expect(recorded.map((r) => r.method)).toEqual(['', 'SendMessage']);
    expect(recorded[0]?.headers['x-probe']).toBe('yes');
    expect(recorded[0]?.body).toBe('{not json');
    expect(at(recorded[1]?.body, 'params', 'message', 'parts', 0, 'text')).toBe('x');
  });
});

describe('js-sdk 0.3 peer options', () => {
  it('js-sdk 0.3 peer: chunkCount and chunkDelayMs shape the answer, and close() ends open streams', async () => {
    const agent = await startSdkV03Agent({ chunkCount: 2, chunkDelayMs: 40 });
    try {
      const started = Date.now();
      const frames = await stream(agent.endpoint, 'message/stream', msg('hi'));
      expect(Date.now() - started).toBeGreaterThanOrEqual(35);
      const chunks = frames.filter((f) => kind(f) === 'artifact-update');
      expect(chunks.map((f) => at(f.data, 'result', 'artifact', 'parts', 0, 'text'))).toEqual([
        'chunk 0 ',
        'chunk 1 ',
      ]);
      expect(chunks.map((f) => at(f.data, 'result', 'lastChunk'))).toEqual([false, true]);

      // A running "slow" task must not keep close() waiting.
      const slow = await openStream(agent.endpoint, 'message/stream', msg('slow'));
      expect((await slow.frames.next()).done).toBe(false);
      const closing = Date.now();
      await agent.close();
      expect(Date.now() - closing).toBeLessThan(1000);
      await expect(collect(slow.frames)).rejects.toMatchObject({ name: 'TypeError', message: 'terminated' });
    } finally {
      await agent.close();
    }
  });
});
