import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { buildPageScript } from '../../scripts/build-webchat.js';
import { type RunningController, startController } from '../../src/app/controller.js';
import { startPostgres, type TestPostgres } from '../../testkit/postgres.js';
import { goAvailable, startCluster, type TestCluster } from '../k8s/apiserver.js';
import { Cluster, capturingLogger, eventually } from '../k8s/cluster-helpers.js';
import { type SdkAgent, startSdkAgent } from '../peers/js-sdk-agent.js';

const HAS_GO = goAvailable();
const TOKEN = 'webchat-token-for-the-cluster-test';
const BINDING = 'team-a/try-me';

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

const message = z
  .object({
    id: z.string(),
    author: z.string(),
    kind: z.string(),
    text: z.string(),
    final: z.boolean().optional(),
    question: z.object({ status: z.string() }).loose().optional(),
  })
  .loose();
const thread = z.object({ id: z.string(), binding: z.string(), messages: z.array(message) }).loose();

/** The web chat's API, as the page or curl calls it, with or without the token. */
function api(port: number, token: string | undefined) {
  return async (method: string, path: string, body?: unknown): Promise<{ status: number; json: unknown }> => {
    const res = await fetch(`http://127.0.0.1:${port}${path}`, {
      method,
      headers: {
        ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: res.status, json: await res.json() };
  };
}

// `agentkourier controller` with the web chat on (AGENTKOURIER_WEBCHAT_PORT and _TOKEN): a
// Binding applied to a real kube-apiserver is offered in the web chat by its namespace/name, a
// message through the web chat's HTTP API (with the token) gets the agent's answer, a question
// is answered there, and after a restart on the same store the thread is still there. On SQLite
// and on PostgreSQL, the two stores the web chat keeps its threads in.
describe.skipIf(!HAS_GO)(
  'the web chat in the controller, on a real kube-apiserver (skipped only without Go, which builds kube-apiserver)',
  () => {
    let cluster: TestCluster;
    let k8s: Cluster;
    let agent: SdkAgent;
    let postgres: TestPostgres;
    let dir: string;

    beforeAll(async () => {
      cluster = await startCluster();
      k8s = new Cluster(cluster.kubeConfig);
      await k8s.applyCrds();
      for (const ns of ['team-a', 'agentkourier-system']) await k8s.namespace(ns);
      [agent, postgres] = await Promise.all([startSdkAgent({ legacyCompat: false }), startPostgres()]);
      dir = await mkdtemp(join(tmpdir(), 'ak-webchat-'));
      await k8s.create('agentbackends', 'team-a', 'sdk-agent', { dialect: 'a2a', url: agent.endpoint });
      await k8s.create('bindings', 'team-a', 'try-me', {
        backendRef: { name: 'sdk-agent' },
        identity: { userId: 'platform-engineer' },
        slack: { channels: ['C0TRYME01'] },
      });
    }, 300_000);

    afterAll(async () => {
      await agent?.close();
      await postgres?.stop();
      await cluster?.stop();
      if (dir !== undefined) await rm(dir, { recursive: true, force: true });
    });

    describe.each([
      ['SQLite', () => `sqlite:${join(dir, 'state.db')}`],
      ['PostgreSQL', () => postgres.connectionString],
    ])('on %s', (_store, storeUrl) => {
      let controller: RunningController | undefined;
      let env: Record<string, string>;
      /** Every log line and printed line of the controllers started here. */
      const output: string[][] = [];

      const start = async (): Promise<RunningController> => {
        const { logger, lines } = capturingLogger();
        output.push(lines);
        controller = await startController({
          env,
          out: (line) => lines.push(line),
          logger,
          kubeConfig: cluster.kubeConfig,
          webchatPageScript: buildPageScript,
        });
        return controller;
      };

      beforeAll(async () => {
        env = {
          AGENTKOURIER_NAMESPACE: 'agentkourier-system',
          POD_NAME: 'agentkourier-0',
          AGENTKOURIER_STORE: storeUrl(),
          AGENTKOURIER_HTTP_PORT: String(await freePort()),
          AGENTKOURIER_METRICS_PORT: String(await freePort()),
          AGENTKOURIER_WEBCHAT_PORT: String(await freePort()),
          AGENTKOURIER_WEBCHAT_TOKEN: TOKEN,
          LOG_LEVEL: 'debug',
        };
      });

      afterAll(async () => {
        await controller?.stop();
      });

      it('offers the Binding by namespace/name, answers through the API with the token, 401 without', async () => {
        const running = await start();
        expect(running.webchatPort).toBe(Number(env.AGENTKOURIER_WEBCHAT_PORT));
        const port = running.webchatPort ?? 0;
        const call = api(port, TOKEN);

        // Without the token, or with another, nothing of the chat is shown or started.
        for (const token of [undefined, 'not-the-token-of-this-chat']) {
          const refused = await api(port, token)('GET', '/api/bindings');
          expect(refused.status).toBe(401);
          const post = await api(port, token)('POST', '/api/threads', { binding: BINDING, text: 'hi' });
          expect(post.status).toBe(401);
        }
        // The page itself holds no secret (it asks for the token): it is served without one.
        expect((await fetch(`http://127.0.0.1:${port}/`)).status).toBe(200);

        // The Binding is offered once the controller has its live client.
        await eventually(async () => {
          const { json } = await call('GET', '/api/bindings');
          const refs = z.object({ bindings: z.array(z.object({ ref: z.string() })) }).parse(json);
          if (!refs.bindings.some((b) => b.ref === BINDING))
            throw new Error(`not offered yet: ${JSON.stringify(json)}`);
        }, 30_000);

        const created = await call('POST', '/api/threads', {
          binding: BINDING,
          text: 'hello from the cluster',
        });
        expect(created.status).toBe(201);
        const id = z.object({ thread: z.object({ id: z.string() }) }).parse(created.json).thread.id;
        const answered = await eventually(async () => {
          const view = thread.parse((await call('GET', `/api/threads/${id}`)).json);
          const answer = view.messages.find((m) => m.kind === 'answer' && m.final === true);
          if (answer === undefined) throw new Error(`no final answer yet: ${JSON.stringify(view.messages)}`);
          return answer;
        }, 20_000);
        expect(answered.text).toBe('chunk 0 chunk 1 chunk 2 ');
        const sent = agent.requests.filter((r) => r.method === 'SendStreamingMessage').at(-1);
        expect(sent?.headers['x-user-id']).toBe('platform-engineer');

        // The agent asks; the question is answered in the web chat, and the agent takes it.
        expect((await call('POST', `/api/threads/${id}/messages`, { text: 'ask' })).status).toBe(202);
        const question = await eventually(async () => {
          const view = thread.parse((await call('GET', `/api/threads/${id}`)).json);
          const q = view.messages.find((m) => m.kind === 'question' && m.question?.status === 'open');
          if (q === undefined) throw new Error('no open question yet');
          return q;
        }, 20_000);
        expect(question.text).toContain('What is your name?');
        const reply = await call('POST', `/api/threads/${id}/messages/${question.id}/answer`, {
          text: 'Ada',
        });
        expect(reply.status).toBe(202);
        await eventually(async () => {
          const view = thread.parse((await call('GET', `/api/threads/${id}`)).json);
          if (!view.messages.some((m) => m.kind === 'answer' && m.text === 'hello Ada' && m.final === true))
            throw new Error('no answer to the question yet');
        }, 20_000);
      });

      it('keeps the thread in the store: after a restart it is listed with its messages', async () => {
        const beforeRestart = api(controller?.webchatPort ?? 0, TOKEN);
        const list = z.object({ threads: z.array(z.object({ id: z.string(), binding: z.string() })) });
        const threads = list.parse((await beforeRestart('GET', '/api/threads')).json).threads;
        expect(threads.map((t) => t.binding)).toEqual([BINDING]);
        const id = threads[0]?.id ?? '';
        const shown = thread
          .parse((await beforeRestart('GET', `/api/threads/${id}`)).json)
          .messages.map((m) => m.text);

        await controller?.stop();
        const running = await start();
        const afterRestart = api(running.webchatPort ?? 0, TOKEN);
        const restored = thread.parse((await afterRestart('GET', `/api/threads/${id}`)).json);
        expect(restored.binding).toBe(BINDING);
        expect(restored.messages.map((m) => m.text)).toEqual(shown);
        expect(shown).toContain('hello Ada');
        // Debug logs included, the token never appears in what the controller wrote.
        const written = output.flat().join('\n');
        expect(written).toContain('web chat listening');
        expect(written).toContain('the web chat at http://127.0.0.1:');
        expect(written).not.toContain(TOKEN);
      });
    });
  },
);
