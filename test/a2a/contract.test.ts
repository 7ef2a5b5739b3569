import { afterEach, describe, expect, it } from 'vitest';
import { A2AClient } from '../../src/a2a/client.js';
import type { A2AClientOptions } from '../../src/a2a/options.js';
import {
  AgentBusyError,
  AgentThrottledError,
  AnswerRejectedError,
  CardFetchError,
  CredentialsRejectedError,
  IdentityRefusedError,
  LostConnectionError,
  MalformedResponseError,
  NoJsonRpcInterfaceError,
  NotSentError,
  OutcomeUnknownError,
  RedirectRefusedError,
  SizeLimitError,
  StreamIdleError,
  StreamingNotAdvertisedError,
  TaskNotFoundError,
  UnsupportedExtensionRequiredError,
} from '../../src/core/agent/errors.js';
import { namesTaskAndContext } from '../../src/core/agent/model.js';
import { InvalidConfigError } from '../../src/core/errors.js';
import { answerText, collect, failureOf, idsOf, lastState } from '../helpers/stream.js';
import {
  answer,
  bareMessage,
  type CardOptions,
  type ContractAgent,
  dropAfter,
  dropBeforeHeaders,
  httpStatus,
  invalidEvent,
  keepAliveOnly,
  malformedSse,
  newContext,
  noIds,
  oversizedEvent,
  redirect,
  rpcError,
  type SeedTask,
  silentStream,
  slowHeaders,
  splitFrames,
  startContractAgent,
  wrongId,
} from '../peers/contract-agent/contract-agent.js';

const HITL = 'https://kagent.dev/extensions/hitl/v1';

/** A finished task whose history holds the user's turn with this messageId. */
function withTurn(contextId: string, messageId: string): SeedTask {
  return { contextId, state: 'completed', history: [{ messageId, role: 'user', parts: [{ text: 'turn' }] }] };
}

