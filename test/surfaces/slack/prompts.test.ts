import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { argumentsHash, canonicalJson } from '../../../src/core/approval-audit.js';
import { systemClock } from '../../../src/core/clock.js';
import type { StructuredForm } from '../../../src/core/question.js';
import {
  type AskUserRequest,
  formOf,
  type ToolApprovalRequest,
} from '../../../src/dialects/kagent-v1/index.js';
import { ApproverGroups } from '../../../src/surfaces/slack/prompts/access.js';
import { answerModal, denyModal, readAnswerModal } from '../../../src/surfaces/slack/prompts/modals.js';
import { PromptTokens } from '../../../src/surfaces/slack/prompts/payloads.js';
import { candidates } from '../../../src/surfaces/slack/prompts/state.js';
import {
  approvalLayout,
  approvalMessage,
  askUserMessage,
  type Mark,
  readMarks,
} from '../../../src/surfaces/slack/prompts/view.js';
import { BudgetBook } from '../../../src/surfaces/slack/web-api/budget.js';
import { createWebApiCaller, SlackApi } from '../../../src/surfaces/slack/web-api/client.js';
import { type FakeSlack, startFakeSlack } from '../../../testkit/slack/index.js';
import { ManualClock } from './manual-clock.js';

const silent = pino({ level: 'silent' });
const tokens = new PromptTokens('xoxb-secret');
const token = (a: Parameters<PromptTokens['token']>[2]) => tokens.token('s1', 'q1', a);

/** The neutral form of a kagent approval of `count` calls, as the kagent-v1 dialect reads it. */
function approval(count: number, argChars = 50): StructuredForm & { kind: 'approval' } {
  return approvalForm({
    type: 'tool_approval_request',
    hint: 'Tools need approval',
    tools: Array.from({ length: count }, (_, i) => ({
      id: `conf-${i}`,
      call_id: `call-${i}`,
      name: `tool_${i}`,
      args: { text: 'x'.repeat(argChars), n: i },
    })),
  });
}

function approvalForm(request: ToolApprovalRequest): StructuredForm & { kind: 'approval' } {
  const form = formOf(request);
  if (form.kind !== 'approval') throw new Error('not an approval');
  return form;
}

function askForm(request: AskUserRequest): StructuredForm & { kind: 'ask' } {
  const form = formOf(request);
  if (form.kind !== 'ask') throw new Error('not a question');
  return form;
}

describe('prompt tokens', () => {
  it('[Q-5] are opaque, fixed per session, question and action, and match nothing else', () => {
    const t = token({ kind: 'approve', index: 0 });
    expect(t).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(t).toBe(token({ kind: 'approve', index: 0 }));
    expect(t).not.toBe(token({ kind: 'deny', index: 0 }));
    expect(t).not.toBe(tokens.token('s1', 'q2', { kind: 'approve', index: 0 }));
    expect(t).not.toBe(tokens.token('s2', 'q1', { kind: 'approve', index: 0 }));
    expect(t).not.toBe(new PromptTokens('another-secret').token('s1', 'q1', { kind: 'approve', index: 0 }));
    const all = candidates(approval(2));
    expect(tokens.find('s1', 'q1', all, t)).toEqual({ kind: 'approve', index: 0 });
    expect(tokens.find('s1', 'q2', all, t)).toBeUndefined();
    expect(tokens.find('s1', 'q1', all, `${t.slice(0, 21)}A`)).toBeUndefined();
    expect(tokens.find('s1', 'q1', all, '')).toBeUndefined();
  });

  it('hashes arguments as canonical JSON: key order does not matter', () => {
    expect(canonicalJson({ b: [{ y: 1, x: 2 }], a: null })).toBe('{"a":null,"b":[{"x":2,"y":1}]}');
    expect(argumentsHash({ a: 1, b: 2 })).toBe(argumentsHash({ b: 2, a: 1 }));
    expect(argumentsHash({ a: 1 })).toMatch(/^[0-9a-f]{64}$/);
  });
});

