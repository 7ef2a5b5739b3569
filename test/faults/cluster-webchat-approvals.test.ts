import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { buildPageScript } from '../../scripts/build-webchat.js';
import { type RunningController, startController } from '../../src/app/controller.js';
import { type DemoAgent, startDemoAgent } from '../../src/demo/demo-agent.js';
import { goAvailable, startCluster, type TestCluster } from '../k8s/apiserver.js';
import { Cluster, capturingLogger, eventually } from '../k8s/cluster-helpers.js';
import { freePort } from '../k8s/processes.js';

/**
 * The probe found that anyone holding the in-cluster web chat's token could approve tool calls
 * on every ready Binding, ignoring its approverGroups, as one anonymous actor, unaudited. The
 * web chat cannot tell who holds its token, so in a cluster it decides no approval of a Binding
 * whose approvals name approvers: the approval is shown read-only with why, a decision is
 * refused (403 approver_required), nothing reaches the agent and nothing is audited as decided.
 * The controller here runs against a real kube-apiserver, the demo agent (kagent-v1) asks.
 */

const HAS_GO = goAvailable();
const TOKEN = 'webchat-token-for-the-approvals-fault';
const GATED = 'team-a/gated';

const messages = z.object({
  messages: z.array(
    z
      .object({
        id: z.string(),
        author: z.string(),
        kind: z.string(),
        approval: z
          .object({
            status: z.string(),
            refusal: z.string().optional(),
            tools: z.array(z.object({ id: z.string() }).loose()),
          })
          .loose()
          .optional(),
      })
      .loose(),
  ),
});

describe.skipIf(!HAS_GO)(
  'the in-cluster web chat and tool approvals (skipped only without Go, which builds kube-apiserver)',
  () => {
    let cluster: TestCluster;
    let demo: DemoAgent;
    let dir: string;
    let controller: RunningController | undefined;
    const { logger, lines } = capturingLogger();

    beforeAll(async () => {
      [cluster, demo] = await Promise.all([startCluster(), startDemoAgent()]);
      const k8s = new Cluster(cluster.kubeConfig);
      await k8s.applyCrds();
      for (const ns of ['team-a', 'agentkourier-system']) await k8s.namespace(ns);
      dir = await mkdtemp(join(tmpdir(), 'ak-webchat-approvals-'));
      await k8s.create('agentbackends', 'team-a', 'demo', { dialect: 'kagent-v1', url: demo.url });
      await k8s.create('bindings', 'team-a', 'gated', {
        backendRef: { name: 'demo' },
        agent: { namespace: 'demo', name: 'assistant' },
        identity: { userId: 'platform-engineer' },
        slack: { channels: ['C0GATED01'] },
        interactions: { toolApprovals: { enabled: true, approverGroups: ['S0APPROVERS'] } },
      });
      controller = await startController({
        env: {
          AGENTKOURIER_NAMESPACE: 'agentkourier-system',
          POD_NAME: 'agentkourier-0',
          AGENTKOURIER_STORE: `sqlite:${join(dir, 'state.db')}`,
          AGENTKOURIER_HTTP_PORT: String(await freePort()),
          AGENTKOURIER_METRICS_PORT: String(await freePort()),
          AGENTKOURIER_WEBCHAT_PORT: String(await freePort()),
          AGENTKOURIER_WEBCHAT_TOKEN: TOKEN,
        },
        out: (line) => lines.push(line),
        logger,
        kubeConfig: cluster.kubeConfig,
        webchatPageScript: buildPageScript,
      });
    }, 300_000);

    afterAll(async () => {
      await controller?.stop();
      await demo?.close();
      await cluster?.stop();
      if (dir !== undefined) await rm(dir, { recursive: true, force: true });
    });

    async function call(
      method: string,
      path: string,
      body?: unknown,
    ): Promise<{ status: number; json: unknown }> {
      const res = await fetch(`http://127.0.0.1:${controller?.webchatPort ?? 0}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${TOKEN}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      return { status: res.status, json: await res.json() };
    }

    it('[Q-5] shows the approval read-only, refuses a decision with 403, sends and audits nothing', async () => {
      await eventually(async () => {
        const { json } = await call('GET', '/api/bindings');
        if (!JSON.stringify(json).includes(GATED))
          throw new Error(`not offered yet: ${JSON.stringify(json)}`);
      }, 30_000);
      const created = await call('POST', '/api/threads', { binding: GATED, text: 'approve' });
      expect(created.status).toBe(201);
      const id = z.object({ thread: z.object({ id: z.string() }) }).parse(created.json).thread.id;
      const prompt = await eventually(async () => {
        const view = messages.parse((await call('GET', `/api/threads/${id}`)).json);
        const found = view.messages.find((m) => m.kind === 'approval');
        if (found?.approval === undefined) throw new Error('no approval yet');
        return { id: found.id, approval: found.approval };
      }, 20_000);
      expect(prompt.approval.status).toBe('open');
      expect(prompt.approval.refusal).toContain('approved in Slack');

      const decided = await call('POST', `/api/threads/${id}/messages/${prompt.id}/answer`, {
        decisions: prompt.approval.tools.map((t) => ({ id: t.id, approved: true })),
      });
      expect(decided.status).toBe(403);
      expect(decided.json).toMatchObject({ error: { code: 'approver_required' } });
      const after = messages.parse((await call('GET', `/api/threads/${id}`)).json);
      expect(after.messages.filter((m) => m.author === 'person')).toHaveLength(1);
      expect(after.messages.find((m) => m.id === prompt.id)?.approval?.status).toBe('open');
      expect(lines.filter((l) => l.includes('"audit":"tool-approval"'))).toEqual([]);
    });
  },
);
