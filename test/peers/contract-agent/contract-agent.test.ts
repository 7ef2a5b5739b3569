import { afterEach, describe, expect, it } from 'vitest';
import {
  type ContractAgent,
  type ContractAgentOptions,
  dropAfter,
  redirect,
  rpcError,
  splitFrames,
  startContractAgent,
} from './contract-agent.js';

// Plain fetch and a hand-written SSE parser on purpose: the agent is what proves the client, so
// it must not be proved with the client.

const agents: ContractAgent[] = [];

async function start(o: ContractAgentOptions): Promise<ContractAgent> {
  const agent = await startContractAgent(o);
  agents.push(agent);
  return agent;
}

afterEach(async () => {
  await Promise.all(agents.splice(0).map((a) => a.close()));
});

let nextId = 1;

function call(agent: ContractAgent, method: string, params: unknown): Promise<Response> {
  const headers: Record<string, string> = { 'Content-Type': 'application/json' };
  if (agent.version === '1.0') headers['A2A-Version'] = '1.0';
  return fetch(agent.endpoint, {
    method: 'POST',
    headers,
    body: JSON.stringify({ jsonrpc: '2.0', id: nextId++, method, params }),
  });
}

interface SseEvent {
  event?: string;
  data: string;
}

/** Per the SSE spec: any line ending, comments skipped, data lines joined with '\n'. */
function parseSse(text: string): SseEvent[] {
  const out: SseEvent[] = [];
  for (const block of text.replace(/\r\n?/g, '\n').split('\n\n')) {
    const ev: SseEvent = { data: '' };
    const data: string[] = [];
    for (const line of block.split('\n')) {
      if (line === '' || line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
      if (field === 'data') data.push(value);
      if (field === 'event') ev.event = value;
    }
    if (data.length === 0) continue;
    ev.data = data.join('\n');
    out.push(ev);
  }
  return out;
}

async function streamResults(res: Response): Promise<Array<Record<string, unknown>>> {
  expect(res.headers.get('content-type')).toBe('text/event-stream');
  const envelopes = parseSse(await res.text()).map((e) => JSON.parse(e.data) as Record<string, unknown>);
  return envelopes.map((e) => e.result as Record<string, unknown>);
}

function message10(text: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { message: { messageId: `m-${text}`, role: 'ROLE_USER', parts: [{ text }], ...extra } };
}

describe('contract agent', () => {
  it('contract agent: serves the 1.0 card at the endpoint and at the root well-known path', async () => {
    const agent = await start({ version: '1.0' });
    for (const url of [
      `${agent.endpoint}/.well-known/agent-card.json`,
      `${agent.origin}/.well-known/agent-card.json`,
    ]) {
      const res = await fetch(url);
      expect(res.status).toBe(200);
      const card = (await res.json()) as Record<string, unknown>;
      expect(card.supportedInterfaces).toEqual([
        { url: agent.endpoint, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
      ]);
      expect(card.capabilities).toEqual({ streaming: true });
      expect(card.url).toBeUndefined();
    }
    expect(agent.requests.map((r) => `${r.httpMethod} ${r.path}`)).toEqual([
      'GET /a2a/.well-known/agent-card.json',
      'GET /.well-known/agent-card.json',
    ]);
  });

  it('contract agent: serves the 0.3 card, and a grpc-only one with a foreign interface url', async () => {
    const agent = await start({ version: '0.3', card: { extensions: [{ uri: 'urn:x', required: true }] } });
    const card = (await (await fetch(`${agent.origin}/.well-known/agent-card.json`)).json()) as Record<
      string,
      unknown
    >;
    expect(card).toMatchObject({
      url: agent.endpoint,
      preferredTransport: 'JSONRPC',
      protocolVersion: '0.3.0',
      capabilities: { streaming: true, extensions: [{ uri: 'urn:x', required: true }] },
      defaultInputModes: ['text/plain'],
    });
    expect(card.supportedInterfaces).toBeUndefined();
    agent.setCard({
      interfaces: 'grpc-only',
      interfaceUrl: 'http://elsewhere.invalid:50051',
      streaming: false,
    });
    const grpc = (await (await fetch(`${agent.endpoint}/.well-known/agent-card.json`)).json()) as Record<
      string,
      unknown
    >;
    expect(grpc).toMatchObject({
      url: 'http://elsewhere.invalid:50051',
      preferredTransport: 'GRPC',
      capabilities: { streaming: false },
    });
  });

  it('contract agent: streams the default 1.0 answer in order and stores the task', async () => {
    const agent = await start({ version: '1.0' });
    const res = await call(agent, 'SendStreamingMessage', message10('hi'));
    const results = await streamResults(res);
    expect(results.map((r) => Object.keys(r)[0])).toEqual([
      'task',
      'statusUpdate',
      'artifactUpdate',
      'artifactUpdate',
      'statusUpdate',
      'task',
    ]);
    const [first, working, chunk1, chunk2, completed, last] = results;
    const task = first?.task as Record<string, unknown>;
    expect(task).toMatchObject({
      status: { state: 'TASK_STATE_SUBMITTED' },
      history: [{ messageId: 'm-hi', role: 'ROLE_USER', parts: [{ text: 'hi' }] }],
    });
    expect(working).toMatchObject({
      statusUpdate: { taskId: task.id, status: { state: 'TASK_STATE_WORKING' } },
    });
    expect(chunk1).toEqual({
      artifactUpdate: {
        taskId: task.id,
        contextId: task.contextId,
        artifact: { artifactId: 'answer', parts: [{ text: 'echo: ' }] },
      },
    });
    expect(chunk2).toMatchObject({
      artifactUpdate: { artifact: { parts: [{ text: 'hi' }] }, append: true, lastChunk: true },
    });
    expect(completed).toMatchObject({ statusUpdate: { status: { state: 'TASK_STATE_COMPLETED' } } });
    expect(last).toMatchObject({
      task: {
        id: task.id,
        status: { state: 'TASK_STATE_COMPLETED' },
        artifacts: [{ artifactId: 'answer', parts: [{ text: 'echo: ' }, { text: 'hi' }] }],
      },
    });
    expect(agent.tasks.get(String(task.id))?.status.state).toBe('completed');
    expect(agent.rpc('SendStreamingMessage')[0]?.headers['a2a-version']).toBe('1.0');
  });

  it('contract agent: streams the default 0.3 answer with kinds, lowercase states and final', async () => {
    const agent = await start({ version: '0.3' });
    const res = await call(agent, 'message/stream', {
      message: { kind: 'message', messageId: 'm1', role: 'user', parts: [{ kind: 'text', text: 'yo' }] },
    });
    const results = await streamResults(res);
    expect(results.map((r) => r.kind)).toEqual([
      'task',
      'status-update',
      'artifact-update',
      'artifact-update',
      'status-update',
      'task',
    ]);
    expect(results[0]).toMatchObject({
      status: { state: 'submitted' },
      history: [{ kind: 'message', role: 'user', parts: [{ kind: 'text', text: 'yo' }] }],
    });
    expect(results[1]).toMatchObject({ status: { state: 'working' }, final: false });
    expect(results[3]).toMatchObject({ artifact: { parts: [{ kind: 'text', text: 'yo' }] }, append: true });
    expect(results[4]).toMatchObject({ status: { state: 'completed' }, final: true });
    // A 1.0 method on a 0.3 agent is unknown there.
    const wrong = (await (await call(agent, 'GetTask', { id: 'x' })).json()) as Record<string, unknown>;
    expect(wrong.error).toEqual({ code: -32601, message: 'Method not found: GetTask' });
  });

  it('contract agent: redirect() answers 302 with Location', async () => {
    const agent = await start({ version: '1.0' });
    agent.enqueue(redirect('http://127.0.0.1:1/elsewhere'));
    const res = await fetch(agent.endpoint, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendStreamingMessage', params: message10('a') }),
    });
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe('http://127.0.0.1:1/elsewhere');
    expect(agent.tasks.size).toBe(0);
  });

  it('contract agent: rpcError() is an HTTP 200 JSON body, with ErrorInfo at 1.0', async () => {
    const agent = await start({ version: '1.0' });
    agent.enqueue(rpcError(-32004, 'busy'));
    const res = await call(agent, 'SendStreamingMessage', message10('a'));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json');
    const body = (await res.json()) as Record<string, unknown>;
    const sent = agent.rpc('SendStreamingMessage')[0]?.body as { id: number };
    expect(body).toEqual({
      jsonrpc: '2.0',
      id: sent.id,
      error: {
        code: -32004,
        message: 'busy',
        data: [
          {
            '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
            reason: 'UNSUPPORTED_OPERATION',
            domain: 'a2a-protocol.org',
          },
        ],
      },
    });
    expect(agent.queued()).toBe(0);
  });

  it('contract agent: ListTasks pages by contextId with nextPageToken', async () => {
    const agent = await start({ version: '1.0' });
    const ctx = 'ctx-1';
    for (const text of ['one', 'two', 'three']) {
      await (await call(agent, 'SendStreamingMessage', message10(text, { contextId: ctx }))).text();
    }
    await (await call(agent, 'SendStreamingMessage', message10('other'))).text();
    const page1 = (await (await call(agent, 'ListTasks', { contextId: ctx, pageSize: 2 })).json()) as {
      result: { tasks: Array<Record<string, unknown>>; nextPageToken: string; totalSize: number };
    };
    expect(page1.result.tasks).toHaveLength(2);
    expect(page1.result.totalSize).toBe(3);
    expect(page1.result.nextPageToken).not.toBe('');
    const page2 = (await (
      await call(agent, 'ListTasks', { contextId: ctx, pageSize: 2, pageToken: page1.result.nextPageToken })
    ).json()) as typeof page1;
    expect(page2.result.tasks).toHaveLength(1);
    expect(page2.result.nextPageToken).toBe('');
    const texts = [...page1.result.tasks, ...page2.result.tasks].map(
      (t) => (t.history as Array<{ parts: Array<{ text: string }> }>)[0]?.parts[0]?.text,
    );
    // Newest first, every task of the context exactly once, no artifacts unless asked for.
    expect(texts).toEqual(['three', 'two', 'one']);
    expect(page1.result.tasks[0]?.artifacts).toBeUndefined();
  });

  it('contract agent: dropAfter() leaves the task working; SubscribeToTask then completes it', async () => {
    const agent = await start({ version: '1.0' });
    agent.enqueue(dropAfter(2));
    const res = await call(agent, 'SendStreamingMessage', message10('hey'));
    await expect(res.text()).rejects.toMatchObject({ name: 'TypeError', message: 'terminated' });
    const [task] = [...agent.tasks.values()];
    expect(task?.status.state).toBe('working');
    const got = (await (await call(agent, 'GetTask', { id: task?.id, historyLength: 0 })).json()) as {
      result: Record<string, unknown>;
    };
    expect(got.result).toMatchObject({ id: task?.id, status: { state: 'TASK_STATE_WORKING' } });
    expect(got.result.history).toBeUndefined();
    const resumed = await streamResults(await call(agent, 'SubscribeToTask', { id: task?.id }));
    expect(resumed.map((r) => Object.keys(r)[0])).toEqual([
      'task',
      'artifactUpdate',
      'artifactUpdate',
      'statusUpdate',
      'task',
    ]);
    expect(resumed[4]).toMatchObject({ task: { status: { state: 'TASK_STATE_COMPLETED' } } });
  });

  it('contract agent: splitFrames() is still valid SSE carrying the same events', async () => {
    const agent = await start({ version: '1.0' });
    agent.enqueue(splitFrames(64));
    const res = await call(agent, 'SendStreamingMessage', message10('split ✓'));
    const raw = await res.text();
    expect(raw).toContain('\r\n');
    expect(raw).toContain(': keep-alive');
    const results = parseSse(raw).map((e) => (JSON.parse(e.data) as Record<string, unknown>).result);
    expect(results).toHaveLength(6);
    expect(results[3]).toMatchObject({ artifactUpdate: { artifact: { parts: [{ text: 'split ✓' }] } } });
  });
});