describe('prompt views', () => {
  const gate = { kind: 'open' as const, groups: ['S0APPROVERS'], people: [] };
  const open = { kind: 'open' as const };

  it('[Q-5] shows agent text only as plain text, never mrkdwn', () => {
    const request: ToolApprovalRequest = {
      type: 'tool_approval_request',
      hint: '<!channel> *urgent*',
      tools: [
        { id: 'c', call_id: 'k', name: 'rm\u202Eetad `x`', args: { cmd: '<https://evil|click> :tada:' } },
      ],
      nested: {
        subagent_name: '*boss*',
        task_id: 't',
        context_id: 'c',
        tools: [{ id: 'c2', call_id: 'k2', name: '<@U1>', args: {} }],
      },
    };
    const message = approvalMessage({
      form: approvalForm(request),
      marks: new Map(),
      status: open,
      gate,
      token,
    });
    for (const block of message.blocks ?? []) {
      const b = block as {
        type: string;
        text?: { type: string; text: string };
        elements?: Array<{ type: string; text?: string }>;
      };
      if (b.text !== undefined) expect(b.text.type).toBe('plain_text');
      for (const e of b.elements ?? [])
        if (e.type === 'mrkdwn') expect(e.text).not.toMatch(/channel|urgent|boss|evil|<@U1>/);
    }
    expect(message.text).not.toContain('<@U1>');
    expect(message.text).toContain('&lt;@U1&gt;');
  });

  it.each([1, 2, 23, 24, 46])(
    '[Q-5] %i tool calls with long arguments fit in one message within Slack limits (the fake refuses otherwise)',
    async (count) => {
      const fake = await startFakeSlack();
      const budgets = new BudgetBook(systemClock);
      try {
        const api = new SlackApi(
          createWebApiCaller({ token: fake.botToken, apiUrl: fake.url, logger: silent }),
          budgets,
        );
        const form = approval(count, 20_000);
        const marks = new Map<number, Mark>([
          [0, { approved: false, by: 'U0ADA', at: Date.now(), reason: 'r'.repeat(600) }],
        ]);
        const message = approvalMessage({ form, marks, status: open, gate, token });
        const { ts } = await api.postMessage(
          { team: 'T0001' },
          { channel: 'C1', text: message.text, blocks: message.blocks ?? [] },
        );
        expect(ts).toBeTruthy();
        const layout = approvalLayout(count);
        const buttons = JSON.stringify(message.blocks).match(/"type":"button"/g)?.length ?? 0;
        if (layout === 'per-tool') expect(buttons).toBe(2 * (count - 1) + (count > 1 ? 2 : 0));
        else expect(buttons).toBe(2); // all at once only
        // Every call is shown: its number and name.
        for (let i = 0; i < count; i++)
          expect(JSON.stringify(message.blocks)).toContain(`${i + 1}. tool_${i}`);
        // Per-call decisions are on the message, for a process that did not see them.
        if (layout === 'per-tool')
          expect(readMarks(message.blocks ?? []).get(0)).toMatchObject({
            approved: false,
            by: 'U0ADA',
            reason: expect.stringMatching(/^r+…$/),
          });
      } finally {
        budgets.close();
        await fake.close();
      }
    },
  );

  it('[Q-5] more calls than one message can show: no buttons, and it says so', () => {
    const message = approvalMessage({ form: approval(60), marks: new Map(), status: open, gate, token });
    expect(JSON.stringify(message.blocks)).not.toContain('"button"');
    expect(JSON.stringify(message.blocks)).toContain('more than one Slack message can show');
    expect(candidates(approval(60))).toEqual([]);
  });

  it('modals fit views.open, and the answer modal reads picks and words', async () => {
    const fake = await startFakeSlack();
    const budgets = new BudgetBook(systemClock);
    try {
      const api = new SlackApi(
        createWebApiCaller({ token: fake.botToken, apiUrl: fake.url, logger: silent }),
        budgets,
      );
      const place = {
        team: 'T0001',
        channel: 'C1',
        threadTs: '1.000001',
        messageTs: '1.000002',
        token: 'x'.repeat(22),
      };
      const ask = askForm({
        type: 'ask_user_request',
        id: 'a',
        questions: [
          { question: 'Which?', choices: ['one', 'two'], multiple: false },
          { question: 'Why?', choices: [], multiple: false },
        ],
      });
      await api.openView({ team: 'T0001' }, { trigger_id: '1.2', view: denyModal(approval(3).calls, place) });
      await api.openView({ team: 'T0001' }, { trigger_id: '1.3', view: answerModal(ask, place) });
      expect(fake.views).toHaveLength(2);
      expect(readAnswerModal(ask, {})).toEqual({
        errors: { 'q0.text': 'Please answer this question.', 'q1.text': 'Please answer this question.' },
      });
      expect(
        readAnswerModal(ask, {
          'q0.pick': { pick: { selected_option: { value: '1' } } },
          'q0.text': { text: { value: 'three' } },
          'q1.text': { text: { value: 'because' } },
        }),
      ).toMatchObject({ errors: { 'q0.text': expect.stringContaining('one answer') } });
      expect(
        readAnswerModal(ask, {
          'q0.pick': { pick: { selected_option: { value: '1' } } },
          'q1.text': { text: { value: ' because ' } },
        }),
      ).toEqual({ answers: [['two'], ['because']] });
      const message = askUserMessage({ form: ask, marks: new Map(), status: open, gate, token });
      expect(JSON.stringify(message.blocks)).toContain('"text":"one"');
    } finally {
      budgets.close();
      await fake.close();
    }
  });
});

