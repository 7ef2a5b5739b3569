import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { buildPageScript } from '../../scripts/build-webchat.js';
import { type RunningLocal, startLocal } from '../../src/app/local.js';
import { KAGENT_HITL_EXTENSION } from '../../src/dialects/index.js';
import { createLogger } from '../../src/observability/logging.js';
import { type FakeSlack, startFakeSlack } from '../../testkit/slack/index.js';
import {
  freePort,
  parseExposition,
  prometheusMissing,
  promtool,
  type RunningPrometheus,
  type Sample,
  sampleValue,
  startPrometheus,
} from '../observability/prometheus.js';
import {
  answer,
  type ContractAgent,
  dropAfter,
  httpStatus,
  kagentApproval,
  rpcError,
  script,
  startContractAgent,
} from '../peers/contract-agent/contract-agent.js';
import { mentionEvent, sendSlackEvent } from '../slack/events.js';

/**
 * The broker's observability seen from outside, through the real composition root (local mode):
 * scripted turns — a success, a failure with a category, a 401, a busy agent, a dropped stream,
 * a question, an approval, a Slack 429 — then /metrics read with exact counts, checked by
 * `promtool check metrics`, scraped by a real Prometheus and read back with PromQL; the
 * dashboard's and alert rules' metrics found in that scrape; the logs one line per turn, with
 * the test Secret's value nowhere in them.
 */

const SIGNING_SECRET = 'obs-signing-secret-0123456789';
const CHANNEL = 'C0OBSERVE';
/** The test Secret's value: the bearer token of the a2a Binding. It must reach no log line. */
const AGENT_TOKEN = 'tok-obs-7f3a9c-SECRET-never-logged';
const A2A = 'default/agents';
const KAGENT = 'default/helper';
/** A Binding with a webhook trigger; its token, like the agent's, must reach no log line. */
const ALERTS = 'default/alerts';
const HOOK_TOKEN = 'hook-obs-4d1e2b-SECRET-never-logged';
const TOOLS = [
  { id: 'adk-conf-1', callId: 'call_a', name: 'add_numbers', args: { a: 2, b: 3 } },
  { id: 'adk-conf-2', callId: 'call_b', name: 'check_status', args: { service: 'api' } },
];

const CHART_FILES = fileURLToPath(new URL('../../charts/agentkourier/files/', import.meta.url));

interface MessageView {
  id: string;
  kind: string;
  author: string;
  final?: boolean;
}

