import { afterEach, describe, expect, it, vi } from 'vitest';
import { argumentsHash } from '../../../src/core/approval-audit.js';
import { InvalidConfigError } from '../../../src/core/errors.js';
import { createLogger } from '../../../src/observability/logging.js';
import {
  createWebChat,
  type MessageView,
  type ThreadSummary,
  type ThreadView,
  WebChatSurface,
} from '../../../src/surfaces/webchat/index.js';
import { answer, script } from '../../peers/contract-agent/contract-agent.js';
import { BINDING, HITL_METADATA_KEY, startWebChatHarness, TOKEN, type WebChatHarness } from './harness.js';

let h: WebChatHarness | undefined;

afterEach(async () => {
  await h?.close();
  h = undefined;
});

async function harness(options: Parameters<typeof startWebChatHarness>[0] = {}): Promise<WebChatHarness> {
  h = await startWebChatHarness(options);
  return h;
}

async function start(
  w: WebChatHarness,
  text: string,
): Promise<{ thread: ThreadSummary; message: MessageView }> {
  const res = await w.api('POST', '/api/threads', { binding: BINDING, text });
  expect(res.status, res.text).toBe(201);
  return res.json as { thread: ThreadSummary; message: MessageView };
}

function finalAnswer(t: ThreadView): boolean {
  return t.messages.some((m) => m.kind === 'answer' && m.final === true);
}

function errorOf(json: unknown): { code: string; message: string } {
  return (json as { error: { code: string; message: string } }).error;
}

/**
 * The agent's reply to an answer, opening with a status update. (The contract agent's default
 * reply opens with a Task snapshot still in input-required, which the engine reads as the same
 * question asked again: an engine matter, reported, kept out of these surface tests.)
 */
function resumed(text: string) {
  return script([{ event: 'working' }, { event: 'chunk', text }, { event: 'completed' }]);
}

const APPROVAL = {
  type: 'tool_approval_request',
  hint: 'Two tools need approval.',
  tools: [
    { id: 'conf-1', call_id: 'call-a', name: 'delete_file', args: { path: '/tmp/old' } },
    { id: 'conf-2', call_id: 'call-b', name: 'restart_deployment', args: { name: 'api', namespace: 'prod' } },
  ],
  nested: null,
};

