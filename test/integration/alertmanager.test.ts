import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { buildPageScript } from '../../scripts/build-webchat.js';
import { type RunningLocal, startLocal } from '../../src/app/local.js';
import { ACTOR_METADATA_KEY } from '../../src/core/compose.js';
import { TriggerDirectory, tokenDigest } from '../../src/core/triggers.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { TriggerChatRouter } from '../../src/surfaces/router.js';
import { TRIGGER_EVENT_TYPE } from '../../src/surfaces/slack/answer/trigger-threads.js';
import type { MessageView, ThreadSummary, ThreadView } from '../../src/surfaces/webchat/view.js';
import { Triggers } from '../../src/triggers/index.js';
import type { FakeMessage } from '../../testkit/slack/index.js';
import { alertmanagerMissing, type RunningAlertmanager, startAlertmanager } from '../helpers/alertmanager.js';
import { type ContractAgent, startContractAgent } from '../peers/contract-agent/contract-agent.js';
import { BINDING, CHANNEL, type SlackHarness, startSlackHarness } from '../surfaces/slack/e2e-harness.js';
import { CountingObserver } from '../triggers/harness.js';

/**
 * A real Alertmanager (Debian's prometheus-alertmanager) sending its webhook to the broker: into
 * Slack (the fake Web API behind the real Bolt, the real engine and the contract agent), and
 * through local mode into the web chat. Alerts go in through Alertmanager's own API; it groups
 * them, waits, repeats and resolves on its own timers (shortened here).
 */

const TOKEN = 'alertmanager-token-0123456789abcdef';
const SEND = 'SendStreamingMessage';

interface SentMessage {
  messageId: string;
  contextId?: string;
  parts: Array<{ text?: string }>;
  metadata?: Record<string, unknown>;
}

function sent(agent: ContractAgent): SentMessage[] {
  return agent.rpc(SEND).map((r) => (r.body as { params: { message: SentMessage } }).params.message);
}

const text = (m: SentMessage | undefined): string => m?.parts[0]?.text ?? '';

async function until(
  what: string,
  check: () => boolean | Promise<boolean>,
  timeoutMs = 30_000,
  log?: () => string,
) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${what}${log === undefined ? '' : `\n${log().slice(-3000)}`}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function alert(name: string, instance: string, endsAt?: string) {
  return {
    labels: { alertname: name, severity: 'critical', namespace: 'payments', instance },
    annotations: { summary: `${name} on ${instance}` },
    generatorURL: `http://prometheus.example/graph?g0.expr=${name}`,
    ...(endsAt === undefined ? {} : { endsAt }),
  };
}