// Every client-side row of the contract's "Discovery and transport", "Methods" and "Errors"
// tables, at both wire versions, against our scriptable agent over real HTTP.
describe.each(['1.0', '0.3'] as const)('A2A client against the contract agent at %s', (version) => {
  const agents: ContractAgent[] = [];
  afterEach(async () => {
    await Promise.all(agents.splice(0).map((a) => a.close()));
  });

  async function agent(card: CardOptions = {}): Promise<ContractAgent> {
    const a = await startContractAgent({ version, card });
    agents.push(a);
    return a;
  }

  function client(a: ContractAgent, options: Partial<A2AClientOptions> = {}): A2AClient {
    return new A2AClient({ endpoint: a.endpoint, identity: { kind: 'bearer', token: 'tok-1' }, ...options });
  }

  function sendCalls(a: ContractAgent): number {
    return a.rpc(version === '1.0' ? 'SendStreamingMessage' : 'message/stream').length;
  }

  describe('discovery and transport', () => {
    it(`[DT-1] refuses a card whose interfaces are all gRPC or REST (${version})`, async () => {
      for (const interfaces of ['grpc-only', 'rest-only'] as const) {
        const a = await agent({ interfaces });
        const { error } = await failureOf(client(a).sendStreamingMessage({ messageId: 'm', text: 'hi' }));
        expect(error).toBeInstanceOf(NoJsonRpcInterfaceError);
        expect((error as Error).message).toBe('agent card lists no JSON-RPC interface');
        expect(sendCalls(a)).toBe(0);
      }
    });

    it(`[DT-2] reads the card below the endpoint, trailing slash trimmed, and retries a failed fetch (${version})`, async () => {
      const a = await agent({ status: 503 });
      const c = new A2AClient({ endpoint: `${a.endpoint}//`, identity: { kind: 'bearer', token: 'tok-1' } });
      await expect(c.card()).rejects.toBeInstanceOf(CardFetchError);
      a.setCard({});
      expect((await c.card()).protocolVersion).toBe(version);
      const cardGets = a.requests.filter((r) => r.httpMethod === 'GET');
      expect(cardGets.map((r) => r.path)).toEqual([
        '/a2a/.well-known/agent-card.json',
        '/a2a/.well-known/agent-card.json',
      ]);
    });

    it(`[DT-2] refuses a card that is not JSON with CardFetchError (${version})`, async () => {
      const a = await agent({ raw: '<html>not a card</html>' });
      await expect(client(a).card()).rejects.toBeInstanceOf(CardFetchError);
    });

    it(`[DT-3] refuses a card without streaming and never sends (${version})`, async () => {
      const a = await agent({ streaming: false });
      const { error } = await failureOf(client(a).sendStreamingMessage({ messageId: 'm', text: 'hi' }));
      expect(error).toBeInstanceOf(StreamingNotAdvertisedError);
      expect(a.requests.filter((r) => r.httpMethod === 'POST')).toHaveLength(0);
    });

    it(`[DT-4] refuses a required extension the dialect does not speak (${version})`, async () => {
      const a = await agent({ extensions: [{ uri: 'urn:x-unknown', required: true }] });
      const { error } = await failureOf(
        client(a, { extensions: [HITL] }).sendStreamingMessage({ messageId: 'm', text: 'hi' }),
      );
      expect(error).toBeInstanceOf(UnsupportedExtensionRequiredError);
      expect((error as Error).message).toBe('agent requires an unsupported extension');
    });

    it(`[DT-4][S-8] accepts a required extension it speaks and asks for it on every call (${version})`, async () => {
      const a = await agent({ extensions: [{ uri: HITL, required: true }, { uri: 'urn:x-other' }] });
      const c = client(a, { extensions: [HITL] });
      const events = await collect(c.sendStreamingMessage({ messageId: 'm-ext', text: 'hi' }));
      await c.getTask(idsOf(events).taskId);
      const posts = a.requests.filter((r) => r.httpMethod === 'POST');
      expect(posts).toHaveLength(2);
      for (const post of posts) {
        expect(post.headers['a2a-extensions']).toBe(HITL);
        if (version === '0.3') expect(post.headers['x-a2a-extensions']).toBe(HITL);
      }
    });

    it(`[S-8] asks for no extension the card does not list (${version})`, async () => {
      const a = await agent();
      await collect(client(a, { extensions: [HITL] }).sendStreamingMessage({ messageId: 'm', text: 'hi' }));
      const post = a.requests.find((r) => r.httpMethod === 'POST');
      expect(post?.headers['a2a-extensions']).toBeUndefined();
    });

    it(`[DT-5] does not follow a redirect on a send: NotSentError, and the target sees nothing (${version})`, async () => {
      const target = await agent();
      const a = await agent();
      a.enqueue(redirect(target.endpoint, 307));
      const { error } = await failureOf(client(a).sendStreamingMessage({ messageId: 'm', text: 'hi' }));
      expect(error).toBeInstanceOf(RedirectRefusedError);
      expect(error).toBeInstanceOf(NotSentError);
      expect(target.requests).toHaveLength(0);
    });

    it(`[DT-5] does not follow a redirect of the card, so the token never leaves (${version})`, async () => {
      const target = await agent();
      const a = await agent({ redirectTo: `${target.endpoint}/.well-known/agent-card.json` });
      const error = await client(a)
        .card()
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(CardFetchError);
      expect((error as Error).cause).toBeInstanceOf(RedirectRefusedError);
      expect(target.requests).toHaveLength(0);
    });

    it(`[DT-6] fails a send whose headers do not come in time as a lost connection, outcome unknown (${version})`, async () => {
      const a = await agent();
      const c = client(a, { timeouts: { headersMs: 150 } });
      await c.card();
      a.enqueue(slowHeaders(2_000));
      const { error } = await failureOf(c.sendStreamingMessage({ messageId: 'm', text: 'hi' }));
      expect(error).toBeInstanceOf(OutcomeUnknownError);
      const cause = (error as Error).cause;
      expect(cause).toBeInstanceOf(LostConnectionError);
      expect((cause as LostConnectionError).reason).toBe('headers-timeout');
    });

    it(`[DT-6] bounds the wait for headers on reads and on the card too (${version})`, async () => {
      const a = await agent();
      const c = client(a, { timeouts: { headersMs: 150 } });
      const task = a.seedTask({ state: 'working' });
      a.enqueue(slowHeaders(2_000));
      const error = await c.getTask(task.id).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LostConnectionError);
      expect((error as LostConnectionError).reason).toBe('headers-timeout');
    });

    it(`[DT-7] ignores the interface URL in the card: every call goes to the endpoint (${version})`, async () => {
      const elsewhere = await agent();
      const a = await agent({ interfaceUrl: elsewhere.endpoint });
      const events = await collect(client(a).sendStreamingMessage({ messageId: 'm', text: 'hi' }));
      expect(lastState(events)).toBe('completed');
      expect(elsewhere.requests).toHaveLength(0);
      expect(sendCalls(a)).toBe(1);
    });

    it(`[DT-8] fetches the card with the identity headers, and again when credentials change (${version})`, async () => {
      const a = await agent();
      const c = client(a, { headers: { 'X-Team': 'blue' } });
      await c.card();
      await c.card();
      c.reconfigure({
        endpoint: a.endpoint,
        identity: { kind: 'bearer', token: 'tok-1' },
        headers: { 'X-Team': 'blue' },
      });
      await c.card();
      c.reconfigure({ endpoint: a.endpoint, identity: { kind: 'user-id', userId: 'U7' } });
      await c.card();
      const gets = a.requests.filter((r) => r.httpMethod === 'GET');
      expect(gets).toHaveLength(2);
      expect(gets[0]?.headers.authorization).toBe('Bearer tok-1');
      expect(gets[0]?.headers['x-team']).toBe('blue');
      expect(gets[1]?.headers.authorization).toBeUndefined();
      expect(gets[1]?.headers['x-user-id']).toBe('U7');
    });

    it(`[DT-8] fetches the card again when the endpoint changes (${version})`, async () => {
      const first = await agent();
      const second = await agent();
      const c = client(first);
      await c.card();
      c.reconfigure({ endpoint: second.endpoint, identity: { kind: 'bearer', token: 'tok-1' } });
      await collect(c.sendStreamingMessage({ messageId: 'm', text: 'hi' }));
      expect(second.requests.filter((r) => r.httpMethod === 'GET')).toHaveLength(1);
      expect(sendCalls(second)).toBe(1);
      expect(sendCalls(first)).toBe(0);
    });
  });

  describe('what is sent', () => {
    it(`[S-1][S-3][S-4] sends one user message with one text part; no contextId or taskId on a first turn (${version})`, async () => {
      const a = await agent();
      await collect(client(a).sendStreamingMessage({ messageId: 'm-first', text: 'hello' }));
      const body = a.rpc(version === '1.0' ? 'SendStreamingMessage' : 'message/stream')[0]?.body as {
        params: { message: Record<string, unknown> };
      };
      const message = body.params.message;
      expect(message.parts).toEqual(
        version === '1.0' ? [{ text: 'hello' }] : [{ kind: 'text', text: 'hello' }],
      );
      expect(message.role).toBe(version === '1.0' ? 'ROLE_USER' : 'user');
      expect(message.messageId).toBe('m-first');
      expect('contextId' in message).toBe(false);
      expect('taskId' in message).toBe(false);
    });

    it(`[S-5] carries the actor metadata as given (${version})`, async () => {
      const a = await agent();
      const metadata = { 'agentkourier.dev/actor': { id: 'U123', name: 'Ada', email: 'ada@example.com' } };
      await collect(
        client(a).sendStreamingMessage({ messageId: 'm', text: 'hi', contextId: 'ctx-1', metadata }),
      );
      const sent = a.requests.find((r) => r.httpMethod === 'POST')?.body;
      expect(sent).toMatchObject({ params: { message: { contextId: 'ctx-1', metadata } } });
    });

    it(`[S-8] sends exactly one identity header, the static headers and the trace context (${version})`, async () => {
      const a = await agent();
      const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
      const c = new A2AClient({
        endpoint: a.endpoint,
        identity: { kind: 'user-id', userId: 'U9' },
        headers: { 'X-Tenant': 'acme' },
      });
      // The turn's context, passed per call: without a tracing SDK the call's span is a no-op
      // that carries it, so the agent gets exactly it.
      await collect(
        c.sendStreamingMessage(
          { messageId: 'm', text: 'hi' },
          { trace: { traceparent, tracestate: 'vendor=1' } },
        ),
      );
      expect(a.requests).toHaveLength(2);
      expect(a.requests[0]?.headers['x-user-id']).toBe('U9');
      for (const r of a.requests) {
        if (r.httpMethod === 'GET') continue;
        expect(r.headers['x-user-id']).toBe('U9');
        expect(r.headers.authorization).toBeUndefined();
        expect(r.headers['x-tenant']).toBe('acme');
        expect(r.headers.traceparent).toBe(traceparent);
        expect(r.headers.tracestate).toBe('vendor=1');
        expect(r.headers['a2a-version']).toBe(version === '1.0' ? '1.0' : undefined);
      }
    });

    it('refuses a static header that would replace the identity, naming the setting', () => {
      const refusal = (build: () => unknown): unknown => {
        try {
          build();
        } catch (error) {
          return error;
        }
        return undefined;
      };
      const header = refusal(
        () =>
          new A2AClient({
            endpoint: 'http://127.0.0.1:1/a2a',
            identity: { kind: 'bearer', token: 'secret-token' },
            headers: { Authorization: 'Bearer other' },
          }),
      );
      expect(header).toBeInstanceOf(InvalidConfigError);
      expect((header as InvalidConfigError).message).toMatch(
        /setting headers may not set a header the client sets itself/,
      );
      const endpoint = refusal(
        () => new A2AClient({ endpoint: 'ftp://x/', identity: { kind: 'user-id', userId: 'U' } }),
      );
      expect(endpoint).toBeInstanceOf(InvalidConfigError);
      expect((endpoint as InvalidConfigError).message).toMatch(/setting endpoint/);
      const token = refusal(
        () => new A2AClient({ endpoint: 'http://x/', identity: { kind: 'bearer', token: 'a\r\nb' } }),
      );
      expect(token).toBeInstanceOf(InvalidConfigError);
      expect((token as InvalidConfigError).message).toMatch(/identity.token contains a line break/);
      // Never the secret itself in what is said.
      expect((header as InvalidConfigError).message).not.toContain('secret-token');
    });
  });

  describe('replies', () => {
    it(`[R-1] passes a bare Message on as a message event that names no task (${version})`, async () => {
      const a = await agent();
      a.enqueue(bareMessage('just text'));
      const events = await collect(client(a).sendStreamingMessage({ messageId: 'm', text: 'hi' }));
      expect(events.map((e) => e.kind)).toEqual(['message']);
      expect(events.every(namesTaskAndContext)).toBe(false);
    });

    it(`[R-2] keeps events without ids as events that name no task, never drops them (${version})`, async () => {
      const a = await agent();
      a.enqueue(noIds());
      const events = await collect(client(a).sendStreamingMessage({ messageId: 'm', text: 'hi' }));
      expect(events.length).toBeGreaterThan(2);
      expect(events.some(namesTaskAndContext)).toBe(false);
    });

    it(`[R-3] reports the contextId the agent used, even when it differs from the one sent (${version})`, async () => {
      const a = await agent();
      a.enqueue(newContext());
      const events = await collect(
        client(a).sendStreamingMessage({ messageId: 'm', text: 'hi', contextId: 'ctx-mine' }),
      );
      expect(idsOf(events).contextId).not.toBe('ctx-mine');
      expect(idsOf(events).contextId).not.toBe('');
    });

    it(`[R-5] ends cleanly when the stream closes after the terminal status, without a full Task (${version})`, async () => {
      const a = await agent();
      a.enqueue(answer({ chunks: ['a', 'b'], final: 'status-only' }));
      const events = await collect(client(a).sendStreamingMessage({ messageId: 'm', text: 'hi' }));
      expect(events.at(-1)?.kind).toBe('status-update');
      expect(lastState(events)).toBe('completed');
      expect(answerText(events)).toBe('ab');
    });

    it(`[R-6] cuts a stream with no event for the idle limit, keep-alive comments included (${version})`, async () => {
      for (const behaviour of [silentStream(), keepAliveOnly(20)]) {
        const a = await agent();
        const c = client(a, { timeouts: { streamIdleMs: 200 } });
        await c.card();
        a.enqueue(behaviour);
        const started = Date.now();
        const { error } = await failureOf(c.sendStreamingMessage({ messageId: 'm', text: 'hi' }));
        expect(error).toBeInstanceOf(StreamIdleError);
        expect(Date.now() - started).toBeGreaterThanOrEqual(190);
      }
    });

    it(`[R-6] keeps a stream whose events come more often than the idle limit (${version})`, async () => {
      // Twelve chunks 60 ms apart: the stream as a whole outlasts the 600 ms limit, while no gap
      // between events comes near it, even on a loaded machine (pieces of one event written a
      // byte at a time would not stamp the time, and made this test flaky).
      const a = await agent();
      const c = client(a, { timeouts: { streamIdleMs: 600 } });
      const chunks = Array.from({ length: 12 }, (_, i) => `c${i} `);
      a.enqueue(answer({ chunks, chunkDelayMs: 60 }));
      const started = Date.now();
      const events = await collect(c.sendStreamingMessage({ messageId: 'm', text: 'steady' }));
      expect(Date.now() - started).toBeGreaterThan(600);
      expect(lastState(events)).toBe('completed');
      expect(answerText(events)).toBe(chunks.join(''));
    });

    it(`[R-9] passes the append flag through: the first chunk replaces, later ones append (${version})`, async () => {
      const a = await agent();
      a.enqueue(answer({ chunks: ['Hel', 'lo ', 'world'] }));
      const events = await collect(client(a).sendStreamingMessage({ messageId: 'm', text: 'hi' }));
      const updates = events.filter((e) => e.kind === 'artifact-update');
      expect(updates.map((u) => u.append)).toEqual([false, true, true]);
      expect(answerText(events)).toBe('Hello world');
    });

    it(`reads a stream split into tiny pieces, with CRLF, multi-line data and comments (${version})`, async () => {
      const a = await agent();
      a.enqueue(splitFrames(3));
      const events = await collect(client(a).sendStreamingMessage({ messageId: 'm', text: 'split' }));
      expect(answerText(events)).toBe('echo: split');
      expect(lastState(events)).toBe('completed');
    });
  });

  describe('methods', () => {
    it(`[M-2] reads a task with GetTask, history included (${version})`, async () => {
      const a = await agent();
      const events = await collect(client(a).sendStreamingMessage({ messageId: 'm-get', text: 'hi' }));
      const task = await client(a).getTask(idsOf(events).taskId, { historyLength: 10 });
      expect(task.status.state).toBe('completed');
      expect(task.history.map((m) => m.messageId)).toContain('m-get');
    });

    it(`[M-3] resubscribes to a task: snapshot first (${version})`, async () => {
      const a = await agent();
      const task = a.seedTask({ state: 'working' });
      const events = await collect(client(a).subscribeToTask(task.id));
      expect(events[0]?.kind).toBe('task');
      expect(lastState(events)).toBe('completed');
    });

    it(`[M-4] cancels a task (${version})`, async () => {
      const a = await agent();
      const task = a.seedTask({ state: 'working' });
      expect((await client(a).cancelTask(task.id)).status.state).toBe('canceled');
    });

    if (version === '1.0') {
      it('[M-5][M-6] follows nextPageToken, and finds a turn only by the messageId in a task history', async () => {
        const a = await agent();
        const seeds: SeedTask[] = Array.from({ length: 5 }, (_, i) => withTurn('ctx-list', `mid-${i}`));
        const tasks = seeds.map((s) => a.seedTask(s));
        const c = client(a, { listTasks: { pageSize: 2 } });
        const found = await c.findTaskByMessageId('ctx-list', 'mid-0');
        expect(found?.id).toBe(tasks[0]?.id);
        expect(await c.findTaskByMessageId('ctx-list', 'mid-none')).toBeUndefined();
        const lists = a.rpc('ListTasks').map((r) => r.body as { params: Record<string, unknown> });
        expect(lists[0]?.params).toMatchObject({ contextId: 'ctx-list', pageSize: 2 });
        expect(lists[1]?.params.pageToken).toBeTypeOf('string');
      });

      it('[M-6] stops after maxPages pages', async () => {
        const a = await agent();
        for (let i = 0; i < 6; i++) a.seedTask(withTurn('ctx-many', `many-${i}`));
        const c = client(a, { listTasks: { pageSize: 1, maxPages: 3 } });
        const seen: string[] = [];
        for await (const task of c.listTasks('ctx-many')) seen.push(task.id);
        expect(seen).toHaveLength(3);
        expect(a.rpc('ListTasks')).toHaveLength(3);
      });

      it('[M-6] finds nothing in a list without history', async () => {
        const a = await agent();
        a.seedTask(withTurn('ctx-nohist', 'mid-x'));
        const c = client(a, { listTasks: { historyLength: 0 } });
        expect(await c.findTaskByMessageId('ctx-nohist', 'mid-x')).toBeUndefined();
      });
    }
  });

  describe('errors', () => {
    it(`[E-1] HTTP 401 and 403 reject the credentials, on a send, a read and the card (${version})`, async () => {
      for (const status of [401, 403]) {
        const a = await agent();
        const c = client(a);
        await c.card();
        a.enqueue(httpStatus(status));
        const { error } = await failureOf(c.sendStreamingMessage({ messageId: 'm', text: 'hi' }));
        expect(error).toBeInstanceOf(CredentialsRejectedError);
        a.enqueue(httpStatus(status));
        await expect(c.getTask('t')).rejects.toBeInstanceOf(CredentialsRejectedError);
        const b = await agent({ status });
        await expect(client(b).card()).rejects.toBeInstanceOf(CredentialsRejectedError);
      }
    });

    it(`[E-2] -31403 refuses the identity (${version})`, async () => {
      const a = await agent();
      a.enqueue(rpcError(-31403, 'not for you'));
      const { error } = await failureOf(client(a).sendStreamingMessage({ messageId: 'm', text: 'hi' }));
      expect(error).toBeInstanceOf(IdentityRefusedError);
    });

    it(`[E-3] -32004 to a send is busy (${version})`, async () => {
      const a = await agent();
      a.enqueue(rpcError(-32004, 'busy'));
      const { error } = await failureOf(client(a).sendStreamingMessage({ messageId: 'm', text: 'hi' }));
      expect(error).toBeInstanceOf(AgentBusyError);
    });

    it(`[E-4] -32603 to an answer rejects the answer (${version})`, async () => {
      const a = await agent();
      const task = a.seedTask({ state: 'input-required' });
      a.enqueue(rpcError(-32603, 'bad answer'));
      const { error } = await failureOf(
        client(a).sendStreamingMessage({
          messageId: 'm-ans',
          text: 'yes',
          taskId: task.id,
          contextId: task.contextId,
        }),
      );
      expect(error).toBeInstanceOf(AnswerRejectedError);
    });

    it(`[E-5] -32001 while following a task: task not found (${version})`, async () => {
      const a = await agent();
      await expect(client(a).getTask('missing')).rejects.toBeInstanceOf(TaskNotFoundError);
      await expect(client(a).cancelTask('missing')).rejects.toBeInstanceOf(TaskNotFoundError);
    });

    it(`[E-6] another 4xx before any event is not sent; 408 and 429 are throttling (${version})`, async () => {
      const a = await agent();
      const c = client(a);
      await c.card();
      a.enqueue(httpStatus(400), httpStatus(404), httpStatus(429, { 'retry-after': '12' }), httpStatus(408));
      const results = [];
      for (let i = 0; i < 4; i++)
        results.push((await failureOf(c.sendStreamingMessage({ messageId: 'm', text: 'hi' }))).error);
      expect(results[0]).toBeInstanceOf(NotSentError);
      expect(results[1]).toBeInstanceOf(NotSentError);
      expect(results[2]).toBeInstanceOf(AgentThrottledError);
      expect((results[2] as AgentThrottledError).retryAfterMs).toBe(12_000);
      expect(results[3]).toBeInstanceOf(AgentThrottledError);
    });

    it(`[E-7] a 5xx or a connection dropped before any event leaves the outcome unknown (${version})`, async () => {
      const a = await agent();
      const c = client(a);
      await c.card();
      a.enqueue(httpStatus(500), dropBeforeHeaders());
      const five = await failureOf(c.sendStreamingMessage({ messageId: 'm', text: 'hi' }));
      expect(five.error).toBeInstanceOf(OutcomeUnknownError);
      const dropped = await failureOf(c.sendStreamingMessage({ messageId: 'm', text: 'hi' }));
      expect(dropped.error).toBeInstanceOf(OutcomeUnknownError);
      expect((dropped.error as Error).cause).toBeInstanceOf(LostConnectionError);
    });

    it(`[E-7] a stream dropped after events is a lost connection that says how far it got (${version})`, async () => {
      const a = await agent();
      a.enqueue(dropAfter(2));
      const { error, events } = await failureOf(
        client(a).sendStreamingMessage({ messageId: 'm', text: 'hi' }),
      );
      expect(events).toHaveLength(2);
      expect(error).toBeInstanceOf(LostConnectionError);
      expect((error as LostConnectionError).eventsSeen).toBe(2);
    });

    it(`[E-8] reads Retry-After on a 503, capped at a day (${version})`, async () => {
      const a = await agent();
      const c = client(a);
      await c.card();
      a.enqueue(httpStatus(503, { 'retry-after': '30' }), httpStatus(503, { 'retry-after': '9999999' }));
      const first = await failureOf(c.sendStreamingMessage({ messageId: 'm', text: 'hi' }));
      expect((first.error as OutcomeUnknownError).retryAfterMs).toBe(30_000);
      const second = await failureOf(c.sendStreamingMessage({ messageId: 'm', text: 'hi' }));
      expect((second.error as OutcomeUnknownError).retryAfterMs).toBe(86_400_000);
    });

    it(`[E-9] keeps the agent's error text out of the error message (${version})`, async () => {
      const a = await agent();
      a.enqueue(rpcError(-32004, 'internal: db at 10.0.0.3 is down'));
      const { error } = await failureOf(client(a).sendStreamingMessage({ messageId: 'm', text: 'hi' }));
      expect((error as AgentBusyError).message).not.toContain('10.0.0.3');
      expect((error as AgentBusyError).peerMessage).toContain('10.0.0.3');
    });

    it(`turns malformed SSE, a non-A2A event and a wrong id into MalformedResponseError (${version})`, async () => {
      const a = await agent();
      const c = client(a);
      for (const [i, behaviour] of [malformedSse(1), invalidEvent(1), wrongId()].entries()) {
        a.enqueue(behaviour);
        const { error } = await failureOf(c.sendStreamingMessage({ messageId: `m-bad-${i}`, text: 'hi' }));
        expect(error).toBeInstanceOf(MalformedResponseError);
      }
    });

    it(`refuses an event past the size bound with SizeLimitError (${version})`, async () => {
      const a = await agent();
      a.enqueue(oversizedEvent(64 * 1024));
      const c = client(a, { limits: { maxEventBytes: 16 * 1024 } });
      const { error } = await failureOf(c.sendStreamingMessage({ messageId: 'm', text: 'hi' }));
      expect(error).toBeInstanceOf(SizeLimitError);
      expect((error as SizeLimitError).limit).toBe('event');
    });

    it(`refuses a card past the size bound (${version})`, async () => {
      const a = await agent({ raw: JSON.stringify({ name: 'x'.repeat(4096) }) });
      const error = await client(a, { limits: { maxCardBytes: 1024 } })
        .card()
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(SizeLimitError);
      expect((error as SizeLimitError).limit).toBe('card');
    });
  });
});
