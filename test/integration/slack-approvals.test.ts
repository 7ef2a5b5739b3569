import { createHash } from 'node:crypto';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { loadSlackConfig } from '../../src/config/slack.js';
import type { ApprovalAudit } from '../../src/core/approval-audit.js';
import { notice } from '../../src/core/session/notices.js';
import { KAGENT_HITL_EXTENSION } from '../../src/dialects/kagent-v1/index.js';
import { BrokerMetrics } from '../../src/observability/metrics.js';
import { escapeSlack } from '../../src/surfaces/slack/answer/mrkdwn.js';
import { SlackConnection } from '../../src/surfaces/slack/connection.js';
import type { FakeMessage } from '../../testkit/slack/index.js';
import { kagentApproval, kagentAskUser } from '../peers/contract-agent/contract-agent.js';
import { blockActionsPayload, sendSlackInteraction } from '../slack/events.js';
import {
  ADA,
  BINDING,
  CHANNEL,
  type FoundButton,
  SECRET,
  type SlackHarness,
  type SlackHarnessOptions,
  startSlackHarness,
} from '../surfaces/slack/e2e-harness.js';

/**
 * Tool approvals and kagent's questions in Slack, end to end: the real Bolt app in HTTP mode,
 * the session engine on SQLite, the kagent-shaped contract agent speaking kagent's HITL
 * extension v1 (dialect `kagent-v1`), and the fake Slack Web API. Presses and modal submissions
 * are signed the way Slack signs them.
 */

const SEND = 'SendStreamingMessage';
const CANCEL = 'CancelTask';
const GROUP = 'S0APPROVERS';
const BOB = 'U0BOB';
const EVE = 'U0EVE';

const TWO_TOOLS = [
  { id: 'adk-conf-1', callId: 'call_a', name: 'add_numbers', args: { b: 3, a: 2 } },
  {
    id: 'adk-conf-2',
    callId: 'call_b',
    name: 'check_status',
    args: { service: 'api', note: '<!channel> *now*' },
  },
];

interface SentMessage {
  messageId: string;
  taskId?: string;
  parts: Array<{ text?: string }>;
  metadata?: Record<string, unknown>;
  extensions?: string[];
}

function sent(h: SlackHarness): SentMessage[] {
  return h.agent.rpc(SEND).map((r) => (r.body as { params: { message: SentMessage } }).params.message);
}

/** Answers sent to a paused task. */
function answers(h: SlackHarness): SentMessage[] {
  return sent(h).filter((m) => m.taskId !== undefined);
}

function blocksText(message: FakeMessage | undefined): string {
  return JSON.stringify(message?.blocks ?? []);
}

function hasActions(message: FakeMessage | undefined): boolean {
  return (message?.blocks ?? []).some((b) => (b as { type?: string }).type === 'actions');
}

/** Tool-step cards, prompts and notices are posted within Slack's per-channel rate; here it is lifted. */
const budgets: SlackHarnessOptions['budgets'] = {
  'chat.postMessage': { scope: 'channel', perMinute: 600, burst: 50 },
};

const approvalsOn: SlackHarnessOptions = {
  dialect: 'kagent-v1',
  toolApprovals: { enabled: true, approverGroups: [GROUP], approvers: [] },
  budgets,
};

