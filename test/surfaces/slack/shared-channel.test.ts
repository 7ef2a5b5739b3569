import { afterEach, describe, expect, it } from 'vitest';
import { A2AClient } from '../../../src/a2a/client.js';
import { sessionIdOf } from '../../../src/core/store.js';
import { a2aDialect } from '../../../src/dialects/a2a.js';
import { SqliteStore } from '../../../src/store/sqlite/sqlite-store.js';
import { PICK_HINT, PICK_NOT_YOURS } from '../../../src/surfaces/slack/inbound/agent-picker.js';
import {
  HAND_OVER_BUSY,
  HAND_OVER_SAME,
  HANDED_OVER,
} from '../../../src/surfaces/slack/inbound/hand-over.js';

import { slowHeaders } from '../../peers/contract-agent/behaviours.js';
import { type ContractAgent, startContractAgent } from '../../peers/contract-agent/contract-agent.js';
import { ADA, BINDING, CHANNEL, type SlackHarness, startSlackHarness } from './e2e-harness.js';

/**
 * Two agents on one channel, through the real Bolt app: a thread's first message picks its agent
 * by handle, a thread that names none is asked to, and the thread stays with its agent for its
 * life — across a restart, and even when a later reply names the other handle.
 */

const OPS = 'ops/k8s';
const open: SlackHarness[] = [];
const agents: ContractAgent[] = [];

afterEach(async () => {
  for (const h of open.splice(0)) await h.close();
  for (const a of agents.splice(0)) await a.close();
});

async function shareChannel(h: SlackHarness, second: ContractAgent): Promise<void> {
  const first = h.registry.get(BINDING);
  if (first === undefined) throw new Error('the harness Binding is missing');
  h.registry.upsert({
    ...first,
    routes: { slack: { channels: [CHANNEL], allowDirectMessages: false, handle: 'billing' } },
  });
  h.registry.upsert({
    ...first,
    ref: OPS,
    client: new A2AClient({
      endpoint: second.endpoint,
      identity: { kind: 'bearer', token: 'ops-token' },
      timeouts: { headersMs: 10_000, streamIdleMs: 10_000 },
    }),
    dialect: a2aDialect,
    routes: { slack: { channels: [CHANNEL], allowDirectMessages: false, handle: 'k8s' } },
  });
}

function bindingOf(h: SlackHarness, ts: string): Promise<string | undefined> {
  return h.store
    .getSession(sessionIdOf({ surface: 'slack', workspaceId: 'T0001', channelId: CHANNEL, threadId: ts }))
    .then((s) => s?.binding);
}