describe.skipIf(prometheusMissing !== undefined)(
  `observability: metrics, Prometheus, dashboard and alerts, logs${prometheusMissing === undefined ? '' : ` (skipped: ${prometheusMissing})`}`,
  () => {
    let dir: string;
    let agent: ContractAgent;
    let kagent: ContractAgent;
    let slack: FakeSlack;
    let local: RunningLocal;
    let slackPort: number;
    const logLines: string[] = [];
    let scrape = '';
    let samples: Sample[] = [];

    const base = (): string => local.url.replace(/\/$/, '');

    async function api(
      method: string,
      path: string,
      body?: unknown,
    ): Promise<{ status: number; json: unknown }> {
      const res = await fetch(`${base()}${path}`, {
        method,
        headers: { 'content-type': 'application/json', origin: base() },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      return { status: res.status, json: await res.json() };
    }

    async function metricsText(): Promise<string> {
      const res = await fetch(`${base()}/metrics`);
      expect(res.status).toBe(200);
      return res.text();
    }

    async function settledTurns(): Promise<number> {
      return parseExposition(await metricsText())
        .filter((s) => s.name === 'agentkourier_turns_settled_total')
        .reduce((sum, s) => sum + s.value, 0);
    }

    async function until(what: string, check: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
      const deadline = Date.now() + timeoutMs;
      while (!(await check())) {
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    }

    /** Sends one web chat message in a new thread and waits until `settled` turns have settled. */
    async function turn(binding: string, text: string, settled: number): Promise<string> {
      const created = await api('POST', '/api/threads', { binding, text });
      expect(created.status).toBe(201);
      await until(`${settled} settled turns`, async () => (await settledTurns()) >= settled);
      return (created.json as { thread: { id: string } }).thread.id;
    }

    async function prompt(thread: string, kind: 'question' | 'approval'): Promise<string> {
      let id: string | undefined;
      await until(`the ${kind}`, async () => {
        const read = await api('GET', `/api/threads/${thread}`);
        id = (read.json as { messages: MessageView[] }).messages.find((m) => m.kind === kind)?.id;
        return id !== undefined;
      });
      return id ?? '';
    }

    beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), 'ak-observability-'));
      agent = await startContractAgent({ version: '1.0' });
      kagent = await startContractAgent({
        version: '1.0',
        path: '/agents/demo/helper',
        card: { extensions: [{ uri: KAGENT_HITL_EXTENSION }] },
      });
      slack = await startFakeSlack();
      slack.addUser({ id: 'U0ADA', name: 'ada', realName: 'Ada', email: 'ada@example.com' });
      const config = join(dir, 'bindings.yaml');
      await writeFile(
        config,
        `apiVersion: v1
kind: Secret
metadata: {name: agent-token}
stringData: {token: ${AGENT_TOKEN}}
---
apiVersion: agentkourier.dev/v1alpha1
kind: AgentBackend
metadata: {name: agents}
spec: {dialect: a2a, url: "${agent.endpoint}"}
---
apiVersion: agentkourier.dev/v1alpha1
kind: Binding
metadata: {name: agents}
spec:
  backendRef: {name: agents}
  identity: {tokenSecretRef: {name: agent-token, key: token}}
  slack: {channels: [${CHANNEL}]}
---
apiVersion: agentkourier.dev/v1alpha1
kind: AgentBackend
metadata: {name: kagent}
spec: {dialect: kagent-v1, url: "${kagent.origin}"}
---
apiVersion: agentkourier.dev/v1alpha1
kind: Binding
metadata: {name: helper}
spec:
  backendRef: {name: kagent}
  agent: {namespace: demo, name: helper}
  identity: {userId: obs-test}
  interactions: {toolApprovals: {enabled: true}}
---
apiVersion: v1
kind: Secret
metadata: {name: hook-token}
stringData: {token: ${HOOK_TOKEN}}
---
apiVersion: agentkourier.dev/v1alpha1
kind: Binding
metadata: {name: alerts}
spec:
  backendRef: {name: agents}
  identity: {userId: obs-test}
  triggers:
    - {name: hook, kind: webhook, instruction: Look into it., tokenSecretRef: {name: hook-token, key: token}}
`,
      );
      const sink = new Writable({
        write(chunk: Buffer, _enc, done) {
          logLines.push(
            ...chunk
              .toString('utf8')
              .split('\n')
              .filter((l) => l !== ''),
          );
          done();
        },
      });
      slackPort = await freePort();
      local = await startLocal({
        config,
        host: '127.0.0.1',
        port: 0,
        demo: false,
        env: {
          AGENTKOURIER_STORE: `sqlite:${join(dir, 'state.db')}`,
          AGENTKOURIER_HTTP_PORT: String(slackPort),
          SLACK_BOT_TOKEN: 'xoxb-test',
          SLACK_SIGNING_SECRET: SIGNING_SECRET,
          SLACK_API_URL: slack.url,
        },
        out: () => undefined,
        pageScript: buildPageScript,
        // The broker's own logger (its redaction), as JSON at debug: every line is checked.
        logger: createLogger({ level: 'debug', destination: sink }),
      });

      // 1. A success.
      await turn(A2A, 'hello', 1);
      // 2. A failure with a category (E-10: rate limit, read from the status text).
      agent.enqueueFor(
        'SendStreamingMessage',
        answer({ state: 'failed', statusText: 'Rate limit exceeded' }),
      );
      await turn(A2A, 'fail please', 2);
      // 3. HTTP 401: the credentials are rejected (E-1).
      agent.enqueueFor('SendStreamingMessage', httpStatus(401));
      await turn(A2A, 'who am I', 3);
      // 4. Busy once (E-3), then answered after the backoff.
      agent.enqueueFor('SendStreamingMessage', rpcError(-32004, 'busy'));
      await turn(A2A, 'when you can', 4);
      // 5. The stream drops after two events; the task is followed to its end.
      agent.enqueueFor('SendStreamingMessage', dropAfter(2));
      await turn(A2A, 'a long one', 5);
      // 6. A question (Q-2), answered in the web chat; the answer is a turn of its own.
      agent.enqueueFor(
        'SendStreamingMessage',
        answer({ state: 'input-required', statusText: 'Which region?' }),
      );
      const asked = await turn(A2A, 'deploy it', 6);
      agent.enqueueFor(
        'SendStreamingMessage',
        script([
          { event: 'working' },
          { event: 'chunk', text: 'deployed to eu-west' },
          { event: 'completed' },
        ]),
      );
      const question = await prompt(asked, 'question');
      expect(
        (await api('POST', `/api/threads/${asked}/messages/${question}/answer`, { text: 'eu-west' })).status,
      ).toBe(202);
      await until('the answer turn', async () => (await settledTurns()) >= 7);
      // 7. A tool approval (Q-5) on the kagent-v1 Binding, approved in the web chat.
      kagent.enqueueFor('SendStreamingMessage', kagentApproval(TOOLS));
      const approvalThread = await turn(KAGENT, 'add and check', 8);
      const approval = await prompt(approvalThread, 'approval');
      const decided = await api('POST', `/api/threads/${approvalThread}/messages/${approval}/answer`, {
        decisions: TOOLS.map((t) => ({ id: t.id, approved: true })),
      });
      expect(decided.status).toBe(202);
      await until('the approved turn', async () => (await settledTurns()) >= 9);
      // 8. A Slack thread whose answer stream Slack first refuses with 429 (Retry-After 1 s).
      slack.rateLimitNext('chat.startStream', 1);
      const root = slack.postUserMessage({
        channel: CHANNEL,
        user: 'U0ADA',
        text: '<@U0BOT> hello from Slack',
      });
      const sent = await sendSlackEvent(
        `http://127.0.0.1:${slackPort}/slack/events`,
        SIGNING_SECRET,
        mentionEvent({ channel: CHANNEL, user: 'U0ADA', text: '<@U0BOT> hello from Slack', ts: root.ts }),
      );
      expect(sent.status).toBe(200);
      await until('the Slack turn', async () => (await settledTurns()) >= 10);
      await until('the Slack answer shown', async () =>
        slack
          .messages(CHANNEL, root.ts)
          .some((m) => m.user !== 'U0ADA' && m.text.includes('hello from Slack')),
      );
      // 9. A webhook trigger: a delivery that opens a thread (one trigger turn), its repeat, and
      // one with the wrong token.
      const hook = (token: string) =>
        fetch(`${base()}/triggers/default/alerts/hook`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
          body: JSON.stringify({ title: 'Queue backlog', fields: { queue: 'orders' }, dedupeKey: 'orders' }),
        });
      expect((await hook(HOOK_TOKEN)).status).toBe(200);
      expect((await hook(HOOK_TOKEN)).status).toBe(200);
      expect((await hook('wrong-token')).status).toBe(401);
      await until('the trigger turn', async () => (await settledTurns()) >= 11);
      scrape = await metricsText();
      samples = parseExposition(scrape);
    }, 120_000);

    afterAll(async () => {
      await local?.stop();
      await slack?.close();
      await agent?.close();
      await kagent?.close();
      if (dir !== undefined) await rm(dir, { recursive: true, force: true });
    });

    it('counts the scripted turns exactly, by Binding, outcome and code', () => {
      const settled = (binding: string, outcome: string, code = ''): number =>
        sampleValue(samples, 'agentkourier_turns_settled_total', { binding, outcome, code });
      // a2a: hello, busy-then-answered, dropped-then-followed, the answer to the question, Slack.
      expect(settled(A2A, 'completed')).toBe(5);
      expect(settled(A2A, 'failed', 'rate_limit')).toBe(1);
      expect(settled(A2A, 'error', 'credentials_rejected')).toBe(1);
      expect(settled(A2A, 'input-required')).toBe(1);
      expect(settled(KAGENT, 'input-required')).toBe(1);
      expect(settled(KAGENT, 'completed')).toBe(1);
      expect(settled(ALERTS, 'completed')).toBe(1);
      expect(samples.filter((s) => s.name === 'agentkourier_turns_settled_total')).toHaveLength(7);
      // The trigger: one thread and one turn for two deliveries of the same group, a 401 counted.
      const delivered = (result: string): number =>
        sampleValue(samples, 'agentkourier_trigger_deliveries_total', {
          binding: ALERTS,
          kind: 'webhook',
          result,
        });
      expect([delivered('opened'), delivered('duplicate'), delivered('unauthorized')]).toEqual([1, 1, 1]);
      expect(
        sampleValue(samples, 'agentkourier_trigger_threads_opened_total', {
          binding: ALERTS,
          kind: 'webhook',
        }),
      ).toBe(1);
      expect(
        sampleValue(samples, 'agentkourier_turns_received_total', { binding: ALERTS, kind: 'trigger' }),
      ).toBe(1);
      expect(sampleValue(samples, 'agentkourier_trigger_throttled_total', { binding: ALERTS })).toBe(0);
      // The reply to the text question is a message turn too (a text question takes the next reply).
      expect(
        sampleValue(samples, 'agentkourier_turns_received_total', { binding: A2A, kind: 'message' }),
      ).toBe(8);
      expect(
        sampleValue(samples, 'agentkourier_turns_received_total', { binding: A2A, kind: 'answer' }),
      ).toBe(0);
      expect(
        sampleValue(samples, 'agentkourier_turns_received_total', { binding: KAGENT, kind: 'message' }),
      ).toBe(1);
      expect(
        sampleValue(samples, 'agentkourier_turns_received_total', { binding: KAGENT, kind: 'answer' }),
      ).toBe(1);
      expect(
        sampleValue(samples, 'agentkourier_turn_duration_seconds_count', {
          binding: A2A,
          outcome: 'completed',
        }),
      ).toBe(5);
      // E-1, E-3, the drop.
      expect(sampleValue(samples, 'agentkourier_credential_rejections_total', { binding: A2A })).toBe(1);
      expect(sampleValue(samples, 'agentkourier_busy_backoffs_total', { binding: A2A })).toBe(1);
      expect(sampleValue(samples, 'agentkourier_stream_drops_total', { binding: A2A })).toBe(1);
      expect(sampleValue(samples, 'agentkourier_resubscribes_total', { binding: A2A })).toBe(1);
      expect(sampleValue(samples, 'agentkourier_polls_total', { binding: A2A })).toBe(0);
      // Questions and approvals.
      expect(sampleValue(samples, 'agentkourier_questions_asked_total', { binding: A2A, kind: 'text' })).toBe(
        1,
      );
      expect(
        sampleValue(samples, 'agentkourier_questions_asked_total', { binding: KAGENT, kind: 'approval' }),
      ).toBe(1);
      expect(sampleValue(samples, 'agentkourier_questions_answered_total', { binding: A2A })).toBe(1);
      expect(
        sampleValue(samples, 'agentkourier_approval_decisions_total', {
          binding: KAGENT,
          decision: 'approved',
          surface: 'webchat',
        }),
      ).toBe(2);
      // Slack: the 429 and what it asked to wait.
      expect(
        sampleValue(samples, 'agentkourier_slack_rate_limited_total', { method: 'chat.startStream' }),
      ).toBe(1);
      expect(
        sampleValue(samples, 'agentkourier_slack_rate_limit_wait_seconds_total', {
          method: 'chat.startStream',
        }),
      ).toBe(1);
      expect(
        sampleValue(samples, 'agentkourier_slack_api_calls_total', {
          method: 'chat.startStream',
          result: 'rate_limited',
        }),
      ).toBe(1);
      expect(
        sampleValue(samples, 'agentkourier_slack_api_calls_total', { method: 'auth.test', result: 'ok' }),
      ).toBe(1);
      // Agent calls by method and outcome: the 401 send, and every card read accepted.
      expect(
        sampleValue(samples, 'agentkourier_agent_calls_total', {
          binding: A2A,
          method: 'SendStreamingMessage',
          outcome: 'credentials_rejected',
        }),
      ).toBe(1);
      expect(
        sampleValue(samples, 'agentkourier_card_fetches_total', { binding: A2A, result: 'ok' }),
      ).toBeGreaterThanOrEqual(1);
      expect(sampleValue(samples, 'agentkourier_leader')).toBe(1);
      expect(sampleValue(samples, 'agentkourier_active_sessions')).toBe(0);
      // Each message opens its session and adds its turn in one write; an answer to a
      // question adds its turn to the session it is in.
      expect(
        sampleValue(samples, 'agentkourier_store_operations_total', {
          operation: 'openSessionAndAddTurn',
          result: 'ok',
        }),
      ).toBe(10);
      expect(
        sampleValue(samples, 'agentkourier_store_operations_total', { operation: 'addTurn', result: 'ok' }),
      ).toBe(1);
      expect(
        sampleValue(samples, 'agentkourier_store_operations_total', {
          operation: 'recordDelivery',
          result: 'ok',
        }),
      ).toBe(2);
    });

    it('labels no series with a thread, user, task or message id, a token or a URL', () => {
      for (const s of samples) {
        for (const [label, value] of Object.entries(s.labels)) {
          if (label === 'le') continue; // a histogram's bucket bound
          expect(['thread', 'user', 'task', 'message', 'session', 'url', 'endpoint']).not.toContain(label);
          expect(value).not.toContain(AGENT_TOKEN);
          expect(value).not.toContain(HOOK_TOKEN);
          expect(value).not.toMatch(/https?:\/\//);
          expect(value).not.toMatch(/^\d+\.\d+$/); // a Slack ts
        }
        expect(s.name.startsWith('agentkourier_') || /^(process|nodejs)_/.test(s.name)).toBe(true);
      }
    });

    it('passes promtool check metrics', async () => {
      const result = await promtool(['check', 'metrics'], scrape);
      expect(result.stderr + result.stdout).toBe('');
      expect(result.code).toBe(0);
    });

    it('is scraped by a real Prometheus, and PromQL reads back the same counts', async () => {
      const url = new URL(local.url);
      let prometheus: RunningPrometheus | undefined;
      try {
        prometheus = await startPrometheus({ target: url.host });
        const p = prometheus;
        let result: Awaited<ReturnType<RunningPrometheus['query']>> = [];
        await until(
          'a scrape',
          async () => {
            result = await p.query('sum by (binding, outcome, code) (agentkourier_turns_settled_total)');
            return result.length > 0;
          },
          30_000,
        );
        const [target] = await p.targets();
        expect(target).toMatchObject({ health: 'up', lastError: '' });
        const byKey = new Map(
          result.map((r) => [`${r.metric.binding} ${r.metric.outcome} ${r.metric.code ?? ''}`, r.value]),
        );
        expect(byKey.get(`${A2A} completed `)).toBe(5);
        expect(byKey.get(`${A2A} failed rate_limit`)).toBe(1);
        expect(byKey.get(`${A2A} error credentials_rejected`)).toBe(1);
        expect(byKey.get(`${KAGENT} completed `)).toBe(1);
        const rejected = await p.query(`agentkourier_credential_rejections_total{binding="${A2A}"}`);
        expect(rejected.map((r) => r.value)).toEqual([1]);
        const throttled = await p.query('sum(agentkourier_slack_rate_limited_total)');
        expect(throttled.map((r) => r.value)).toEqual([1]);
        const up = await p.query('up{job="agentkourier"}');
        expect(up.map((r) => r.value)).toEqual([1]);
      } finally {
        await prometheus?.stop();
      }
    });

    it('ships alert rules promtool accepts, and every metric a rule or a dashboard panel reads is in the scrape', async () => {
      const rulesFile = join(CHART_FILES, 'prometheus-rules.yaml');
      const checked = await promtool(['check', 'rules', rulesFile]);
      expect(checked.stdout + checked.stderr).toContain('SUCCESS');
      expect(checked.code).toBe(0);
      const rules = parseYaml(await readFile(rulesFile, 'utf8')) as {
        groups: Array<{ rules: Array<{ alert?: string; expr: string }> }>;
      };
      const alerts = rules.groups.flatMap((g) => g.rules.map((r) => r.alert));
      for (const wanted of [
        'AgentKourierTurnFailureRate',
        'AgentKourierCredentialRejections',
        'AgentKourierSlackRateLimited',
        'AgentKourierNoLeader',
        'AgentKourierStoreSlow',
      ]) {
        expect(alerts).toContain(wanted);
      }
      const dashboard = JSON.parse(await readFile(join(CHART_FILES, 'grafana-dashboard.json'), 'utf8')) as {
        panels: Array<{ title: string; targets?: Array<{ expr: string }> }>;
      };
      const exprs = [
        ...rules.groups.flatMap((g) => g.rules.map((r) => r.expr)),
        ...dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr)),
      ];
      expect(dashboard.panels.length).toBeGreaterThanOrEqual(10);
      // A metric is in the scrape when its family is exported (# TYPE), whether or not one of its
      // series has a sample yet (a counter with labels has none until it counts once).
      const families = new Map(
        [...scrape.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => [m[1] ?? '', m[2] ?? '']),
      );
      const familyOf = (name: string): string => {
        const base = name.replace(/_(bucket|sum|count)$/, '');
        return families.get(base) === 'histogram' ? base : name;
      };
      const used = new Set(
        exprs.flatMap(
          (e) => e.match(/\b(agentkourier_[a-z0-9_]+|process_[a-z0-9_]+|nodejs_[a-z0-9_]+)/g) ?? [],
        ),
      );
      expect(used.size).toBeGreaterThanOrEqual(25);
      for (const name of used)
        expect(families.has(familyOf(name)), `${name} is used but not scraped`).toBe(true);
      // Every agentkourier_ family is shown somewhere (a metric nobody looks at is noise).
      const shown = new Set([...used].map(familyOf));
      for (const family of families.keys()) {
        if (family.startsWith('agentkourier_')) expect(shown, `${family} is on no panel`).toContain(family);
      }
    });

    it('logs one line per settled turn, a warning with the category per failure, and never the Secret', () => {
      const lines = logLines.map((l) => JSON.parse(l) as Record<string, unknown>);
      const settled = lines.filter((l) => l.msg === 'turn settled');
      const failed = lines.filter((l) => l.msg === 'turn failed');
      expect(settled).toHaveLength(9);
      expect(failed.map((l) => [l.level, l.binding, l.outcome, l.category])).toEqual([
        [40, A2A, 'failed', 'rate limit'],
        [40, A2A, 'error:credentials_rejected', 'credentials_rejected'],
      ]);
      for (const l of [...settled, ...failed]) {
        expect(Object.keys(l)).toEqual(
          expect.arrayContaining(['binding', 'session', 'turn', 'task', 'outcome', 'durationMs']),
        );
        expect(typeof l.durationMs).toBe('number');
      }
      // No message text at info: what people and the agent wrote stays out of the lines.
      for (const l of lines.filter((x) => (x.level as number) >= 30)) {
        const text = JSON.stringify(l);
        for (const said of [
          'fail please',
          'who am I',
          'deploy it',
          'eu-west',
          'hello from Slack',
          'Rate limit exceeded',
        ])
          expect(text).not.toContain(said);
      }
      expect(logLines.join('\n')).not.toContain(AGENT_TOKEN);
      expect(logLines.join('\n')).not.toContain(HOOK_TOKEN);
      expect(logLines.join('\n')).not.toContain('xoxb-test');
      expect(logLines.join('\n')).not.toContain(SIGNING_SECRET);
    });
  },
);