describe('Slack approvals end to end: real Bolt, the engine, SQLite and a kagent-shaped agent', () => {
  const harnesses: SlackHarness[] = [];
  const extra: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const stop of extra.splice(0)) await stop();
    await Promise.all(harnesses.splice(0).map((h) => h.close()));
  });

  const counters = new Map<SlackHarness, BrokerMetrics>();

  async function harness(options: SlackHarnessOptions = approvalsOn): Promise<SlackHarness> {
    const metrics = new BrokerMetrics(new Registry(), { version: 'test' });
    const h = await startSlackHarness({
      ...options,
      approvals: { ...options.approvals, counters: metrics },
      events: metrics,
    });
    counters.set(h, metrics);
    harnesses.push(h);
    h.fake.addUser({ id: BOB, name: 'bob', realName: 'Bob Builder', email: 'bob@example.com' });
    h.fake.addUser({ id: EVE, name: 'eve', realName: 'Eve Outsider' });
    h.fake.addUserGroup(GROUP, [ADA, BOB]);
    return h;
  }

  /** The thread's prompt: the bot message whose blocks came from the approval view. */
  async function prompt(h: SlackHarness, threadTs: string): Promise<FakeMessage> {
    await h.waitFor('the prompt', () => h.botMessages(threadTs).some((m) => blocksText(m).includes('asks')));
    const found = h.botMessages(threadTs).find((m) => blocksText(m).includes('asks'));
    if (found === undefined) throw new Error('no prompt');
    return found;
  }

  function button(h: SlackHarness, ts: string, blockId: string, action: string): FoundButton {
    const found = h
      .buttons(CHANNEL, ts)
      .find((b) => b.blockId === blockId && b.actionId === `agentkourier.prompt.${action}`);
    if (found === undefined) throw new Error(`no ${action} button in ${blockId}`);
    return found;
  }

  /** A counter's value as the broker's /metrics shows it. */
  async function count(h: SlackHarness, name: string, labels: Record<string, string>): Promise<number> {
    const metric = counters.get(h)?.registry.getSingleMetric(name);
    const values = (await metric?.get())?.values ?? [];
    const found = values.find((v) => Object.entries(labels).every(([k, want]) => v.labels[k] === want));
    return found?.value ?? 0;
  }

  function ephemeralsTo(h: SlackHarness, user: string): string[] {
    return h.fake.ephemerals.filter((e) => e.user === user).map((e) => e.text);
  }

  function auditLines(h: SlackHarness): Array<Record<string, unknown>> {
    return h.logs.filter((l) => l.audit === 'tool-approval');
  }

  it('[Q-3][Q-5] a two-tool approval: one approved, one denied with a reason in a modal; only the approved tool runs, and the prompt shows who decided', async () => {
    const decisions: ApprovalAudit[] = [];
    const h = await harness(approvalsOn);
    h.approvalAudit.onDecision((a) => decisions.push(a));
    h.agent.enqueueFor(SEND, kagentApproval(TWO_TOOLS));
    const { ts } = await h.mention('add the numbers and check the api');
    const shown = await prompt(h, ts);

    // Exactly which tool runs with which arguments, verbatim in plain text (never mrkdwn).
    const sections = (shown.blocks ?? []).filter(
      (b) => (b as { type?: string }).type === 'section',
    ) as Array<{
      text: { type: string; text: string; emoji?: boolean };
    }>;
    const toolTexts = sections.map((s) => s.text).filter((t) => /^\d\. /.test(t.text));
    expect(toolTexts).toHaveLength(2);
    for (const t of toolTexts) expect(t).toMatchObject({ type: 'plain_text', emoji: false });
    expect(toolTexts[0]?.text).toBe(`1. add_numbers\n${JSON.stringify({ b: 3, a: 2 }, null, 2)}`);
    expect(toolTexts[1]?.text).toContain('"note": "<!channel> *now*"');
    expect(blocksText(shown)).toContain(`<!subteam^${GROUP}>`);
    // Buttons carry an opaque token only: no session, task, tool or question data.
    const all = h.buttons(CHANNEL, shown.ts);
    expect(all.map((b) => b.text)).toEqual([
      'Approve',
      'Deny…',
      'Approve',
      'Deny…',
      'Approve all',
      'Deny all…',
    ]);
    for (const b of all) {
      expect(b.value).toMatch(/^[A-Za-z0-9_-]{22}$/);
      for (const secret of ['adk-conf', 'add_numbers', 'check_status', ts, 'hitl', 'T0001'])
        expect(`${b.value} ${b.actionId} ${b.blockId}`).not.toContain(secret);
    }

    expect((await h.press({ ts: shown.ts }, button(h, shown.ts, 'tool.0', 'approve'), ADA)).status).toBe(200);
    await h.waitFor('the approval shown', () =>
      blocksText(h.fake.message(CHANNEL, shown.ts)).includes('Approved by'),
    );
    expect(answers(h)).toHaveLength(0); // collected until every call has a decision

    expect((await h.press({ ts: shown.ts }, button(h, shown.ts, 'tool.1', 'deny'), BOB)).status).toBe(200);
    await h.waitFor('the reason modal', () => h.fake.views.length === 1);
    const modal = h.fake.views[0]?.view ?? {};
    expect(modal.callback_id).toBe('agentkourier.deny');
    expect(JSON.stringify(modal)).toContain('Deny check_status?');
    const submitted = await h.submitView(modal, BOB, {
      reason: { reason: { type: 'plain_text_input', value: 'not during the freeze <!here>' } },
    });
    expect(submitted.status).toBe(200);

    await h.settled(2);
    expect(h.agent.kagent.ran.map((r) => r.name)).toEqual(['add_numbers']);
    expect(h.agent.kagent.denied).toEqual([
      expect.objectContaining({ name: 'check_status', reason: 'not during the freeze <!here>' }),
    ]);
    const [answer] = answers(h);
    expect(answer?.extensions).toEqual([KAGENT_HITL_EXTENSION]);
    expect(answer?.metadata?.[KAGENT_HITL_EXTENSION]).toEqual({
      type: 'tool_approval_response',
      approvals: [
        { id: 'adk-conf-1', approved: true },
        { id: 'adk-conf-2', approved: false, rejection_reason: 'not during the freeze <!here>' },
      ],
    });

    // The prompt: no buttons left, who decided what, the reason as plain text.
    const after = h.fake.message(CHANNEL, shown.ts);
    expect(hasActions(after)).toBe(false);
    const text = blocksText(after);
    expect(text).toContain(`Approved by <@${ADA}>`);
    expect(text).toContain(`Denied by <@${BOB}>`);
    expect(text).toContain(
      '"type":"plain_text","text":"Reason: not during the freeze <!here>","emoji":false',
    );
    expect(text).toContain('Decided; sent to the agent.');

    // Audited: one structured log line per decision, the metric, and the onDecision hook.
    const lines = auditLines(h);
    expect(lines).toHaveLength(2);
    const sha = (v: unknown): string => createHash('sha256').update(JSON.stringify(v)).digest('hex');
    expect(lines[0]).toMatchObject({
      msg: 'tool approval decision',
      binding: BINDING,
      approver: { id: ADA, name: 'ada' },
      tool: { id: 'adk-conf-1', callId: 'call_a', name: 'add_numbers' },
      argumentsSha256: sha({ a: 2, b: 3 }),
      decision: 'approved',
      allAtOnce: false,
    });
    expect(lines[0]).not.toHaveProperty('reason');
    expect(lines[1]).toMatchObject({
      approver: { id: BOB, name: 'bob', email: 'bob@example.com' },
      tool: { name: 'check_status' },
      argumentsSha256: sha({ note: '<!channel> *now*', service: 'api' }),
      decision: 'denied',
      reason: 'not during the freeze <!here>',
    });
    for (const line of lines) {
      expect(Date.parse(String(line.decidedAt))).not.toBeNaN();
      expect(line).not.toHaveProperty('args');
    }
    expect(decisions.map((d) => [d.tool.name, d.decision, d.approver.id])).toEqual([
      ['add_numbers', 'approved', ADA],
      ['check_status', 'denied', BOB],
    ]);
    const decided = { binding: BINDING, surface: 'slack' };
    expect(
      await count(h, 'agentkourier_approval_decisions_total', { ...decided, decision: 'approved' }),
    ).toBe(1);
    expect(await count(h, 'agentkourier_approval_decisions_total', { ...decided, decision: 'denied' })).toBe(
      1,
    );
    expect(await counters.get(h)?.registry.metrics()).toContain(
      `agentkourier_approval_decisions_total{binding="${BINDING}",decision="approved",surface="slack"} 1`,
    );
  });

  it('[Q-5] a press by someone outside the approver groups is refused ephemerally and changes nothing', async () => {
    const h = await harness();
    h.agent.enqueueFor(SEND, kagentApproval(TWO_TOOLS));
    const { ts } = await h.mention('go');
    const shown = await prompt(h, ts);
    const before = h.fake.message(CHANNEL, shown.ts);

    await h.press({ ts: shown.ts }, button(h, shown.ts, 'all', 'approve-all'), EVE);
    await h.press({ ts: shown.ts }, button(h, shown.ts, 'tool.1', 'deny'), EVE);
    await h.waitFor('two refusals', () => ephemeralsTo(h, EVE).length === 2);
    expect(ephemeralsTo(h, EVE)[0]).toBe(
      `Only members of <!subteam^${GROUP}> can approve or deny these tool calls. Your press changed nothing.`,
    );
    expect(h.fake.views).toHaveLength(0); // not even the reason modal
    const after = h.fake.message(CHANNEL, shown.ts);
    expect(after?.edits).toBe(before?.edits);
    expect(after?.blocks).toEqual(before?.blocks);
    expect(answers(h)).toHaveLength(0);
    expect(
      await count(h, 'agentkourier_approval_refusals_total', { binding: BINDING, reason: 'not-an-approver' }),
    ).toBe(2);
    expect(h.logs.filter((l) => l.audit === 'tool-approval-refused' && l.user === EVE)).toHaveLength(2);

    // The prompt still waits: an approver's press is taken.
    await h.press({ ts: shown.ts }, button(h, shown.ts, 'all', 'approve-all'), ADA);
    await h.settled(2);
    expect(h.agent.kagent.ran.map((r) => r.name)).toEqual(['add_numbers', 'check_status']);
  });

  it('[Q-5] approvers named one by one, with no user group (a free Slack workspace): the one named decides, no group is read, anyone else is refused', async () => {
    const h = await harness({
      ...approvalsOn,
      toolApprovals: { enabled: true, approverGroups: [], approvers: [BOB] },
    });
    h.agent.enqueueFor(SEND, kagentApproval(TWO_TOOLS));
    const { ts } = await h.mention('go');
    const shown = await prompt(h, ts);
    expect(blocksText(shown)).toContain(`Only <@${BOB}> can approve or deny.`);
    await h.press({ ts: shown.ts }, button(h, shown.ts, 'all', 'approve-all'), ADA);
    await h.waitFor('the refusal', () => ephemeralsTo(h, ADA).length === 1);
    expect(ephemeralsTo(h, ADA)[0]).toBe(
      `Only <@${BOB}> can approve or deny these tool calls. Your press changed nothing.`,
    );
    expect(answers(h)).toHaveLength(0);
    await h.press({ ts: shown.ts }, button(h, shown.ts, 'all', 'approve-all'), BOB);
    await h.settled(2);
    expect(h.agent.kagent.ran.map((r) => r.name)).toEqual(['add_numbers', 'check_status']);
    expect(auditLines(h).map((l) => (l.approver as { id: string }).id)).toEqual([BOB, BOB]);
    expect(h.fake.callsOf('usergroups.users.list')).toHaveLength(0);
  });

  it('[Q-5] when the approver group cannot be read, the press is refused, not allowed', async () => {
    const h = await harness();
    h.agent.enqueueFor(SEND, kagentApproval(TWO_TOOLS));
    const { ts } = await h.mention('go');
    const shown = await prompt(h, ts);
    h.fake.failNext('usergroups.users.list', 'internal_error');
    await h.press({ ts: shown.ts }, button(h, shown.ts, 'all', 'approve-all'), ADA);
    await h.waitFor('the refusal', () => ephemeralsTo(h, ADA).length === 1);
    expect(ephemeralsTo(h, ADA)[0]).toContain('could not check who may approve');
    expect(answers(h)).toHaveLength(0);
    expect(hasActions(h.fake.message(CHANNEL, shown.ts))).toBe(true);
    expect(
      await count(h, 'agentkourier_approval_refusals_total', { binding: BINDING, reason: 'lookup-failed' }),
    ).toBe(1);

    // A failure is not cached: once Slack answers, the member's press is taken.
    await h.press({ ts: shown.ts }, button(h, shown.ts, 'all', 'approve-all'), ADA);
    await h.settled(2);
    expect(answers(h)).toHaveLength(1);
  });

  it('[Q-5] a double click and two approvers racing produce one decision; the others are told who decided', async () => {
    const h = await harness();
    h.agent.enqueueFor(SEND, kagentApproval(TWO_TOOLS));
    const { ts } = await h.mention('go');
    const shown = await prompt(h, ts);
    const approveAll = button(h, shown.ts, 'all', 'approve-all');
    const denyFirst = button(h, shown.ts, 'tool.0', 'deny');
    await Promise.all([
      h.press({ ts: shown.ts }, approveAll, ADA),
      h.press({ ts: shown.ts }, approveAll, ADA),
      h.press({ ts: shown.ts }, approveAll, BOB),
      h.press({ ts: shown.ts }, denyFirst, BOB),
    ]);
    await h.settled(2);
    await h.waitFor('the losers told', () => h.fake.ephemerals.length === 3);
    expect(answers(h)).toHaveLength(1);
    const winner = auditLines(h)[0]?.approver as { id: string };
    expect(auditLines(h)).toHaveLength(2);
    expect(auditLines(h).every((l) => (l.approver as { id: string }).id === winner.id)).toBe(true);
    for (const e of h.fake.ephemerals) expect(e.text).toBe(`This was already decided by <@${winner.id}>.`);
    expect(h.fake.views).toHaveLength(0);
    expect(h.agent.kagent.ran).toHaveLength(2);
  });

  it('[Q-5] two replicas racing on one prompt: the store keeps the first answer, the other presser is told', async () => {
    const h = await harness();
    // A second broker process: its own Bolt app and prompt desk, on the same store and engine.
    const config = loadSlackConfig({
      SLACK_BOT_TOKEN: h.fake.botToken,
      SLACK_SIGNING_SECRET: SECRET,
      SLACK_API_URL: h.fake.url,
    });
    const { pino } = await import('pino');
    const other = await SlackConnection.connect({
      config,
      logger: pino({ level: 'silent' }),
      bindings: h.registry,
    });
    const { port } = await other.listen({
      inbound: h.engine,
      port: 0,
      host: '127.0.0.1',
    });
    extra.push(() => other.stop());
    const otherUrl = `http://127.0.0.1:${port ?? 0}/slack/events`;

    h.agent.enqueueFor(SEND, kagentApproval(TWO_TOOLS));
    const { ts } = await h.mention('go');
    const shown = await prompt(h, ts);
    const approveAll = button(h, shown.ts, 'all', 'approve-all');
    const stored = h.fake.message(CHANNEL, shown.ts);
    const payload = (user: string) =>
      blockActionsPayload({
        user,
        channel: CHANNEL,
        messageTs: shown.ts,
        threadTs: ts,
        actionId: approveAll.actionId,
        blockId: approveAll.blockId,
        value: approveAll.value,
        messageBlocks: stored?.blocks ?? [],
      });
    await Promise.all([
      sendSlackInteraction(h.appUrl, SECRET, payload(ADA)),
      sendSlackInteraction(otherUrl, SECRET, payload(BOB)),
    ]);
    await h.settled(2);
    await h.waitFor('the other presser told', () => h.fake.ephemerals.length === 1);
    expect(answers(h)).toHaveLength(1);
    expect(h.agent.kagent.ran).toHaveLength(2);
    const loser = h.fake.ephemerals[0];
    // The loser either saw the first answer (a duplicate) or found the question already gone.
    expect([
      `This was already decided by <@${loser?.user === ADA ? BOB : ADA}>.`,
      'This prompt is no longer waiting for an answer.',
    ]).toContain(loser?.text);
  });

  it('[Q-5] the buttons keep working across a restart: no mapping in memory, and a decision shown on the prompt is kept', async () => {
    const h1 = await harness();
    h1.agent.enqueueFor(SEND, kagentApproval(TWO_TOOLS));
    const { ts } = await h1.mention('go');
    const shown = await prompt(h1, ts);
    await h1.press({ ts: shown.ts }, button(h1, shown.ts, 'tool.0', 'deny'), ADA);
    await h1.waitFor('the reason modal', () => h1.fake.views.length === 1);
    await h1.submitView(h1.fake.views[0]?.view ?? {}, ADA, {
      reason: { reason: { type: 'plain_text_input', value: 'wrong numbers' } },
    });
    await h1.waitFor('the denial shown', () =>
      blocksText(h1.fake.message(CHANNEL, shown.ts)).includes('Denied by'),
    );
    harnesses.splice(harnesses.indexOf(h1), 1);
    await h1.close({ keepAgent: true, keepStore: true, keepFake: true });

    // A new process: same store, agent and Slack; nothing of the first one's memory.
    const h2 = await harness({ ...approvalsOn, store: h1.store, agent: h1.agent, fakeSlack: h1.fake });
    const rest = button(h2, shown.ts, 'all', 'approve-all');
    expect(rest.text).toBe('Approve the rest');
    await h2.press({ ts: shown.ts }, rest, BOB);
    await h2.waitFor('the answer', () => h2.agent.kagent.ran.length + h2.agent.kagent.denied.length === 2);
    expect(h2.agent.kagent.ran.map((r) => r.name)).toEqual(['check_status']);
    expect(h2.agent.kagent.denied).toEqual([
      expect.objectContaining({ name: 'add_numbers', reason: 'wrong numbers' }),
    ]);
    await h2.waitFor('the prompt decided', () => !hasActions(h2.fake.message(CHANNEL, shown.ts)));
    const text = blocksText(h2.fake.message(CHANNEL, shown.ts));
    expect(text).toContain(`Denied by <@${ADA}>`);
    expect(text).toContain(`Approved by <@${BOB}>`);
    expect(
      auditLines(h2).map((l) => [
        (l.tool as { name: string }).name,
        l.decision,
        (l.approver as { id: string }).id,
      ]),
    ).toEqual([
      ['add_numbers', 'denied', ADA],
      ['check_status', 'approved', BOB],
    ]);
  });

  it('[Q-5] an approval stored by the previous release (its dialect data only, no form) is drawn and answered after the upgrade', async () => {
    const h1 = await harness();
    h1.agent.enqueueFor(SEND, kagentApproval(TWO_TOOLS));
    const { ts } = await h1.mention('go');
    const shown = await prompt(h1, ts);
    harnesses.splice(harnesses.indexOf(h1), 1);
    await h1.close({ keepAgent: true, keepStore: true, keepFake: true });
    // The row as the previous release wrote it: kagent's request as the payload, no form.
    const sessionId = h1.events.find((e) => e.type === 'question.asked')?.sessionId ?? '';
    const session = await h1.store.getSession(sessionId);
    if (session?.question === null || session?.question === undefined) throw new Error('no question stored');
    const { form: _new, ...previous } = session.question;
    expect(_new?.kind).toBe('approval');
    await h1.store.commit({ session: { ...session, question: previous }, now: Date.now() });

    const h2 = await harness({ ...approvalsOn, store: h1.store, agent: h1.agent, fakeSlack: h1.fake });
    await h2.press({ ts: shown.ts }, button(h2, shown.ts, 'tool.0', 'approve'), ADA);
    await h2.waitFor('the first decision shown', () =>
      blocksText(h2.fake.message(CHANNEL, shown.ts)).includes('Approved by'),
    );
    await h2.press({ ts: shown.ts }, button(h2, shown.ts, 'all', 'approve-all'), BOB);
    await h2.waitFor('the answer', () => h2.agent.kagent.ran.length === 2);
    expect(h2.agent.kagent.ran.map((r) => r.name)).toEqual(['add_numbers', 'check_status']);
    expect(auditLines(h2).map((l) => (l.tool as { name: string }).name)).toEqual([
      'add_numbers',
      'check_status',
    ]);
  });

  it('[Q-5] Approve all decides every call with one press', async () => {
    const h = await harness();
    h.agent.enqueueFor(SEND, kagentApproval(TWO_TOOLS));
    const { ts } = await h.mention('go');
    const shown = await prompt(h, ts);
    await h.press({ ts: shown.ts }, button(h, shown.ts, 'all', 'approve-all'), BOB);
    await h.settled(2);
    expect(h.agent.kagent.ran.map((r) => r.name)).toEqual(['add_numbers', 'check_status']);
    expect(h.agent.kagent.denied).toEqual([]);
    const text = blocksText(h.fake.message(CHANNEL, shown.ts));
    expect(text.match(new RegExp(`Approved by <@${BOB}>`, 'g'))).toHaveLength(2);
    expect(hasActions(h.fake.message(CHANNEL, shown.ts))).toBe(false);
    expect(auditLines(h).map((l) => [l.decision, l.allAtOnce])).toEqual([
      ['approved', true],
      ['approved', true],
    ]);
    expect(
      await count(h, 'agentkourier_approval_decisions_total', { binding: BINDING, decision: 'approved' }),
    ).toBe(2);
  });

  it("[Q-5] a button of another thread's prompt pressed on this one decides nothing, and both prompts keep their buttons", async () => {
    const h = await harness();
    h.agent.enqueueFor(SEND, kagentApproval(TWO_TOOLS), kagentApproval(TWO_TOOLS));
    const first = await h.mention('first thread');
    const second = await h.mention('second thread');
    const a = await prompt(h, first.ts);
    const b = await prompt(h, second.ts);
    // The Approve all token of thread A's prompt, in a press on thread B's prompt message.
    const foreign = button(h, a.ts, 'all', 'approve-all');
    const stored = h.fake.message(CHANNEL, b.ts);
    const pressed = await sendSlackInteraction(
      h.appUrl,
      SECRET,
      blockActionsPayload({
        user: ADA,
        channel: CHANNEL,
        messageTs: b.ts,
        threadTs: second.ts,
        actionId: foreign.actionId,
        blockId: foreign.blockId,
        value: foreign.value,
        messageBlocks: stored?.blocks ?? [],
      }),
    );
    expect(pressed.status).toBe(200);
    await h.waitFor('the refusal', () => ephemeralsTo(h, ADA).length > 0);
    expect(ephemeralsTo(h, ADA)).toEqual([
      'That button is not one of this prompt’s, so it changed nothing. Use the buttons on the prompt itself.',
    ]);
    expect(hasActions(h.fake.message(CHANNEL, b.ts))).toBe(true);
    expect(hasActions(h.fake.message(CHANNEL, a.ts))).toBe(true);
    expect(answers(h)).toHaveLength(0);
    expect(auditLines(h)).toEqual([]);
    // Thread B's own button still decides it.
    await h.press({ ts: b.ts }, button(h, b.ts, 'all', 'approve-all'), ADA);
    await h.waitFor('the decision sent', () => answers(h).length === 1);
  });

  it('[Q-5] the agent session is suspended while the approval waits, processing again once decided, active at the end', async () => {
    const h = await harness();
    h.agent.enqueueFor(SEND, kagentApproval(TWO_TOOLS));
    const { ts } = await h.mention('go');
    const shown = await prompt(h, ts);
    await h.waitFor('suspended', () => h.fake.session(CHANNEL, ts)?.status === 'suspended');
    await h.press({ ts: shown.ts }, button(h, shown.ts, 'all', 'approve-all'), BOB);
    await h.settled(2);
    await h.slack.surface.statuses.idle();
    expect(h.fake.session(CHANNEL, ts)?.history.map((s) => s.status)).toEqual([
      'processing',
      'suspended',
      'processing',
      'active',
    ]);
  });

  it('[Q-5] Deny all asks one reason for every call, and nothing runs', async () => {
    const h = await harness();
    h.agent.enqueueFor(SEND, kagentApproval(TWO_TOOLS));
    const { ts } = await h.mention('go');
    const shown = await prompt(h, ts);
    await h.press({ ts: shown.ts }, button(h, shown.ts, 'all', 'deny-all'), ADA);
    await h.waitFor('the reason modal', () => h.fake.views.length === 1);
    await h.submitView(h.fake.views[0]?.view ?? {}, ADA, {
      reason: { reason: { type: 'plain_text_input', value: 'no' } },
    });
    await h.settled(2);
    expect(h.agent.kagent.ran).toEqual([]);
    expect(h.agent.kagent.denied.map((d) => [d.name, d.reason])).toEqual([
      ['add_numbers', 'no'],
      ['check_status', 'no'],
    ]);
  });

  it('[Q-3] an ask_user question with choices is answered with a button (anyone in the thread may answer)', async () => {
    const h = await harness();
    h.agent.enqueueFor(
      SEND,
      kagentAskUser([{ question: 'Which *environment*?', choices: ['staging', 'prod'] }]),
    );
    const { ts } = await h.mention('deploy');
    const shown = await prompt(h, ts);
    expect(h.buttons(CHANNEL, shown.ts).map((b) => b.text)).toEqual(['staging', 'prod', 'Answer in words…']);
    expect(blocksText(shown)).toContain('"type":"plain_text","text":"Which *environment*?","emoji":false');
    const prod = h.buttons(CHANNEL, shown.ts).find((b) => b.text === 'prod');
    if (prod === undefined) throw new Error('no prod button');
    await h.press({ ts: shown.ts }, prod, EVE);
    await h.settled(2);
    expect(h.agent.kagent.answers).toEqual([expect.objectContaining({ answers: [['prod']] })]);
    const text = blocksText(h.fake.message(CHANNEL, shown.ts));
    expect(text).toContain(`Answered by <@${EVE}>`);
    expect(hasActions(h.fake.message(CHANNEL, shown.ts))).toBe(false);
    expect(auditLines(h)).toHaveLength(0); // an answer, not an approval
  });

  it('[Q-3] an ask_user question is answered in words through the modal', async () => {
    const h = await harness();
    h.agent.enqueueFor(
      SEND,
      kagentAskUser([{ question: 'Why?' }, { question: 'Which?', choices: ['a', 'b'], multiple: true }]),
    );
    const { ts } = await h.mention('deploy');
    const shown = await prompt(h, ts);
    const words = h.buttons(CHANNEL, shown.ts).find((b) => b.text === 'Answer in words…');
    if (words === undefined) throw new Error('no answer button');
    await h.press({ ts: shown.ts }, words, ADA);
    await h.waitFor('the answer modal', () => h.fake.views.length === 1);
    const modal = h.fake.views[0]?.view ?? {};
    // An empty answer is refused in the modal itself.
    const empty = await h.submitView(modal, ADA, {});
    expect(JSON.parse(empty.body)).toMatchObject({ response_action: 'errors' });
    await h.submitView(modal, ADA, {
      'q0.text': { text: { type: 'plain_text_input', value: 'because' } },
      'q1.pick': {
        pick: { type: 'multi_static_select', selected_options: [{ value: '0' }, { value: '1' }] },
      },
      'q1.text': { text: { type: 'plain_text_input', value: null } },
    });
    await h.settled(2);
    expect(h.agent.kagent.answers).toEqual([expect.objectContaining({ answers: [['because'], ['a', 'b']] })]);
  });

  it('[Q-5][M-4] with approvals disabled on the Binding there are no buttons: the task is cancelled and the thread told', async () => {
    const h = await harness({
      dialect: 'kagent-v1',
      toolApprovals: { enabled: false, approverGroups: [GROUP], approvers: [] },
    });
    h.agent.enqueueFor(SEND, kagentApproval(TWO_TOOLS));
    const { ts } = await h.mention('go');
    await h.settled(1);
    await h.waitFor('the cancel', () => h.agent.rpc(CANCEL).length === 1);
    await h.waitFor('the notice', () =>
      h.botMessages(ts).some((m) => m.text === escapeSlack(notice('approval-not-allowed').text)),
    );
    expect(h.botMessages(ts).some((m) => hasActions(m))).toBe(false);
    expect(h.agent.kagent.ran).toEqual([]);
    expect(h.events.some((e) => e.type === 'task.cancel' && e.ok)).toBe(true);
  });

  it('[Q-5] approvals enabled with no approver groups: nobody may approve in Slack, and the prompt says so', async () => {
    const h = await harness({
      dialect: 'kagent-v1',
      toolApprovals: { enabled: true, approverGroups: [], approvers: [] },
      budgets,
    });
    h.agent.enqueueFor(SEND, kagentApproval(TWO_TOOLS));
    const { ts } = await h.mention('go');
    const shown = await prompt(h, ts);
    expect(hasActions(shown)).toBe(false);
    expect(blocksText(shown)).toContain('nobody can approve tool calls in Slack');
    expect(blocksText(shown)).toContain('1. add_numbers');
  });

  it('[Q-4] a prompt that times out loses its buttons and says why; a later press changes nothing', async () => {
    const h = await harness({ ...approvalsOn, settings: { questionTimeoutMs: 1_000 } });
    h.agent.enqueueFor(SEND, kagentApproval(TWO_TOOLS));
    const { ts } = await h.mention('go');
    const shown = await prompt(h, ts);
    const approveAll = button(h, shown.ts, 'all', 'approve-all');
    await h.waitFor('the timeout notice', () =>
      h.botMessages(ts).some((m) => m.text === escapeSlack(notice('question-timeout').text)),
    );
    await h.waitFor('the prompt closed', () => !hasActions(h.fake.message(CHANNEL, shown.ts)));
    expect(blocksText(h.fake.message(CHANNEL, shown.ts))).toContain('Not answered in time');
    expect(h.agent.rpc(CANCEL)).toHaveLength(1);
    await h.press({ ts: shown.ts }, approveAll, ADA);
    await h.waitFor('the stale answer', () => ephemeralsTo(h, ADA).length === 1);
    expect(ephemeralsTo(h, ADA)[0]).toBe('This prompt is no longer waiting for an answer.');
    expect(answers(h)).toHaveLength(0);
  });
});