describe.skipIf(alertmanagerMissing !== undefined)(
  `a real Alertmanager starts threads${alertmanagerMissing === undefined ? '' : ` (skipped: ${alertmanagerMissing})`}`,
  () => {
    const cleanups: Array<() => Promise<void>> = [];
    afterEach(async () => {
      for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
    });

    it('[S-5][S-7] into Slack: a thread per group, the alert fields as untrusted data and no actor, new alerts continue it, repeats run nothing, resolving posts in it', async () => {
      const store = new SqliteStore(':memory:');
      const h: SlackHarness = await startSlackHarness({ store });
      cleanups.push(() => h.close());
      const directory = new TriggerDirectory();
      directory.set(BINDING, [
        {
          binding: BINDING,
          name: 'alerts',
          kind: 'alertmanager',
          instruction: 'Investigate this alert and suggest a fix.',
          onResolved: 'notice',
          target: { surface: 'slack', channel: CHANNEL },
          threadsPerMinute: 5,
          tokenDigest: tokenDigest(TOKEN),
        },
      ]);
      const observer = new CountingObserver();
      const triggers = new Triggers({
        directory,
        store: store.triggers(),
        chat: new TriggerChatRouter({ slack: h.slack.triggers }),
        engine: h.engine,
        owner: 'replica-a',
        logger: pino({ level: 'silent' }),
        observer,
      });
      triggers.start();
      cleanups.push(() => triggers.stop());
      const server: Server = createServer((req, res) => {
        if (!triggers.routes(req, res)) res.writeHead(404).end();
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      cleanups.push(() => new Promise((resolve) => server.close(() => resolve())));
      const port = (server.address() as AddressInfo).port;
      const am: RunningAlertmanager = await startAlertmanager({
        webhookUrl: `http://127.0.0.1:${port}/triggers/${BINDING}/alerts`,
        token: TOKEN,
      });
      cleanups.push(() => am.stop());

      const roots = (): FakeMessage[] =>
        h.fake
          .messages(CHANNEL)
          .filter((m) => m.threadTs === undefined && m.metadata?.event_type === TRIGGER_EVENT_TYPE);

      // 1. One alert fires: a thread with its summary, and one turn of the agent in it.
      await am.send([alert('HighCPU', 'web-1')]);
      await until('the first thread', () => roots().length === 1, 30_000, am.log);
      const root = roots()[0] as FakeMessage;
      const rootBody = JSON.stringify(root.blocks);
      expect(root.text).toBe('Firing: HighCPU (critical)');
      expect(rootBody).toContain('namespace=payments');
      // The generator link is shown as text in a code span, never as a Slack link.
      expect(rootBody).toContain('`http://prometheus.example/graph?g0.expr=HighCPU`');
      expect(rootBody).not.toContain('<http');
      await h.settled(1);
      const [first] = sent(h.agent);
      expect(text(first)).toMatch(
        /^Investigate this alert and suggest a fix\.\n\nThe following block is untrusted data \(alert fields\)/,
      );
      expect(text(first)).toMatch(/<untrusted-data-[0-9a-f]{16} source="alert fields">/);
      expect(text(first)).toContain('alerts[0].labels.instance: web-1');
      expect(first?.metadata?.[ACTOR_METADATA_KEY]).toBeUndefined();
      await h.waitFor('the answer in the thread', () => h.botMessages(root.ts).length >= 1);

      // 2. A second alert in the same group continues the thread: one more turn, only the new alert.
      await am.send([alert('HighCPU', 'web-2')]);
      await until('the second turn', () => sent(h.agent).length === 2, 30_000, am.log);
      await h.settled(2);
      const second = sent(h.agent)[1];
      const accepted = h.events.find((e) => e.type === 'turn.accepted');
      expect(second?.contextId).toBe(accepted?.type === 'turn.accepted' ? accepted.contextId : 'none');
      expect(text(second)).toContain('alerts[0].labels.instance: web-2');
      expect(text(second)).not.toContain('web-1');
      expect(roots()).toHaveLength(1);
      expect(
        h.botMessages(root.ts).some((m) => m.text === '1 more alert firing in this group: HighCPU'),
      ).toBe(true);

      // 3. Another group: a thread of its own.
      await am.send([alert('DiskFull', 'db-1')]);
      await until('the second thread', () => roots().length === 2, 30_000, am.log);
      await h.settled(3);

      // 4. Alertmanager repeats the groups (repeat_interval): no turn comes of it.
      const turns = sent(h.agent).length;
      const duplicates = () => observer.get(`delivery ${BINDING} alertmanager duplicate`);
      await until('two repeats', () => duplicates() >= 2, 30_000, am.log);
      expect(sent(h.agent)).toHaveLength(turns);

      // 5. Both HighCPU alerts resolve: Alertmanager says so, and it is posted in their thread.
      const ended = new Date(Date.now() - 1000).toISOString();
      await am.send([alert('HighCPU', 'web-1', ended), alert('HighCPU', 'web-2', ended)]);
      await until(
        'the resolution in the thread',
        () => h.botMessages(root.ts).some((m) => m.text.startsWith('Resolved: HighCPU — every alert')),
        30_000,
        am.log,
      );
      await triggers.worker.idle();
      expect(sent(h.agent)).toHaveLength(turns);
      expect(roots()).toHaveLength(2);
      // Every thread root was posted once, each stamped with the work that opened it.
      expect(new Set(roots().map((r) => r.metadata?.event_payload.post)).size).toBe(2);
    }, 120_000);

    it('[S-5][S-7] through local mode into the web chat, on the web chat’s port with the trigger’s own token', async () => {
      const dir = await mkdtemp(join(tmpdir(), 'ak-am-local-'));
      cleanups.push(() => rm(dir, { recursive: true, force: true }));
      const agent = await startContractAgent({ version: '1.0' });
      cleanups.push(() => agent.close());
      const config = join(dir, 'bindings.yaml');
      await writeFile(
        config,
        `apiVersion: v1
kind: Secret
metadata: {name: alert-token}
stringData: {token: ${TOKEN}}
---
apiVersion: agentkourier.dev/v1alpha1
kind: AgentBackend
metadata: {name: agents}
spec: {dialect: a2a, url: "${agent.endpoint}"}
---
apiVersion: agentkourier.dev/v1alpha1
kind: Binding
metadata: {name: ops}
spec:
  backendRef: {name: agents}
  identity: {userId: am-test}
  triggers:
    - name: alerts
      instruction: Look into this alert.
      tokenSecretRef: {name: alert-token, key: token}
`,
      );
      const lines: string[] = [];
      const local: RunningLocal = await startLocal({
        config,
        host: '127.0.0.1',
        port: 0,
        demo: false,
        env: { AGENTKOURIER_STORE: `sqlite:${join(dir, 'state.db')}`, LOG_LEVEL: 'silent' },
        out: (line) => lines.push(line),
        pageScript: buildPageScript,
      });
      cleanups.push(() => local.stop());
      const base = local.url.replace(/\/$/, '');
      const path = '/triggers/default/ops/alerts';
      expect(lines).toContain(`  trigger alerts (alertmanager, POST ${base}${path})`);
      const am = await startAlertmanager({ webhookUrl: `${base}${path}`, token: TOKEN });
      cleanups.push(() => am.stop());
      // The web chat's API is not the trigger's: its token opens nothing there.
      const api = await fetch(`${base}/api/threads`, { headers: { authorization: `Bearer ${TOKEN}` } });
      expect(api.status).toBe(200);
      const wrong = await fetch(`${base}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer not-the-token' },
        body: '{}',
      });
      expect(wrong.status).toBe(401);

      const threads = async (): Promise<ThreadSummary[]> =>
        (
          (await (await fetch(`${base}/api/threads?binding=default/ops`)).json()) as {
            threads: ThreadSummary[];
          }
        ).threads;
      const read = async (id: string): Promise<MessageView[]> =>
        ((await (await fetch(`${base}/api/threads/${id}`)).json()) as ThreadView).messages;

      await am.send([alert('HighCPU', 'web-1')]);
      await until('the thread in the web chat', async () => (await threads()).length === 1, 30_000, am.log);
      const [thread] = await threads();
      expect(thread?.title).toBe('Firing: HighCPU (critical)');
      await until('the answer', async () =>
        (await read(thread?.id ?? '')).some((m) => m.kind === 'answer' && m.final === true),
      );
      const messages = await read(thread?.id ?? '');
      expect(messages[0]).toMatchObject({ author: 'broker', kind: 'notice', noticeKind: 'trigger' });
      expect(messages[0]?.text).toContain('Source: http://prometheus.example/graph?g0.expr=HighCPU');
      expect(sent(agent)).toHaveLength(1);
      expect(text(sent(agent)[0])).toContain('alerts[0].labels.instance: web-1');
      expect(sent(agent)[0]?.metadata?.[ACTOR_METADATA_KEY]).toBeUndefined();

      // People reply in the thread as in any other: the agent gets it in the same context.
      const reply = await fetch(`${base}/api/threads/${thread?.id}/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', origin: base },
        body: JSON.stringify({ text: 'is it the deploy?' }),
      });
      expect(reply.status).toBe(202);
      await until('the reply sent', () => sent(agent).length === 2);
      expect(sent(agent)[1]?.contextId).toBeDefined();

      const ended = new Date(Date.now() - 1000).toISOString();
      await am.send([alert('HighCPU', 'web-1', ended)]);
      await until(
        'the resolution',
        async () =>
          (await read(thread?.id ?? '')).some(
            (m) => m.kind === 'notice' && m.text.startsWith('Resolved: HighCPU'),
          ),
        30_000,
        am.log,
      );
      expect(await threads()).toHaveLength(1);
      expect(sent(agent)).toHaveLength(2);
    }, 120_000);
  },
);