describe('web chat API', () => {
  it('creates a thread whose answer streams in, and reads it back as JSON in order', async () => {
    const w = await harness();
    const bindings = await w.api('GET', '/api/bindings');
    expect(bindings.json).toEqual({
      bindings: [{ ref: BINDING, threadCount: 0, examples: [], ready: true }],
    });

    const { thread, message } = await start(w, 'hello there');
    expect(message).toMatchObject({ author: 'person', kind: 'message', text: 'hello there', seq: 1 });
    const done = await w.waitForThread(thread.id, finalAnswer, 'the final answer');
    expect(done.messages.map((m) => [m.seq, m.author, m.kind])).toEqual([
      [1, 'person', 'message'],
      [2, 'agent', 'answer'],
    ]);
    // The agent echoes what it was sent: the label line, then the person's text.
    expect(done.messages[1]?.text).toBe('echo: [Web chat: Local user (webchat-local)]\nhello there');
    expect(done.title).toBe('hello there');

    const list = await w.api('GET', `/api/threads?binding=${encodeURIComponent(BINDING)}`);
    expect((list.json as { threads: ThreadSummary[] }).threads.map((t) => t.id)).toEqual([thread.id]);

    const reply = await w.api('POST', `/api/threads/${thread.id}/messages`, { text: 'and again' });
    expect(reply.status).toBe(202);
    const second = await w.waitForThread(
      thread.id,
      (t) => t.messages.filter((m) => m.kind === 'answer' && m.final === true).length === 2,
      'the second answer',
    );
    expect(second.messages.map((m) => m.kind)).toEqual(['message', 'answer', 'message', 'answer']);
  });

  it('streams a thread as server-sent events: a snapshot, then the answer growing in place', async () => {
    const w = await harness({ answerIntervalMs: 50 });
    w.agent.enqueueFor(
      'SendStreamingMessage',
      answer({ chunks: ['one ', 'two ', 'three ', 'four'], chunkDelayMs: 120 }),
    );
    const res = await w.api('POST', '/api/threads', { binding: BINDING, text: 'count' });
    const { thread } = res.json as { thread: ThreadSummary };
    const stream = await w.follow(thread.id);
    await w.waitForThread(thread.id, finalAnswer, 'the final answer');
    // The stream carries the final answer too (it follows the thread a moment behind the JSON).
    await vi.waitFor(() =>
      expect(
        stream.events.some((e) => e.event === 'message' && e.data.kind === 'answer' && e.data.final === true),
      ).toBe(true),
    );
    stream.close();
    await stream.done;

    const [first, ...rest] = stream.events;
    expect(first?.event).toBe('snapshot');
    // Replay the events onto the snapshot as the page does: the result is the thread's JSON.
    const shown = new Map<string, MessageView>();
    if (first?.event === 'snapshot') for (const m of first.data.messages) shown.set(m.id, { ...m });
    let appends = 0;
    for (const e of rest) {
      if (e.event === 'message') shown.set(e.data.id, { ...e.data });
      if (e.event === 'append') {
        const m = shown.get(e.data.id);
        expect(m?.text.length).toBe(e.data.at);
        if (m !== undefined) m.text += e.data.text;
        appends++;
      }
    }
    const answerView = [...shown.values()].find((m) => m.kind === 'answer');
    expect(answerView?.text).toBe('one two three four');
    expect(answerView?.final).toBe(true);
    // It grew in several steps before the end, not in one piece at the end.
    expect(appends).toBeGreaterThanOrEqual(2);
  });

  it('shows a text question and takes its answer', async () => {
    const w = await harness();
    w.agent.enqueueFor(
      'SendStreamingMessage',
      answer({ chunks: ['checking'], state: 'input-required', statusText: 'Which namespace?' }),
    );
    const { thread } = await start(w, 'scale it');
    const asked = await w.waitForThread(
      thread.id,
      (t) => t.messages.some((m) => m.kind === 'question'),
      'the question',
    );
    const question = asked.messages.find((m) => m.kind === 'question');
    expect(question).toMatchObject({
      author: 'agent',
      text: 'Which namespace?',
      question: { mode: 'text', status: 'open' },
    });
    w.agent.enqueueFor('SendStreamingMessage', resumed('got: payments'));
    const res = await w.api('POST', `/api/threads/${thread.id}/messages/${question?.id}/answer`, {
      text: 'payments',
    });
    expect(res.status, res.text).toBe(202);
    const done = await w.waitForThread(
      thread.id,
      (t) => t.messages.some((m) => m.kind === 'answer' && m.text.startsWith('got:')),
      'the answer to the reply',
    );
    expect(done.messages.find((m) => m.id === question?.id)?.question).toMatchObject({
      status: 'answered',
      answer: 'payments',
    });
    const again = await w.api('POST', `/api/threads/${thread.id}/messages/${question?.id}/answer`, {
      text: 'twice',
    });
    // As docs/webchat.md says: answered already is `already_answered`, not `question_not_pending`.
    expect(again.status).toBe(409);
    expect(errorOf(again.json).code).toBe('already_answered');
  });

  it('shows an approval with each tool and its arguments, and sends per-tool decisions', async () => {
    const w = await harness();
    w.agent.enqueueFor(
      'SendStreamingMessage',
      script([
        { event: 'task' },
        {
          event: 'working',
          parts: [
            {
              data: { name: 'list_files', args: { dir: '/tmp' } },
              metadata: { adk_type: 'function_call' },
            },
          ],
        },
        { event: 'input-required', parts: [{ data: APPROVAL }] },
        { event: 'task' },
      ]),
    );
    const { thread } = await start(w, 'clean up');
    const asked = await w.waitForThread(
      thread.id,
      (t) => t.messages.some((m) => m.kind === 'approval'),
      'the approval',
    );
    const step = asked.messages.find((m) => m.kind === 'tool-step');
    expect(step).toMatchObject({ author: 'agent', step: { kind: 'call', toolName: 'list_files' } });
    const prompt = asked.messages.find((m) => m.kind === 'approval');
    expect(prompt?.text).toBe('Two tools need approval.');
    expect(prompt?.approval?.tools).toEqual([
      { id: 'conf-1', name: 'delete_file', args: '{\n  "path": "/tmp/old"\n}', argsTruncated: false },
      {
        id: 'conf-2',
        name: 'restart_deployment',
        args: '{\n  "name": "api",\n  "namespace": "prod"\n}',
        argsTruncated: false,
      },
    ]);
    const path = `/api/threads/${thread.id}/messages/${prompt?.id}/answer`;

    const partial = await w.api('POST', path, { decisions: [{ id: 'conf-1', approved: true }] });
    expect(partial.status).toBe(400);
    expect(errorOf(partial.json).message).toBe(
      'decisions: tool call conf-2 (restart_deployment) needs a decision',
    );
    const unknown = await w.api('POST', path, {
      decisions: [
        { id: 'conf-1', approved: true },
        { id: 'conf-2', approved: true },
        { id: 'conf-9', approved: true },
      ],
    });
    expect(errorOf(unknown.json).message).toBe('decisions: no tool call conf-9 in this approval');
    const asText = await w.api('POST', path, { text: 'yes' });
    expect(errorOf(asText.json).message).toBe('an approval is answered with decisions');
    expect(w.answered).toHaveLength(0);

    w.agent.enqueueFor('SendStreamingMessage', resumed('Deleted /tmp/old; left the deployment alone.'));
    const res = await w.api('POST', path, {
      decisions: [
        { id: 'conf-2', approved: false, reason: 'No prod restarts during the freeze' },
        { id: 'conf-1', approved: true },
      ],
    });
    expect(res.status, res.text).toBe(202);
    expect(w.answered).toHaveLength(1);
    // The Binding's dialect built the agent's message from the question's own data and the reply.
    expect(w.answered[0]).toMatchObject({
      payload: APPROVAL,
      reply: {
        type: 'tool_approval',
        decisions: [
          { id: 'conf-1', approved: true },
          { id: 'conf-2', approved: false, reason: 'No prod restarts during the freeze' },
        ],
      },
    });
    const done = await w.waitForThread(
      thread.id,
      (t) => t.messages.at(-1)?.kind === 'answer' && t.messages.at(-1)?.final === true,
      'the answer after the decision',
    );
    expect(done.messages.map((m) => `${m.author}:${m.kind}`)).toEqual([
      'person:message',
      'agent:tool-step',
      'agent:approval',
      'person:message',
      'agent:answer',
    ]);
    expect(done.messages[3]?.text).toBe(
      'Approved delete_file\nDenied restart_deployment: No prod restarts during the freeze',
    );
    expect(done.messages[2]?.approval?.status).toBe('answered');
    // The decision reached the agent as the reply to its paused task.
    const sent = w.agent.rpc('SendStreamingMessage').at(-1)?.body as {
      params: { message: { metadata?: Record<string, unknown> } };
    };
    expect(sent.params.message.metadata?.[HITL_METADATA_KEY]).toEqual(w.answered[0]?.reply);
    // Audited as a Slack decision is: one record per tool call, by the web chat's person.
    expect(w.audits).toHaveLength(2);
    expect(w.audits[0]).toMatchObject({
      binding: BINDING,
      surface: 'webchat',
      thread: thread.id,
      prompt: prompt?.id,
      approver: { id: 'webchat-local', name: 'Local user' },
      tool: { id: 'conf-1', callId: 'call-a', name: 'delete_file' },
      argumentsSha256: argumentsHash({ path: '/tmp/old' }),
      decision: 'approved',
      allAtOnce: true,
    });
    expect(w.audits[1]).toMatchObject({
      tool: { id: 'conf-2', name: 'restart_deployment' },
      decision: 'denied',
      reason: 'No prod restarts during the freeze',
    });

    const twice = await w.api('POST', path, {
      decisions: [
        { id: 'conf-1', approved: true },
        { id: 'conf-2', approved: true },
      ],
    });
    expect(twice.status).toBe(409);
    expect(errorOf(twice.json).code).toBe('already_answered');
  });

  it("answers kagent's ask_user questions with one list per question", async () => {
    const w = await harness();
    const ask = {
      type: 'ask_user_request',
      id: 'ask-1',
      questions: [
        { question: 'Which DB?', choices: ['PostgreSQL', 'MySQL'], multiple: false },
        { question: 'Which features?', choices: ['Auth', 'Caching'], multiple: true },
      ],
    };
    w.agent.enqueueFor(
      'SendStreamingMessage',
      script([{ event: 'task' }, { event: 'input-required', parts: [{ data: ask }] }, { event: 'task' }]),
    );
    const { thread } = await start(w, 'set up');
    const asked = await w.waitForThread(
      thread.id,
      (t) => t.messages.some((m) => m.kind === 'question'),
      'the question',
    );
    const q = asked.messages.find((m) => m.kind === 'question');
    expect(q?.question).toMatchObject({ mode: 'structured', items: ask.questions });
    const path = `/api/threads/${thread.id}/messages/${q?.id}/answer`;
    const short = await w.api('POST', path, { answers: [['PostgreSQL']] });
    expect(errorOf(short.json).message).toBe('answers: give one list per question (2), not 1');
    const many = await w.api('POST', path, { answers: [['PostgreSQL', 'MySQL'], []] });
    expect(errorOf(many.json).message).toBe('answers.0: this question takes one answer');
    const res = await w.api('POST', path, { answers: [['PostgreSQL'], ['Auth', 'Caching']] });
    expect(res.status, res.text).toBe(202);
    expect(w.answered[0]?.reply).toEqual({
      type: 'ask_user',
      answers: [['PostgreSQL'], ['Auth', 'Caching']],
    });
  });

  it('shows what the broker says as a notice from the broker', async () => {
    const w = await harness();
    w.agent.enqueueFor(
      'SendStreamingMessage',
      answer({ chunks: [], state: 'failed', statusText: 'internal boom' }),
    );
    const { thread } = await start(w, 'fail please');
    const done = await w.waitForThread(
      thread.id,
      (t) => t.messages.some((m) => m.kind === 'notice'),
      'the notice',
    );
    const notice = done.messages.find((m) => m.kind === 'notice');
    expect(notice).toMatchObject({ author: 'broker', noticeKind: 'task-failed' });
    // E-9: the broker's words, never the agent's error text.
    expect(notice?.text).not.toContain('internal boom');
  });

  it('says what a message typed during an open approval waits for, and Stop lets it go', async () => {
    const w = await harness();
    w.agent.enqueueFor(
      'SendStreamingMessage',
      script([
        { event: 'task' },
        { event: 'input-required', parts: [{ data: APPROVAL }] },
        { event: 'task' },
      ]),
    );
    const { thread } = await start(w, 'clean up');
    await w.waitForThread(thread.id, (t) => t.messages.some((m) => m.kind === 'approval'), 'the approval');
    await w.engine.idle();
    const typed = await w.api('POST', `/api/threads/${thread.id}/messages`, { text: 'and also the logs' });
    expect(typed.status, typed.text).toBe(202);
    const waiting = await w.waitForThread(thread.id, (t) => t.activity !== null, 'the activity');
    expect(waiting.activity).toMatchObject({ state: 'queued', behind: 'approval' });
    const { activityText, offersStop } = await import('../../../src/surfaces/webchat/page/activity.js');
    expect(activityText(waiting.activity as NonNullable<typeof waiting.activity>)).toMatch(
      /^Waiting to be sent: the agent waits for the tool approval above to be decided \(or Stop\)/,
    );
    expect(offersStop(waiting.activity)).toBe(true);
    // Stop cancels the task that asked; the message then goes to the agent as a turn of its own.
    w.agent.enqueueFor('SendStreamingMessage', resumed('Here are the logs.'));
    const stop = await w.api('POST', `/api/threads/${thread.id}/cancel`, {});
    expect(stop.status, stop.text).toBe(200);
    const done = await w.waitForThread(
      thread.id,
      (t) =>
        t.messages.some((m) => m.kind === 'answer' && m.final === true && m.text === 'Here are the logs.'),
      'the typed message answered',
    );
    expect(done.messages.find((m) => m.kind === 'approval')?.approval?.status).not.toBe('open');
    expect(w.answered).toHaveLength(0);
  });

  it('takes a stop: nothing running is said so, an unknown thread is a 404', async () => {
    const w = await harness();
    const { thread } = await start(w, 'hello there');
    await w.waitForThread(thread.id, (t) => finalAnswer(t) && t.activity === null, 'the final answer');
    await w.engine.idle();
    const stop = await w.api('POST', `/api/threads/${thread.id}/cancel`, {});
    expect(stop.status, stop.text).toBe(200);
    expect(stop.json).toEqual({ status: 'nothing-running' });
    expect([...w.agent.rpc('CancelTask'), ...w.agent.rpc('tasks/cancel')]).toEqual([]);
    const unknown = await w.api('POST', '/api/threads/t-nope/cancel', {});
    expect(unknown.status).toBe(404);
    expect(errorOf(unknown.json).code).toBe('thread_not_found');
  });

  it('refuses bad input with a 400 that says what is wrong', async () => {
    const w = await harness({ bodyLimitBytes: 2_048 });
    const cases: Array<[unknown, string]> = [
      [{ binding: BINDING }, 'text: must be a string'],
      [{ binding: BINDING, text: '   ' }, 'text: must not be blank'],
      [{ binding: BINDING, text: 'hi', extra: 1 }, 'Unrecognized key: "extra"'],
      [{ text: 'hi' }, 'binding: must be a string naming a Binding (namespace/name)'],
      [[1, 2], 'expected object, received array'],
    ];
    for (const [body, message] of cases) {
      const res = await w.api('POST', '/api/threads', body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(errorOf(res.json).code).toBe('invalid_request');
      expect(errorOf(res.json).message.toLowerCase()).toContain(message.toLowerCase());
    }
    const notJson = await w.call('POST', '/api/threads', {
      raw: '{"binding":',
      headers: { 'content-type': 'application/json' },
    });
    expect([notJson.status, errorOf(notJson.json).code]).toEqual([400, 'invalid_json']);
    const form = await w.call('POST', '/api/threads', {
      raw: 'binding=x',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect([form.status, errorOf(form.json).code]).toEqual([415, 'unsupported_media_type']);
    const big = await w.api('POST', '/api/threads', { binding: BINDING, text: 'x'.repeat(5_000) });
    expect([big.status, errorOf(big.json).code]).toEqual([413, 'body_too_large']);
    const noBinding = await w.api('POST', '/api/threads', { binding: 'team-z/none', text: 'hi' });
    expect([noBinding.status, errorOf(noBinding.json).code]).toEqual([404, 'binding_not_found']);
    const noThread = await w.api('GET', '/api/threads/t-nope');
    expect([noThread.status, errorOf(noThread.json).code]).toEqual([404, 'thread_not_found']);
    const wrongMethod = await w.api('DELETE', '/api/threads');
    expect(wrongMethod.status).toBe(405);
    const answerBoth = await w.api('POST', '/api/threads', { binding: BINDING, text: 'hi' });
    const { thread, message } = answerBoth.json as { thread: ThreadSummary; message: MessageView };
    const both = await w.api('POST', `/api/threads/${thread.id}/messages/${message.id}/answer`, {
      text: 'a',
      answers: [['b']],
    });
    expect(errorOf(both.json).message).toBe('give exactly one of text, answers or decisions');
    const notPrompt = await w.api('POST', `/api/threads/${thread.id}/messages/${message.id}/answer`, {
      text: 'a',
    });
    expect([notPrompt.status, errorOf(notPrompt.json).code]).toEqual([400, 'not_a_prompt']);
  });
});

/** A web chat whose engine is never reached: for tests of its listener alone. */
function noEngine() {
  return {
    engine: {
      receive: () => Promise.reject(new Error('unused')),
      cancel: () => Promise.reject(new Error('unused')),
      answer: () => Promise.reject(new Error('unused')),
      findSession: () => Promise.resolve(undefined),
    },
    surface: new WebChatSurface(),
    registry: { list: () => [], get: () => undefined },
  };
}

describe('web chat access', () => {
  it('needs the bearer token on every API call when one is configured, not for the page', async () => {
    const w = await harness({ token: TOKEN });
    const none = await w.call('GET', '/api/bindings');
    expect([none.status, errorOf(none.json).code]).toEqual([401, 'unauthorized']);
    expect(none.headers['www-authenticate']).toContain('Bearer');
    const wrong = await w.call('GET', '/api/bindings', {
      headers: { authorization: 'Bearer not-the-token' },
    });
    expect(wrong.status).toBe(401);
    const post = await w.call('POST', '/api/threads', {
      body: { binding: BINDING, text: 'hi' },
      headers: { origin: w.origin },
    });
    expect(post.status).toBe(401);
    const events = await w.call('GET', '/api/threads/t-x/events');
    expect(events.status).toBe(401);
    expect((await w.api('GET', '/api/bindings')).status).toBe(200);
    const { thread } = await start(w, 'with a token');
    const stream = await w.follow(thread.id);
    await w.waitForThread(thread.id, finalAnswer, 'the answer');
    stream.close();
    expect(stream.events[0]?.event).toBe('snapshot');
    // The page itself holds no secret; it asks for the token (docs/webchat.md, "Access").
    const page = await w.call('GET', '/');
    expect(page.status).toBe(200);
    expect(page.headers['content-security-policy']).toContain("script-src 'self'");
    expect((await w.call('GET', '/app.js')).status).toBe(200);
  });

  it('refuses state-changing requests from another origin (CSRF)', async () => {
    const w = await harness();
    const body = { binding: BINDING, text: 'from elsewhere' };
    const evil = await w.call('POST', '/api/threads', { body, headers: { origin: 'http://evil.example' } });
    expect([evil.status, errorOf(evil.json).code]).toEqual([403, 'cross_origin']);
    const nullOrigin = await w.call('POST', '/api/threads', { body, headers: { origin: 'null' } });
    expect(nullOrigin.status).toBe(403);
    const site = await w.call('POST', '/api/threads', { body, headers: { 'sec-fetch-site': 'cross-site' } });
    expect(site.status).toBe(403);
    expect(w.surface.threads.list()).toHaveLength(0);
    const same = await w.call('POST', '/api/threads', {
      body,
      headers: { origin: w.origin, 'sec-fetch-site': 'same-origin' },
    });
    expect(same.status).toBe(201);
    // Scripts send no Origin: they are not a CSRF vector and may call the API.
    const script = await w.call('POST', '/api/threads', { body });
    expect(script.status).toBe(201);
  });

  it('answers only to its loopback name (DNS rebinding)', async () => {
    const w = await harness();
    const port = new URL(w.origin).port;
    const rebound = await w.call('GET', '/api/bindings', { headers: { host: `evil.example:${port}` } });
    expect([rebound.status, errorOf(rebound.json).code]).toEqual([403, 'host_not_allowed']);
    const local = await w.call('GET', '/api/bindings', { headers: { host: `localhost:${port}` } });
    expect(local.status).toBe(200);
    // Through a tunnel (kubectl port-forward 9000:<port>) the browser names the tunnel's port.
    const tunnelled = await w.call('GET', '/api/bindings', { headers: { host: 'localhost:9000' } });
    expect(tunnelled.status).toBe(200);
    const v6 = await w.call('GET', '/api/bindings', { headers: { host: '[::1]:9000' } });
    expect(v6.status).toBe(200);
    const reboundElsewhere = await w.call('GET', '/api/bindings', { headers: { host: 'evil.example:9000' } });
    expect(reboundElsewhere.status).toBe(403);
    const prefixed = await w.call('GET', '/api/bindings', { headers: { host: 'localhost.evil.example' } });
    expect(prefixed.status).toBe(403);
  });

  it('keeps /healthz, /readyz and /metrics behind the token off loopback, open on loopback', async () => {
    const operations = (req: { url?: string }, res: import('node:http').ServerResponse): boolean => {
      if (req.url !== '/metrics' && req.url !== '/healthz' && req.url !== '/readyz') return false;
      res
        .writeHead(200, { 'content-type': 'text/plain' })
        .end('agentkourier_turns_total{binding="team-a/x"} 1\n');
      return true;
    };
    const base = {
      ...noEngine(),
      port: 0,
      token: TOKEN,
      operations,
      pageScript: async () => '',
      logger: createLogger({ level: 'silent' }),
    };
    const wide = await createWebChat({ ...base, host: '0.0.0.0' });
    const narrow = await createWebChat({ ...base, host: '127.0.0.1' });
    try {
      const widePort = new URL(wide.url).port;
      for (const path of ['/metrics', '/healthz', '/readyz']) {
        const none = await fetch(`http://127.0.0.1:${widePort}${path}`);
        expect([path, none.status]).toEqual([path, 401]);
        expect(await none.text()).not.toContain('team-a');
        const wrong = await fetch(`http://127.0.0.1:${widePort}${path}`, {
          headers: { authorization: 'Bearer not-the-token-at-all' },
        });
        expect(wrong.status).toBe(401);
        const right = await fetch(`http://127.0.0.1:${widePort}${path}`, {
          headers: { authorization: `Bearer ${TOKEN}` },
        });
        expect([path, right.status]).toEqual([path, 200]);
      }
      // On loopback nothing else can reach them: a probe or a scrape needs no token.
      const open = await fetch(`${narrow.url.replace(/\/$/, '')}/metrics`);
      expect(open.status).toBe(200);
    } finally {
      await wide.close();
      await narrow.close();
    }
  });

  it('will not listen beyond loopback without a token', async () => {
    const options = {
      ...noEngine(),
      host: '0.0.0.0',
      port: 0,
      logger: createLogger({ level: 'silent' }),
    };
    await expect(createWebChat(options)).rejects.toThrow(InvalidConfigError);
    await expect(createWebChat({ ...options, host: '127.0.0.1', token: 'short' })).rejects.toMatchObject({
      code: 'invalid_config',
    });
  });
});