describe('approver groups', () => {
  const fakes: FakeSlack[] = [];
  const books: BudgetBook[] = [];
  afterEach(async () => {
    for (const b of books.splice(0)) b.close();
    await Promise.all(fakes.splice(0).map((f) => f.close()));
  });

  async function setup() {
    const fake = await startFakeSlack();
    fakes.push(fake);
    const clock = new ManualClock();
    const budgets = new BudgetBook(systemClock);
    books.push(budgets);
    const api = new SlackApi(
      createWebApiCaller({ token: fake.botToken, apiUrl: fake.url, logger: silent }),
      budgets,
    );
    return { fake, clock, groups: new ApproverGroups(api, clock, silent, { ttlMs: 60_000 }) };
  }

  it('[Q-5] caches a group with a TTL, shares lookups, and never counts a failed lookup as membership', async () => {
    const { fake, clock, groups } = await setup();
    fake.addUserGroup('S0ONE', ['U0ADA']);
    fake.addUserGroup('S0TWO', ['U0BOB']);
    const [a, b] = await Promise.all([
      groups.membership('T0001', ['S0ONE', 'S0TWO'], 'U0ADA'),
      groups.membership('T0001', ['S0ONE', 'S0TWO'], 'U0BOB'),
    ]);
    expect(a).toEqual({ kind: 'member', group: 'S0ONE' });
    expect(b).toEqual({ kind: 'member', group: 'S0TWO' });
    expect(fake.callsOf('usergroups.users.list')).toHaveLength(2);
    expect(await groups.membership('T0001', ['S0ONE'], 'U0EVE')).toEqual({ kind: 'not-member' });
    expect(fake.callsOf('usergroups.users.list')).toHaveLength(2); // cached

    // Removed from the group: seen once the cache expires.
    fake.addUserGroup('S0ONE', []);
    expect((await groups.membership('T0001', ['S0ONE'], 'U0ADA')).kind).toBe('member');
    await clock.advance(60_001, 60_001);
    fake.failNext('usergroups.users.list', 'internal_error');
    expect(await groups.membership('T0001', ['S0ONE'], 'U0ADA')).toEqual({
      kind: 'unknown',
      failed: ['S0ONE'],
    });
    expect(await groups.membership('T0001', ['S0ONE'], 'U0ADA')).toEqual({ kind: 'not-member' });
    // A group id that is not one is never looked up, and never lets anyone in.
    expect(await groups.membership('T0001', ['<!channel>'], 'U0ADA')).toEqual({
      kind: 'unknown',
      failed: ['<!channel>'],
    });
  });
});
