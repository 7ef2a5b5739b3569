import { afterEach, describe, expect, it } from 'vitest';
import {
  type ContractAgent,
  HITL_URI,
  kagentApproval,
  kagentAskUser,
  startContractAgent,
  type WireVersion,
} from './contract-agent.js';

// The kagent behaviours on the wire, read with plain fetch (the agent proves the client, so it
// is not proved with the client). Shapes follow kagent.md §1.6 and kagent's own source.

const agents: ContractAgent[] = [];
afterEach(async () => {
  await Promise.all(agents.splice(0).map((a) => a.close()));
});

async function start(version: WireVersion): Promise<ContractAgent> {
  const agent = await startContractAgent({ version, card: { extensions: [{ uri: HITL_URI }] } });
  agents.push(agent);
  return agent;
}

let nextId = 1;

type Json = Record<string, unknown>;

async function send(agent: ContractAgent, message: Json, activate = true): Promise<Json[]> {
  const headers: Record<string, string> = { 'Content-Type': 'application/json' };
  if (agent.version === '1.0') headers['A2A-Version'] = '1.0';
  if (activate) headers['A2A-Extensions'] = `https://example.com/other, ${HITL_URI}`;
  const method = agent.version === '1.0' ? 'SendStreamingMessage' : 'message/stream';
  const res = await fetch(agent.endpoint, {
    method: 'POST',
    headers,
    body: JSON.stringify({ jsonrpc: '2.0', id: nextId++, method, params: { message } }),
  });
  const text = await res.text();
  if (!res.headers.get('content-type')?.includes('text/event-stream')) return [JSON.parse(text) as Json];
  return text
    .split('\n\n')
    .filter((block) => block.startsWith('data:'))
    .map((block) => JSON.parse(block.slice('data:'.length)) as Json);
}

function userMessage(version: WireVersion, extra: Json): Json {
  return version === '1.0'
    ? { messageId: `u-${nextId}`, role: 'ROLE_USER', parts: [{ text: 'decision' }], ...extra }
    : {
        kind: 'message',
        messageId: `u-${nextId}`,
        role: 'user',
        parts: [{ kind: 'text', text: 'decision' }],
        ...extra,
      };
}

/** The last status update's message in a stream, in either wire version. */
function lastStatusMessage(version: WireVersion, envelopes: Json[]): Json | undefined {
  const updates = envelopes
    .map((e) => e.result as Json)
    .map((r) =>
      version === '1.0' ? (r.statusUpdate as Json | undefined) : r.kind === 'status-update' ? r : undefined,
    )
    .filter((u): u is Json => u !== undefined);
  return (updates.at(-1)?.status as Json | undefined)?.message as Json | undefined;
}

describe.each(['1.0', '0.3'] as const)('contract agent kagent behaviours at %s', (version) => {
  const twoTools = [
    { id: 'adk-conf-1', callId: 'call_a', name: 'add_numbers', args: { a: 2, b: 3 } },
    { id: 'adk-conf-2', callId: 'call_b', name: 'check_status', args: { service: 'api' } },
  ];

  it(`pauses with the HITL payload in the status message: extensions[] and metadata[URI] (${version})`, async () => {
    const agent = await start(version);
    agent.enqueue(kagentApproval(twoTools));
    const events = await send(agent, userMessage(version, {}));
    const message = lastStatusMessage(version, events);
    expect(message?.extensions).toEqual([HITL_URI]);
    expect((message?.metadata as Json | undefined)?.[HITL_URI]).toEqual({
      type: 'tool_approval_request',
      hint: "Tool 'add_numbers' requires approval before execution.; Tool 'check_status' requires approval before execution. (add_numbers, check_status)",
      tools: [
        { id: 'adk-conf-1', call_id: 'call_a', name: 'add_numbers', args: { a: 2, b: 3 } },
        { id: 'adk-conf-2', call_id: 'call_b', name: 'check_status', args: { service: 'api' } },
      ],
    });
    const state = [...agent.tasks.values()][0]?.status;
    expect(state?.state).toBe('input-required');
  });

  it(`sends only the hint text when the call did not ask for the extension (${version})`, async () => {
    const agent = await start(version);
    agent.enqueue(kagentAskUser([{ question: 'Which DB?', choices: ['PostgreSQL'] }]));
    const message = lastStatusMessage(version, await send(agent, userMessage(version, {}), false));
    expect(message?.extensions).toBeUndefined();
    expect(message?.metadata).toBeUndefined();
    expect(JSON.stringify(message?.parts)).toContain('Which DB?');
  });

  it(`refuses a reply with an id left out (-32603) and keeps the task paused (${version})`, async () => {
    const agent = await start(version);
    agent.enqueue(kagentApproval(twoTools));
    await send(agent, userMessage(version, {}));
    const task = [...agent.tasks.values()][0];
    const [reply] = await send(
      agent,
      userMessage(version, {
        taskId: task?.id,
        contextId: task?.contextId,
        extensions: [HITL_URI],
        metadata: {
          [HITL_URI]: { type: 'tool_approval_response', approvals: [{ id: 'adk-conf-1', approved: true }] },
        },
      }),
    );
    expect((reply?.error as Json | undefined)?.code).toBe(-32603);
    expect(agent.kagent.refused.map((r) => r.reason)).toEqual([
      'Tool approval response is missing ids: adk-conf-2',
    ]);
    expect(agent.kagent.ran).toEqual([]);
    expect(task?.status.state).toBe('input-required');
  });

  it(`runs only the approved tools, and treats a reply without the extension as text (${version})`, async () => {
    const agent = await start(version);
    agent.enqueue(kagentApproval(twoTools), kagentApproval(twoTools));
    await send(agent, userMessage(version, {}));
    await send(agent, userMessage(version, {}));
    const [first, second] = [...agent.tasks.values()];
    const approvals = [
      { id: 'adk-conf-1', approved: true },
      { id: 'adk-conf-2', approved: false, rejection_reason: 'freeze' },
    ];
    const response = { [HITL_URI]: { type: 'tool_approval_response', approvals } };
    await send(
      agent,
      userMessage(version, {
        taskId: first?.id,
        contextId: first?.contextId,
        extensions: [HITL_URI],
        metadata: response,
      }),
    );
    await send(
      agent,
      userMessage(version, { taskId: second?.id, contextId: second?.contextId, metadata: response }),
    );
    expect(agent.kagent.ran.map((r) => [r.taskId, r.name])).toEqual([[first?.id, 'add_numbers']]);
    expect(agent.kagent.denied.map((r) => [r.name, r.reason])).toEqual([['check_status', 'freeze']]);
    expect(agent.kagent.plain.map((p) => p.taskId)).toEqual([second?.id]);
    expect(first?.status.state).toBe('completed');
    expect(second?.status.state).toBe('completed');
  });
});
