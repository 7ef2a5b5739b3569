import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { buildPageScript } from '../../scripts/build-webchat.js';
import { type RunningLocal, startLocal } from '../../src/app/local.js';
import { createLogger } from '../../src/observability/logging.js';
import type { MessageView, ThreadSummary, ThreadView } from '../../src/surfaces/webchat/index.js';

/**
 * Defect: the web chat kept its threads in memory only, so after a restart the list was empty
 * although the sessions were in SQLite. Now each thread's messages (the person's and the agent's
 * answers as shown) are kept in the store and come back: this stops a real local broker (the
 * demo agent, the web chat's HTTP API) and starts another one on the same SQLite file.
 */
describe('local mode: web chat threads survive a restart', () => {
  let running: RunningLocal | undefined;
  let dir: string | undefined;
  afterEach(async () => {
    await running?.stop();
    running = undefined;
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  async function start(): Promise<string> {
    dir ??= await mkdtemp(join(tmpdir(), 'ak-restart-'));
    running = await startLocal({
      config: 'examples/local.yaml',
      host: '127.0.0.1',
      port: 0,
      demo: true,
      env: { AGENTKOURIER_STORE: `sqlite:${join(dir, 'state.db')}` },
      out: () => undefined,
      pageScript: buildPageScript,
      logger: createLogger({ level: 'silent' }),
    });
    return running.url;
  }

  async function post(url: string, path: string, body: unknown): Promise<Response> {
    return fetch(`${url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: url.replace(/\/$/, '') },
      body: JSON.stringify(body),
    });
  }

  async function read(url: string, id: string): Promise<ThreadView> {
    return (await (await fetch(`${url}api/threads/${id}`)).json()) as ThreadView;
  }

  /** Waits until the thread shows `count` final answers and the engine is done with it. */
  async function answered(url: string, id: string, count: number): Promise<ThreadView> {
    const deadline = Date.now() + 15_000;
    for (;;) {
      const view = await read(url, id);
      const finals = view.messages.filter((m) => m.kind === 'answer' && m.final === true).length;
      if (finals >= count && view.activity === null) return view;
      if (Date.now() > deadline) throw new Error(`no ${count} answers: ${JSON.stringify(view.messages)}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  const shown = (messages: MessageView[]) =>
    messages.map((m) => ({ seq: m.seq, author: m.author, kind: m.kind, text: m.text, final: m.final }));

  it('lists the threads again, with their messages and answers, and a restored thread goes on', async () => {
    let url = await start();
    const created = await post(url, 'api/threads', { binding: 'default/demo', text: 'hello from before' });
    expect(created.status).toBe(201);
    const { thread } = (await created.json()) as { thread: ThreadSummary };
    await answered(url, thread.id, 1);
    expect((await post(url, `api/threads/${thread.id}/messages`, { text: 'and a second one' })).status).toBe(
      202,
    );
    const before = await answered(url, thread.id, 2);
    expect(before.messages.filter((m) => m.author === 'person').map((m) => m.text)).toEqual([
      'hello from before',
      'and a second one',
    ]);

    await running?.stop();
    running = undefined;
    url = await start();

    const list = (await (await fetch(`${url}api/threads`)).json()) as { threads: ThreadSummary[] };
    expect(list.threads.map((t) => ({ id: t.id, binding: t.binding, title: t.title }))).toEqual([
      { id: thread.id, binding: 'default/demo', title: before.title },
    ]);
    const bindings = (await (await fetch(`${url}api/bindings`)).json()) as {
      bindings: Array<{ ref: string; threadCount: number; examples: string[]; ready: boolean }>;
    };
    // With the demo agent's example requests from its card, which the page offers.
    expect(bindings.bindings).toEqual([
      {
        ref: 'default/demo',
        threadCount: 1,
        examples: ['hello', 'ask me something', 'approve a deploy', 'fail please', 'a long answer'],
        ready: true,
      },
    ]);
    const after = await read(url, thread.id);
    expect(shown(after.messages)).toEqual(shown(before.messages));
    expect(after.createdAt).toBe(before.createdAt);

    // The restored thread takes a reply like any other, numbered on from its kept messages.
    expect(
      (await post(url, `api/threads/${thread.id}/messages`, { text: 'hello again, later' })).status,
    ).toBe(202);
    const goneOn = await answered(url, thread.id, 3);
    const last = goneOn.messages.at(-1);
    expect(last?.kind).toBe('answer');
    expect(last?.seq).toBeGreaterThan(before.messages.length + 1);
    expect(goneOn.messages.map((m) => m.id)).toEqual(goneOn.messages.map((m) => `m${m.seq}`));
  });

  it('an answer cut off by a stop in the middle ends settled after the restart, never streaming for ever', async () => {
    let url = await start();
    const created = await post(url, 'api/threads', { binding: 'default/demo', text: 'a long answer please' });
    const { thread } = (await created.json()) as { thread: ThreadSummary };
    // Part of the long answer is shown, still streaming; then the broker stops (Ctrl-C).
    const deadline = Date.now() + 15_000;
    for (;;) {
      const view = await read(url, thread.id);
      if (view.messages.some((m) => m.kind === 'answer' && m.final === false && m.text.length > 0)) break;
      if (Date.now() > deadline) throw new Error(`no streaming answer: ${JSON.stringify(view.messages)}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await running?.stop();
    running = undefined;
    url = await start();

    // Whatever became of the turn (the demo agent forgot its task with the restart), the answer
    // the page showed streaming is settled: no message is left streaming once the engine is done.
    const settleBy = Date.now() + 15_000;
    let view = await read(url, thread.id);
    while (view.activity !== null || view.messages.some((m) => m.kind === 'answer' && m.final !== true)) {
      if (Date.now() > settleBy) throw new Error(`still streaming: ${JSON.stringify(shown(view.messages))}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
      view = await read(url, thread.id);
    }
    expect(view.messages.filter((m) => m.kind === 'answer').every((m) => m.final === true)).toBe(true);
  });
});
