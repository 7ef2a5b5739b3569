import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, describe, expect, it } from 'vitest';
import { buildPageScript } from '../../scripts/build-webchat.js';
import { type RunningLocal, startLocal } from '../../src/app/local.js';
import { type FakeSlack, startFakeSlack } from '../../testkit/slack/index.js';
import { capturingLogger, eventually } from '../k8s/cluster-helpers.js';
import { freePort } from '../k8s/processes.js';
import {
  type ContractAgent,
  type Step,
  script,
  startContractAgent,
} from '../peers/contract-agent/contract-agent.js';
import { mentionEvent, sendSlackEvent } from '../slack/events.js';

/**
 * Defect: the stop (SIGTERM) waited for the engine's drivers, and a driver posting an agent's
 * tool steps to Slack waited on the channel's rate budget, which only Slack's stop released —
 * and Slack stopped after the engine. With a backlog of tool cards the broker was still posting
 * 94 s after SIGTERM and needed SIGKILL, which hands no lease back. Now Slack's pending work is
 * abandoned when the stop begins: the writes in flight finish, the leases are handed back, and
 * the stop ends in seconds whatever the backlog.
 */

const SECRET = 'stop-backlog-signing-secret';
const CHANNEL = 'C0BACKLOG1';
const TOOL_STEPS = 300;
/** Well inside the chart's terminationGracePeriodSeconds (30). */
const STOP_WITHIN_MS = 10_000;

describe('SIGTERM while Slack work is throttled', () => {
  let slack: FakeSlack | undefined;
  let agent: ContractAgent | undefined;
  let running: RunningLocal | undefined;
  let dir: string | undefined;
  afterAll(async () => {
    await running?.stop();
    await agent?.close();
    await slack?.close();
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  it('stops within seconds with tool cards still waiting for the channel, and hands its leases back', async () => {
    slack = await startFakeSlack();
    slack.addUser({ id: 'U0ADA', name: 'ada', realName: 'Ada', email: 'ada@example.com' });
    agent = await startContractAgent({ version: '1.0' });
    const steps: Step[] = [{ event: 'task' }];
    for (let i = 0; i < TOOL_STEPS; i++)
      steps.push({
        event: 'working',
        parts: [{ data: { name: `tool_${i}`, args: { i } }, metadata: { adk_type: 'function_call' } }],
      });
    steps.push({ event: 'chunk', text: 'The answer.' }, { event: 'completed' }, { event: 'task' });
    agent.enqueueFor('SendStreamingMessage', script(steps));

    dir = await mkdtemp(join(tmpdir(), 'ak-stop-backlog-'));
    const config = join(dir, 'local.yaml');
    await writeFile(
      config,
      `apiVersion: agentkourier.dev/v1alpha1
kind: AgentBackend
metadata: { name: flood }
spec: { dialect: a2a, url: "${agent.endpoint}" }
---
apiVersion: agentkourier.dev/v1alpha1
kind: Binding
metadata: { name: flood }
spec:
  backendRef: { name: flood }
  identity: { userId: local-user }
  slack: { channels: [${CHANNEL}] }
`,
    );
    const slackPort = await freePort();
    const db = join(dir, 'state.db');
    running = await startLocal({
      config,
      host: '127.0.0.1',
      port: 0,
      demo: false,
      env: {
        AGENTKOURIER_STORE: `sqlite:${db}`,
        AGENTKOURIER_HTTP_PORT: String(slackPort),
        SLACK_BOT_TOKEN: slack.botToken,
        SLACK_SIGNING_SECRET: SECRET,
        SLACK_API_URL: slack.url,
      },
      out: () => undefined,
      pageScript: buildPageScript,
      logger: capturingLogger().logger,
    });

    const fake = slack;
    const root = fake.postUserMessage({ channel: CHANNEL, user: 'U0ADA', text: `<@${fake.botUserId}> go` });
    const sent = await sendSlackEvent(
      `http://127.0.0.1:${slackPort}/slack/events`,
      SECRET,
      mentionEvent({ channel: CHANNEL, user: 'U0ADA', text: 'go', ts: root.ts, botUserId: fake.botUserId }),
    );
    expect(sent.status).toBe(200);
    // The agent has sent every tool step; the thread shows them a few at a time, as the
    // channel's budget allows: most are still waiting.
    await eventually(() => expect(agent?.rpc('SendStreamingMessage')).toHaveLength(1), 20_000);
    await eventually(() => {
      const posted = fake.messages(CHANNEL, root.ts).filter((m) => m.user !== 'U0ADA').length;
      expect(posted).toBeGreaterThanOrEqual(3);
    }, 20_000);
    const postedBeforeStop = fake.messages(CHANNEL, root.ts).filter((m) => m.user !== 'U0ADA').length;
    expect(postedBeforeStop).toBeLessThan(TOOL_STEPS / 2);

    const stopping = Date.now();
    await (running as RunningLocal).stop();
    running = undefined;
    expect(Date.now() - stopping).toBeLessThan(STOP_WITHIN_MS);

    // No live lease is left for the next process to wait out, and the turn is there for it to
    // resume (accepted by the agent, not settled).
    const check = new DatabaseSync(db, { readOnly: true });
    try {
      const live = check.prepare('SELECT session_id FROM leases WHERE expires_at > ?').all(Date.now());
      expect(live).toEqual([]);
      const turns = check.prepare('SELECT state FROM turns').all() as Array<{ state: string }>;
      expect(turns.map((t) => t.state)).toEqual(['accepted']);
    } finally {
      check.close();
    }
  }, 120_000);
});
