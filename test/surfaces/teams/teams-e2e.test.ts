import { createLocalJWKSet, type JSONWebKeySet, jwtVerify } from 'jose';
import { afterEach, describe, expect, it } from 'vitest';
import { taskFailed } from '../../../src/core/session/notices.js';
import { AssertionSigner, KeyRing } from '../../../src/identity/index.js';
import { NOT_SIGNED_IN, SIGNED_OUT } from '../../../src/surfaces/common/sign-out.js';
import { moreToolCallsText } from '../../../src/surfaces/common/tool-cards.js';
import { TEAMS_SURFACE } from '../../../src/surfaces/teams/address.js';
import { NEW_STARTED_TEXT } from '../../../src/surfaces/teams/inbound.js';
import { answer, kagentApproval, type Step, script } from '../../peers/contract-agent/contract-agent.js';
import { startTeamsHarness, type TeamsHarness, type TeamsHarnessOptions } from './harness.js';

const SEND = 'SendStreamingMessage';
const CANCEL = 'CancelTask';

interface Sent {
  parts: Array<{ text?: string }>;
  contextId?: string;
}

function sent(h: TeamsHarness): Sent[] {
  return h.agent.rpc(SEND).map((r) => (r.body as { params: { message: Sent } }).params.message);
}

describe('Microsoft Teams end to end: the real Agents SDK, the session engine and the contract agent', () => {
  const harnesses: TeamsHarness[] = [];
  afterEach(async () => {
    await Promise.all(harnesses.splice(0).map((h) => h.close()));
  });
  async function harness(o: TeamsHarnessOptions = {}): Promise<TeamsHarness> {
    const h = await startTeamsHarness(o);
    harnesses.push(h);
    return h;
  }
  const botMessages = (h: TeamsHarness, conversationId: string) =>
    h.connector.messages(conversationId).filter((m) => m.from === 'bot');

  it('a personal chat message is a turn with the label line; its answer streams with Teams streaming and ends exact', async () => {
    const h = await harness();
    h.agent.enqueueFor(SEND, answer({ chunks: ['Hello', ' there', ', Ada.'], chunkDelayMs: 700 }));
    const activity = h.connector.message({ conversation: h.personal, from: h.ada, text: 'restart the api' });
    expect((await h.connector.deliver(h.endpoint, activity)).status).toBe(200);
    await h.settled(1);
    expect(sent(h)[0]?.parts[0]?.text).toBe(
      `[Teams: Ada Lovelace (${h.ada.aadObjectId}) <ada@example.com>]\nrestart the api`,
    );
    expect(h.agent.rpc(SEND)[0]?.body).toMatchObject({
      params: {
        message: {
          metadata: {
            'agentkourier.dev/actor': {
              id: h.ada.aadObjectId,
              name: 'Ada Lovelace',
              email: 'ada@example.com',
            },
          },
        },
      },
    });
    await h.waitFor('the final message', () =>
      botMessages(h, h.personal.id).some((m) => m.stream?.ended === 'final'),
    );
    const [streamed, ...others] = botMessages(h, h.personal.id);
    expect(others).toEqual([]);
    expect(streamed?.text).toBe('Hello there, Ada.');
    // The stream showed the text growing before its final message.
    expect(streamed?.stream?.updates).toBeGreaterThan(2);
    expect(h.connector.throttled).toBe(0);
  });

  it('a channel post that mentions the app and its replies are one session; each answer is one message edited, exact at its end', async () => {
    const h = await harness();
    h.agent.enqueueFor(SEND, answer({ chunks: ['One', ' two', ' three.'], chunkDelayMs: 400 }));
    const root = h.connector.message({ conversation: h.channel, from: h.ada, text: 'count to three' });
    expect((await h.connector.deliver(h.endpoint, root)).status).toBe(200);
    await h.settled(1);
    await h.waitFor('the answer', () =>
      botMessages(h, h.channel.id).some((m) => m.text === 'One two three.'),
    );
    const [first] = botMessages(h, h.channel.id);
    expect(first?.conversationId).toBe(`${h.channel.id};messageid=${root.id as string}`);
    expect(first?.stream).toBeUndefined();
    // A reply in the thread (it mentions the app) goes on in the same agent context.
    h.agent.enqueueFor(SEND, answer({ chunks: ['Four.'] }));
    const reply = h.connector.message({
      conversation: h.channel,
      from: h.ada,
      text: 'and then?',
      threadRoot: root.id as string,
    });
    expect((await h.connector.deliver(h.endpoint, reply)).status).toBe(200);
    await h.settled(2);
    await h.waitFor('the second answer', () => botMessages(h, h.channel.id).some((m) => m.text === 'Four.'));
    const [one, two] = sent(h);
    // The first turn starts the agent's context; the reply carries it.
    expect(one?.contextId).toBeUndefined();
    expect(two?.contextId).toEqual(expect.any(String));
    expect(one?.parts[0]?.text).toContain('count to three');
    expect(two?.parts[0]?.text).toContain('and then?');
    const sessions = new Set(h.events.filter((e) => e.type === 'turn.settled').map((e) => e.sessionId));
    expect(sessions.size).toBe(1);
    expect(h.connector.throttled).toBe(0);
  });

  it('an answer longer than a Teams message goes on in more messages, each within the size limit, a code block cut in two closed and opened again', async () => {
    const h = await harness();
    const prose = Array.from(
      { length: 120 },
      (_, i) => `Paragraph ${i}: Grüße aus der Schleife, ${'日本'.repeat(20)}.\n\n`,
    );
    const code = [
      '```yaml\n',
      ...Array.from({ length: 500 }, (_, i) => `key${i}: ${'ü'.repeat(24)}\n`),
      '```\n',
    ];
    const chunks = [...prose, ...code, 'The end.'];
    h.agent.enqueueFor(SEND, answer({ chunks }));
    const root = h.connector.message({ conversation: h.channel, from: h.ada, text: 'the whole config' });
    await h.connector.deliver(h.endpoint, root);
    await h.settled(1, 30_000);
    await h.waitFor(
      'the last page',
      () => botMessages(h, h.channel.id).some((m) => m.text.endsWith('The end.')),
      30_000,
    );
    const pages = botMessages(h, h.channel.id).map((m) => m.text);
    expect(pages.length).toBeGreaterThan(2);
    for (const page of pages) expect(Buffer.byteLength(page)).toBeLessThanOrEqual(20_000);
    // Nothing lost: the pages hold the answer (only whitespace at a cut goes), and each renders
    // its code whole.
    const squash = (t: string) => t.replace(/```(yaml)?/g, '').replace(/\s+/g, '');
    expect(squash(pages.join(''))).toBe(squash(chunks.join('')));
    const cut = pages.findIndex((p) => p.includes('key0:') && !p.includes('key499:'));
    expect(pages[cut]?.endsWith('\n```')).toBe(true);
    expect(pages[cut + 1]?.startsWith('```yaml\n')).toBe(true);
    expect(h.connector.calls.filter((c) => c.status === 413)).toEqual([]);
  });

  it('in a channel, a flood of tool steps shows five lines and one message counting the rest, then the answer; a failed task says so in the words Slack uses', async () => {
    const h = await harness();
    const steps: Step[] = [{ event: 'task' }];
    for (let i = 0; i < 40; i++)
      steps.push({
        event: 'working',
        parts: [{ data: { name: `tool_${i}`, args: { i } }, metadata: { adk_type: 'function_call' } }],
      });
    steps.push({ event: 'chunk', text: 'Done after the tools.' }, { event: 'completed' }, { event: 'task' });
    h.agent.enqueueFor(SEND, script(steps));
    const root = h.connector.message({ conversation: h.channel, from: h.ada, text: 'use the tools' });
    await h.connector.deliver(h.endpoint, root);
    await h.settled(1, 30_000);
    const thread = () => botMessages(h, h.channel.id).map((m) => m.text);
    await h.waitFor(
      'the count of the other tool calls',
      () => thread().includes(moreToolCallsText(35)),
      20_000,
    );
    const lines = thread().filter((t) => t.startsWith('🛠️ `tool_'));
    expect(lines).toEqual(Array.from({ length: 5 }, (_, i) => `🛠️ \`tool_${i}\` \`{"i":${i}}\``));
    expect(thread()).toContain('Done after the tools.');
    expect(thread()).toHaveLength(7);

    h.agent.enqueueFor(
      SEND,
      answer({ chunks: [], state: 'failed', statusText: 'rate limit exceeded at 10.1.2.3' }),
    );
    await h.connector.deliver(
      h.endpoint,
      h.connector.message({ conversation: h.personal, from: h.ada, text: 'again' }),
    );
    await h.settled(2);
    const failure = taskFailed('rate limit').text;
    await h.waitFor('the failure notice', () =>
      botMessages(h, h.personal.id).some((m) => m.text.includes(failure)),
    );
    expect(JSON.stringify(botMessages(h, h.personal.id))).not.toContain('10.1.2.3');
  });

  it('Teams throttling the app (429 with Retry-After) delays the answer’s edits, none sent before the time given, and the answer still ends exact', async () => {
    const h = await harness();
    const chunks = Array.from({ length: 12 }, (_, i) => `part ${i} `);
    h.agent.enqueueFor(SEND, answer({ chunks, chunkDelayMs: 250 }));
    const root = h.connector.message({ conversation: h.channel, from: h.ada, text: 'slowly' });
    await h.connector.deliver(h.endpoint, root);
    await h.waitFor('the answer’s first words', () => botMessages(h, h.channel.id).length > 0);
    const from = Date.now();
    h.connector.throttleFor(2_000);
    await h.settled(1, 20_000);
    await h.waitFor('the whole answer', () =>
      botMessages(h, h.channel.id).some((m) => m.text === chunks.join('')),
    );
    const during = h.connector.calls.filter(
      (c) => c.at >= from && c.at < from + 1_950 && c.kind !== 'member',
    );
    expect(during.length).toBeGreaterThan(0);
    expect(during.every((c) => c.status === 429)).toBe(true);
    // Retry-After was 2 s: the broker waited it out rather than retrying at once.
    expect(during.length).toBeLessThanOrEqual(2);
    expect(botMessages(h, h.channel.id)).toHaveLength(1);
  });

  it('a redelivered activity is answered once', async () => {
    const h = await harness();
    h.agent.enqueueFor(SEND, answer({ chunks: ['Once.'] }));
    const activity = h.connector.message({ conversation: h.channel, from: h.ada, text: 'hello' });
    expect((await h.connector.deliver(h.endpoint, activity)).status).toBe(200);
    expect((await h.connector.deliver(h.endpoint, activity)).status).toBe(200);
    await h.settled(1);
    await h.waitFor('the answer', () => botMessages(h, h.channel.id).some((m) => m.text === 'Once.'));
    expect(h.agent.rpc(SEND)).toHaveLength(1);
    expect(botMessages(h, h.channel.id)).toHaveLength(1);
  });

  it('an unsigned activity, a token for another app, one signed by other keys and an expired one are refused 401 before anything is stored', async () => {
    const h = await harness();
    const attempts = [
      null,
      { audience: '99999999-2222-4333-8444-555555555555' },
      { foreignKey: true },
      { expired: true },
    ];
    for (const token of attempts) {
      const activity = h.connector.message({ conversation: h.personal, from: h.ada, text: 'let me in' });
      expect((await h.connector.deliver(h.endpoint, activity, token)).status).toBe(401);
    }
    expect(h.agent.rpc(SEND)).toHaveLength(0);
    expect(await h.store.addresses().get(TEAMS_SURFACE, h.tenantId, h.personal.id)).toBeUndefined();
    expect(h.events).toEqual([]);
  });

  it('an activity from a tenant the install does not allow reaches nothing', async () => {
    const h = await harness();
    const stranger = { ...h.personal, id: 'a:stranger', tenantId: '00000000-1111-4222-8333-444444444444' };
    h.connector.conversation(stranger);
    const activity = h.connector.message({ conversation: stranger, from: h.ada, text: 'hello' });
    expect((await h.connector.deliver(h.endpoint, activity)).status).toBe(200);
    expect(h.agent.rpc(SEND)).toHaveLength(0);
    expect(await h.store.addresses().get(TEAMS_SURFACE, stranger.tenantId, stranger.id)).toBeUndefined();
    expect(h.events).toEqual([]);
    expect(h.logs.some((l) => String(l.msg).includes('tenant not allowed'))).toBe(true);
  });

  it('the person’s Stop on a streamed answer cancels the agent’s task; the partial answer stays, with the notice', async () => {
    const h = await harness();
    h.agent.enqueueFor(
      SEND,
      answer({ chunks: Array.from({ length: 40 }, (_, i) => `part ${i}. `), chunkDelayMs: 250 }),
    );
    const activity = h.connector.message({ conversation: h.personal, from: h.ada, text: 'a long one' });
    await h.connector.deliver(h.endpoint, activity);
    await h.waitFor('the stream to show some text', () =>
      botMessages(h, h.personal.id).some((m) => m.stream !== undefined && m.text.length > 0),
    );
    h.connector.stop(h.personal.id);
    await h.waitFor('the agent asked to cancel', () => h.agent.rpc(CANCEL).length > 0, 15_000);
    await h.settled(1);
    const [streamed, ...rest] = botMessages(h, h.personal.id);
    expect(streamed?.stream?.ended).toBe('stopped');
    expect(streamed?.text.startsWith('part 0. ')).toBe(true);
    expect(streamed?.text).not.toContain('part 39.');
    expect(rest.map((m) => m.text).join('\n')).toMatch(/cancel|stop/i);
  });

  it('the Stop button under an answer being written in a channel cancels the task; the answer stays as shown, without the button', async () => {
    const h = await harness();
    h.agent.enqueueFor(
      SEND,
      answer({ chunks: Array.from({ length: 40 }, (_, i) => `part ${i}. `), chunkDelayMs: 250 }),
    );
    const root = h.connector.message({ conversation: h.channel, from: h.ada, text: 'a long one' });
    await h.connector.deliver(h.endpoint, root);
    await h.waitFor('the answer with its Stop button', () =>
      botMessages(h, h.channel.id).some((m) => m.attachments.length > 0 && m.text !== ''),
    );
    const working = botMessages(h, h.channel.id)[0];
    const card = working?.attachments[0] as { content: { actions: Array<{ verb: string; data: unknown }> } };
    const stop = card.content.actions[0];
    expect(stop?.verb).toBe('agentkourier.stop');
    const pressed = await h.connector.deliver(
      h.endpoint,
      h.connector.cardAction({
        conversation: h.channel,
        from: h.ada,
        messageId: working?.id ?? '',
        threadRoot: root.id as string,
        verb: stop?.verb ?? '',
        data: stop?.data as Record<string, unknown>,
      }),
    );
    expect(pressed.status).toBe(200);
    expect(pressed.body).toContain('Stopping');
    await h.waitFor('the agent asked to cancel', () => h.agent.rpc(CANCEL).length > 0, 15_000);
    await h.settled(1);
    await h.waitFor('the button gone', () => botMessages(h, h.channel.id)[0]?.attachments.length === 0);
    const [answerShown, ...rest] = botMessages(h, h.channel.id);
    expect(answerShown?.text.startsWith('part 0. ')).toBe(true);
    expect(answerShown?.text).not.toContain('part 39.');
    expect(rest.map((m) => m.text).join('\n')).toMatch(/cancel|stop/i);
    expect(h.connector.throttled).toBe(0);
  });

  it('an answer past Teams’ streaming limit goes on in the same message, edited, exact at its end, and is not a stop', async () => {
    const h = await harness({ streamLimitMs: 2_500 });
    const chunks = Array.from({ length: 12 }, (_, i) => `line ${i}\n`);
    h.agent.enqueueFor(SEND, answer({ chunks, chunkDelayMs: 400 }));
    const activity = h.connector.message({ conversation: h.personal, from: h.ada, text: 'take your time' });
    await h.connector.deliver(h.endpoint, activity);
    await h.settled(1, 30_000);
    await h.waitFor('the whole answer', () =>
      botMessages(h, h.personal.id).some((m) => m.text === chunks.join('')),
    );
    const shown = botMessages(h, h.personal.id);
    expect(shown).toHaveLength(1);
    expect(shown[0]?.stream?.ended).toBe('timed-out');
    expect(shown[0]?.edits).toBeGreaterThan(0);
    expect(h.agent.rpc(CANCEL)).toHaveLength(0);
    expect(h.connector.throttled).toBe(0);
  });

  it('the app removed from a team forgets the addresses of all the team’s channels, and of no other conversation', async () => {
    const h = await harness();
    const other = h.connector.conversation({ ...h.channel, id: '19:other0channel@thread.tacv2' });
    for (const c of [h.channel, other, h.personal]) {
      const added = {
        ...h.connector.message({ conversation: c, from: h.ada, text: '' }),
        type: 'conversationUpdate',
        membersAdded: [{ id: `28:${h.appId}` }],
        conversation: { id: c.id, conversationType: c.type, tenantId: h.tenantId },
      };
      expect((await h.connector.deliver(h.endpoint, added)).status).toBe(200);
    }
    const rows = h.store.addresses();
    expect((await rows.get(TEAMS_SURFACE, h.tenantId, other.id))?.groupId).toBe(h.channel.teamId);
    const removed = {
      ...h.connector.message({ conversation: h.channel, from: h.ada, text: '' }),
      type: 'conversationUpdate',
      membersRemoved: [{ id: `28:${h.appId}` }],
      conversation: { id: h.channel.id, conversationType: 'channel', tenantId: h.tenantId },
    };
    expect((await h.connector.deliver(h.endpoint, removed)).status).toBe(200);
    expect(await rows.get(TEAMS_SURFACE, h.tenantId, h.channel.id)).toBeUndefined();
    expect(await rows.get(TEAMS_SURFACE, h.tenantId, other.id)).toBeUndefined();
    expect(await rows.get(TEAMS_SURFACE, h.tenantId, h.personal.id)).toBeDefined();
  });

  it('"new" in a chat starts a fresh session; the app removed from the chat forgets its address', async () => {
    const h = await harness();
    h.agent.enqueueFor(SEND, answer({ chunks: ['First.'] }), answer({ chunks: ['Second.'] }));
    await h.connector.deliver(
      h.endpoint,
      h.connector.message({ conversation: h.personal, from: h.ada, text: 'hi' }),
    );
    await h.settled(1);
    await h.connector.deliver(
      h.endpoint,
      h.connector.message({ conversation: h.personal, from: h.ada, text: 'new' }),
    );
    await h.waitFor('the new-conversation note', () =>
      botMessages(h, h.personal.id).some((m) => m.text === NEW_STARTED_TEXT),
    );
    await h.connector.deliver(
      h.endpoint,
      h.connector.message({ conversation: h.personal, from: h.ada, text: 'hi again' }),
    );
    await h.settled(2);
    const [first, second] = sent(h);
    expect(first?.contextId).toBeUndefined();
    // A fresh session: its first turn names no context.
    expect(second?.contextId).toBeUndefined();
    const sessions = new Set(h.events.filter((e) => e.type === 'turn.settled').map((e) => e.sessionId));
    expect(sessions.size).toBe(2);

    const removed = {
      ...h.connector.message({ conversation: h.personal, from: h.ada, text: '' }),
      type: 'installationUpdate',
      action: 'remove',
    };
    expect((await h.connector.deliver(h.endpoint, removed)).status).toBe(200);
    expect(await h.store.addresses().get(TEAMS_SURFACE, h.tenantId, h.personal.id)).toBeUndefined();
  });

  it('on a per-person Binding, a Teams person’s call carries an assertion naming them by tenant and Entra object id, with their email', async () => {
    const signer = new AssertionSigner({ issuer: 'https://broker.example', keys: await KeyRing.ephemeral() });
    const h = await harness({ perPerson: signer });
    h.agent.enqueueFor(SEND, answer({ chunks: ['Yours.'] }));
    await h.connector.deliver(
      h.endpoint,
      h.connector.message({ conversation: h.personal, from: h.ada, text: 'what is mine?' }),
    );
    await h.settled(1);
    const raw = String(h.agent.rpc(SEND)[0]?.headers.authorization ?? '').replace(/^Bearer /, '');
    const { payload } = await jwtVerify(raw, createLocalJWKSet(signer.jwks() as JSONWebKeySet), {
      issuer: 'https://broker.example',
      audience: 'urn:test:teams-agent',
    });
    expect(payload.sub).toBe(`${TEAMS_SURFACE}:${h.tenantId}:${h.ada.aadObjectId}`);
    expect(payload.email).toBe('ada@example.com');
    expect(payload.name).toBe('Ada Lovelace');
  });

  it('"sign out" ends the person’s sign-in links (by their Entra id), says how many, once for a redelivery, and asks no agent', async () => {
    const calls: Array<{ surface: string; workspaceId: string; id: string }> = [];
    const links = [2, 0];
    const h = await harness({
      signOut: async (person) => {
        calls.push(person);
        return links.shift() ?? 0;
      },
    });
    const command = h.connector.message({ conversation: h.personal, from: h.ada, text: 'Sign out' });
    expect((await h.connector.deliver(h.endpoint, command)).status).toBe(200);
    expect((await h.connector.deliver(h.endpoint, command)).status).toBe(200);
    await h.waitFor('the sign-out answer', () => botMessages(h, h.personal.id).length > 0);
    expect(calls).toEqual([{ surface: TEAMS_SURFACE, workspaceId: h.tenantId, id: h.ada.aadObjectId }]);

    // In a channel, mentioning the app: the answer is in the post's thread.
    const post = h.connector.message({ conversation: h.channel, from: h.ada, text: 'sign-out' });
    await h.connector.deliver(h.endpoint, post);
    await h.waitFor('the channel’s answer', () => botMessages(h, h.channel.id).length > 0);
    expect(botMessages(h, h.personal.id).map((m) => m.text)).toEqual([SIGNED_OUT(2)]);
    expect(botMessages(h, h.channel.id).map((m) => [m.conversationId, m.text])).toEqual([
      [`${h.channel.id};messageid=${post.id as string}`, NOT_SIGNED_IN],
    ]);
    expect(h.agent.rpc(SEND)).toEqual([]);
  });
});

describe('Microsoft Teams approvals end to end: Adaptive Cards, Entra groups through Graph, a kagent-shaped agent', () => {
  const harnesses: TeamsHarness[] = [];
  afterEach(async () => {
    await Promise.all(harnesses.splice(0).map((h) => h.close()));
  });
  const GROUP = 'bbbbbbbb-0000-4000-8000-0000000000a1';
  const TWO_TOOLS = [
    { id: 'adk-conf-1', callId: 'call_a', name: 'add_numbers', args: { b: 3, a: 2 } },
    { id: 'adk-conf-2', callId: 'call_b', name: 'check_status', args: { service: 'api' } },
  ];
  const EVE = {
    id: '29:eve',
    name: 'Eve',
    aadObjectId: 'eeeeeeee-0000-4000-8000-00000000e0e0',
    email: 'eve@example.com',
    userPrincipalName: 'eve@example.com',
  };

  async function approvals(): Promise<TeamsHarness> {
    const h = await startTeamsHarness({
      dialect: 'kagent-v1',
      toolApprovals: {
        enabled: true,
        approverGroups: [],
        approvers: [],
        perSurface: { teams: { approverGroups: [GROUP], approvers: [] } },
      },
    });
    harnesses.push(h);
    h.channel.members.push(EVE);
    return h;
  }

  interface CardMessage {
    id: string;
    card: { body: unknown[]; actions?: Array<{ verb: string; data: { q: string } }> };
  }
  const cardIn = (h: TeamsHarness): CardMessage | undefined => {
    const m = h.connector
      .messages(h.channel.id)
      .find((x) => x.from === 'bot' && (x.attachments as Array<{ content?: unknown }>).length > 0);
    if (m === undefined) return undefined;
    return { id: m.id, card: (m.attachments[0] as { content: CardMessage['card'] }).content };
  };

  it('[Q-5] a tool approval is a card; a person outside the approver groups is refused in the card; an approver decides once, the card shows it to everyone, and only the approved tool runs', async () => {
    const h = await approvals();
    h.graph.group(GROUP, [h.ada.aadObjectId]);
    h.agent.enqueueFor(SEND, kagentApproval(TWO_TOOLS));
    const root = h.connector.message({ conversation: h.channel, from: h.ada, text: 'add and check' });
    await h.connector.deliver(h.endpoint, root);
    await h.waitFor('the approval card', () => cardIn(h) !== undefined);
    const shown = cardIn(h) as CardMessage;
    const action = shown.card.actions?.[0];
    expect(action?.verb).toBe('agentkourier.decide');
    expect(JSON.stringify(shown.card.body)).toContain('add_numbers');
    const press = (who: typeof EVE) =>
      h.connector.deliver(
        h.endpoint,
        h.connector.cardAction({
          conversation: h.channel,
          from: who,
          messageId: shown.id,
          threadRoot: root.id as string,
          verb: action?.verb ?? '',
          data: { ...action?.data, call0: 'approve', call1: 'deny' },
        }),
      );

    const refused = await press(EVE);
    expect(refused.status).toBe(200);
    expect(refused.body).toContain('Only the approvers named for this agent');
    expect(h.graph.calls.map((c) => [c.userId, c.status])).toEqual([[EVE.aadObjectId, 200]]);
    expect(h.agent.rpc(SEND)).toHaveLength(1);

    const taken = await press(h.ada);
    expect(taken.status).toBe(200);
    expect(taken.body).toContain('Decided by Ada Lovelace');
    await h.settled(2);
    expect(h.agent.kagent.ran.map((r) => r.name)).toEqual(['add_numbers']);
    expect(h.agent.kagent.denied.map((d) => d.name)).toEqual(['check_status']);
    // Everyone sees the decision: the prompt message itself is the decided card, with no action.
    const after = cardIn(h) as CardMessage;
    expect(after.id).toBe(shown.id);
    expect(after.card.actions).toBeUndefined();
    expect(JSON.stringify(after.card.body)).toContain('Approved: add_numbers');
    expect(JSON.stringify(after.card.body)).toContain('Denied: check_status');
    expect(h.audits.map((a) => [a.tool.name, a.decision, a.approver.id])).toEqual([
      ['add_numbers', 'approved', h.ada.aadObjectId],
      ['check_status', 'denied', h.ada.aadObjectId],
    ]);
    // A second press decides nothing more.
    const again = await press(h.ada);
    expect(again.body).toMatch(/no longer waiting|already decided/);
    expect(h.agent.rpc(SEND)).toHaveLength(2);
  });

  it('[Q-5] when Graph cannot say, the press is refused (fail closed) and nothing is decided', async () => {
    const h = await approvals();
    h.graph.failing = true;
    h.agent.enqueueFor(SEND, kagentApproval(TWO_TOOLS));
    const root = h.connector.message({ conversation: h.channel, from: h.ada, text: 'add and check' });
    await h.connector.deliver(h.endpoint, root);
    await h.waitFor('the approval card', () => cardIn(h) !== undefined);
    const shown = cardIn(h) as CardMessage;
    const action = shown.card.actions?.[0];
    const refused = await h.connector.deliver(
      h.endpoint,
      h.connector.cardAction({
        conversation: h.channel,
        from: h.ada,
        messageId: shown.id,
        threadRoot: root.id as string,
        verb: action?.verb ?? '',
        data: { ...action?.data, call0: 'approve', call1: 'approve' },
      }),
    );
    expect(refused.body).toContain('could not check who may approve');
    expect(h.agent.rpc(SEND)).toHaveLength(1);
    expect(h.agent.kagent.ran).toEqual([]);
  });
});