describe('several agents in one channel', () => {
  it('routes a thread by the handle its first message names, and keeps it there across a restart', async () => {
    const store = new SqliteStore(':memory:');
    const ops = await startContractAgent({ version: '1.0' });
    agents.push(ops);
    const a = await startSlackHarness({ store });
    await shareChannel(a, ops);

    const billing = await a.mention('billing: why did the invoice fail?');
    const k8s = await a.mention('k8s, why do the pods restart?');
    await a.settled(2);
    expect(await bindingOf(a, billing.ts)).toBe(BINDING);
    expect(await bindingOf(a, k8s.ts)).toBe(OPS);
    // Each agent got its own thread's question, without the handle.
    expect(JSON.stringify(a.agent.requests.map((r) => r.body))).toContain('why did the invoice fail?');
    expect(JSON.stringify(a.agent.requests.map((r) => r.body))).not.toContain('pods restart');
    expect(JSON.stringify(ops.requests.map((r) => r.body))).toContain('why do the pods restart?');
    expect(a.botMessages(billing.ts).length).toBeGreaterThan(0);
    expect(a.botMessages(k8s.ts).length).toBeGreaterThan(0);

    // A message that names no agent starts nothing and is asked to name one.
    const vague = await a.mention('why is it broken?');
    expect(vague.status).toBe(200);
    await a.waitFor('the hint', () =>
      a.fake.ephemerals.some((e) => e.text === PICK_HINT(['billing', 'k8s'])),
    );
    expect(await bindingOf(a, vague.ts)).toBeUndefined();

    // After a restart, the k8s thread is still the k8s agent's, even when a reply names billing.
    await a.close({ keepAgent: true, keepStore: true, keepFake: true });
    const b = await startSlackHarness({ store, agent: a.agent, fakeSlack: a.fake });
    open.push(b);
    await shareChannel(b, ops);
    const before = ops.requests.length;
    await b.mention('billing: and the invoices?', { threadTs: k8s.ts });
    await b.waitFor('the k8s agent asked again', () => ops.requests.length > before);
    await b.settled(1);
    expect(await bindingOf(b, k8s.ts)).toBe(OPS);
    expect(JSON.stringify(a.agent.requests.map((r) => r.body))).not.toContain('and the invoices');
    expect(
      b.fake.ephemerals.filter((e) => e.user === ADA && e.text === PICK_HINT(['billing', 'k8s'])),
    ).toHaveLength(1);
  });

  it('hands a thread to another agent only by the explicit command, starting a new context and saying so', async () => {
    const ops = await startContractAgent({ version: '1.0' });
    agents.push(ops);
    const h = await startSlackHarness();
    open.push(h);
    await shareChannel(h, ops);
    const root = await h.mention('billing: the invoice failed');
    await h.settled(1);
    const billingContext = (await h.store.getSession(sessionIdOf(keyOf(root.ts))))?.contextId;
    expect(billingContext).toBeTruthy();

    await h.mention('hand over to k8s: is the cluster healthy?', { threadTs: root.ts });
    await h.settled(2);
    const session = await h.store.getSession(sessionIdOf(keyOf(root.ts)));
    expect(session?.binding).toBe(OPS);
    // A new context with the new agent: not the one the billing agent had.
    expect(session?.contextId).toBeTruthy();
    expect(session?.contextId).not.toBe(billingContext);
    expect(JSON.stringify(ops.requests.map((r) => r.body))).toContain('is the cluster healthy?');
    expect(JSON.stringify(ops.requests.map((r) => r.body))).not.toContain('the invoice failed');
    expect(h.botMessages(root.ts).map((m) => m.text)).toContain(HANDED_OVER('k8s'));

    // Handing it to the agent it already has changes nothing and says so.
    await h.mention('switch to k8s', { threadTs: root.ts });
    await h.waitFor('the answer', () => h.fake.ephemerals.some((e) => e.text === HAND_OVER_SAME('k8s')));
  });

  it('refuses to hand over a thread whose agent is still working', async () => {
    const ops = await startContractAgent({ version: '1.0' });
    agents.push(ops);
    const h = await startSlackHarness();
    open.push(h);
    await shareChannel(h, ops);
    h.agent.enqueue(slowHeaders(1_500));
    const root = await h.mention('billing: a slow one');
    await h.waitFor('the turn sent', () => h.agent.queued() === 0);
    await h.mention('handover k8s', { threadTs: root.ts });
    await h.waitFor('the refusal', () => h.fake.ephemerals.some((e) => e.text === HAND_OVER_BUSY));
    await h.settled(1);
    expect((await h.store.getSession(sessionIdOf(keyOf(root.ts))))?.binding).toBe(BINDING);
    expect(ops.requests).toHaveLength(0);
  });

  it('offers a thread that names no agent a button per agent, named from its card, for its author only; the press removes the picker and a second press does nothing', async () => {
    const ops = await startContractAgent({ version: '1.0', card: { name: 'Kubernetes\nHelper' } });
    agents.push(ops);
    const h = await startSlackHarness();
    open.push(h);
    await shareChannel(h, ops);
    h.fake.addUser({ id: 'U0BOB', name: 'bob' });
    const vague = await h.mention('why do the pods restart?');
    await h.waitFor('the picker', () => h.fake.ephemerals.some((e) => e.blocks !== undefined));
    const picker = h.fake.ephemerals.find((e) => e.blocks !== undefined);
    if (picker === undefined) throw new Error('no picker');
    const actions = (picker.blocks ?? []).find((b) => (b as { type: string }).type === 'actions') as {
      block_id: string;
      elements: Array<{ action_id: string; value: string; text: { text: string } }>;
    };
    // Each agent by its card's name (line breaks folded) and its handle.
    expect(actions.elements.map((e) => e.text.text)).toEqual([
      'Contract Agent (billing)',
      'Kubernetes Helper (k8s)',
    ]);
    const k8s = actions.elements[1];
    if (k8s === undefined) throw new Error('no k8s button');
    const button = { actionId: k8s.action_id, blockId: actions.block_id, value: k8s.value, text: 'k8s' };
    // Someone else cannot choose for the author, and the author's picker stays.
    await h.pressEphemeral(picker, button, 'U0BOB');
    await h.waitFor('the refusal', () =>
      h.fake.ephemerals.some((e) => e.user === 'U0BOB' && e.text === PICK_NOT_YOURS),
    );
    expect(await bindingOf(h, vague.ts)).toBeUndefined();
    expect(h.fake.ephemerals.find((e) => e.ts === picker.ts)?.deleted).toBeUndefined();

    await h.pressEphemeral(picker, button, ADA);
    await h.settled(1);
    expect(await bindingOf(h, vague.ts)).toBe(OPS);
    expect(JSON.stringify(ops.requests.map((r) => r.body))).toContain('why do the pods restart?');
    expect(h.botMessages(vague.ts).length).toBeGreaterThan(0);
    // The picker note is gone, removed through the press's response_url.
    expect(h.fake.ephemerals.find((e) => e.ts === picker.ts)?.deleted).toBe(true);
    expect(h.fake.responses.filter((r) => r.ok)).toHaveLength(1);

    // A second press of the same picker (a stale copy, a double click) does nothing more.
    const said = h.fake.ephemerals.length;
    const sent = ops.requests.length;
    const posted = h.fake.callsOf('chat.postMessage').length;
    const again = await h.pressEphemeral(picker, button, ADA);
    expect(again.status).toBe(200);
    await h.waitFor('the second press handled', () => h.fake.responses.length === 2);
    expect(h.fake.ephemerals).toHaveLength(said);
    expect(ops.requests).toHaveLength(sent);
    expect(h.fake.callsOf('chat.postMessage')).toHaveLength(posted);
    expect(h.events.filter((e) => e.type === 'turn.received')).toHaveLength(1);
  });

  it('names a button by its handle alone when the agent card cannot be read', async () => {
    const ops = await startContractAgent({ version: '1.0', card: { status: 503 } });
    agents.push(ops);
    const h = await startSlackHarness();
    open.push(h);
    await shareChannel(h, ops);
    await h.mention('anyone there?');
    await h.waitFor('the picker', () => h.fake.ephemerals.some((e) => e.blocks !== undefined));
    const blocks = h.fake.ephemerals.find((e) => e.blocks !== undefined)?.blocks ?? [];
    const actions = blocks.find((b) => (b as { type: string }).type === 'actions') as {
      elements: Array<{ text: { text: string } }>;
    };
    expect(actions.elements.map((e) => e.text.text)).toEqual(['Contract Agent (billing)', 'k8s']);
  });
});

function keyOf(threadId: string) {
  return { surface: 'slack', workspaceId: 'T0001', channelId: CHANNEL, threadId };
}
