import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CardChecker } from '../../src/control/card-check.js';
import { LiveClients } from '../../src/control/live-clients.js';
import type { LiveSpec } from '../../src/control/reconcile/binding.js';
import { LiveRegistry } from '../../src/core/registry.js';
import { type ContractAgent, startContractAgent } from '../peers/contract-agent/contract-agent.js';

/** Live clients and card checks against the contract agent over real HTTP. */

let agent: ContractAgent;

beforeEach(async () => {
  agent = await startContractAgent({ version: '1.0' });
});

afterEach(async () => {
  await agent.close();
});

function spec(token: string, channels: string[] = ['C1AAA']): LiveSpec {
  return {
    ref: 'team-a/chat',
    dialect: 'a2a',
    client: {
      endpoint: agent.endpoint,
      identity: { kind: 'bearer', token },
      headers: { 'X-Team': 'a' },
      extensions: [],
    },
    settings: { questionTimeoutMs: null },
    slack: { channels, allowDirectMessages: false },
    toolApprovals: { enabled: false, approverGroups: [], approvers: [] },
  };
}

const cardGets = () =>
  agent.requests.filter((r) => r.httpMethod === 'GET' && r.path.endsWith('/.well-known/agent-card.json'));

describe('live clients', () => {
  it('[DT-8] reconfigures the same client on a credential change, and the card is read again with it', async () => {
    const registry = new LiveRegistry();
    const clients = new LiveClients(registry);
    const cards = new CardChecker({ retryBaseMs: 1000, retryMaxMs: 8000, recheckMs: 60_000 });

    const first = clients.apply(spec('token-one'));
    const a = await cards.check('team-a/chat', first.client, first.fingerprint);
    expect(a.state.outcome.ok).toBe(true);
    expect(cardGets().map((r) => r.headers.authorization)).toEqual(['Bearer token-one']);
    expect(cardGets()[0]?.headers['x-team']).toBe('a');

    // Nothing changed: the remembered result, no request.
    await cards.check('team-a/chat', first.client, first.fingerprint);
    expect(cardGets()).toHaveLength(1);

    const second = clients.apply(spec('token-two'));
    expect(second.client).toBe(first.client);
    expect(second.fingerprint).not.toBe(first.fingerprint);
    expect(registry.get('team-a/chat')?.client).toBe(first.client);
    await cards.check('team-a/chat', second.client, second.fingerprint);
    expect(cardGets().map((r) => r.headers.authorization)).toEqual(['Bearer token-one', 'Bearer token-two']);
  });

  it('[DT-3] reports StreamingNotAdvertised and retries with a growing delay', async () => {
    agent.setCard({ streaming: false });
    let now = 0;
    const clients = new LiveClients(new LiveRegistry());
    const cards = new CardChecker({ retryBaseMs: 1000, retryMaxMs: 3000, recheckMs: 60_000 }, () => now);
    const live = clients.apply(spec('t'));
    const first = await cards.check('team-a/chat', live.client, live.fingerprint);
    expect(first.state.outcome).toMatchObject({ ok: false, reason: 'StreamingNotAdvertised' });
    expect(first.nextInMs).toBe(1000);
    now += 1000;
    const second = await cards.check('team-a/chat', live.client, live.fingerprint);
    expect(second.nextInMs).toBe(2000);
    expect(second.state.since).toBe(first.state.since);
    now += 2000;
    agent.setCard({});
    const third = await cards.check('team-a/chat', live.client, live.fingerprint);
    expect(third.state.outcome.ok).toBe(true);
    expect(third.nextInMs).toBe(60_000);
    expect(cardGets()).toHaveLength(3);
  });

  it('[DT-1] reports an agent without a JSON-RPC interface', async () => {
    agent.setCard({ interfaces: 'grpc-only' });
    const live = new LiveClients(new LiveRegistry()).apply(spec('t'));
    const result = await new CardChecker({ retryBaseMs: 1, retryMaxMs: 1, recheckMs: 1 }).check(
      'r',
      live.client,
      live.fingerprint,
    );
    expect(result.state.outcome).toMatchObject({ ok: false, reason: 'NoJSONRPCInterface' });
  });

  it('re-reads an accepted card when the recheck is due, past the client’s cache', async () => {
    let now = 0;
    const live = new LiveClients(new LiveRegistry()).apply(spec('t'));
    const cards = new CardChecker({ retryBaseMs: 1, retryMaxMs: 1, recheckMs: 5000 }, () => now);
    await cards.check('r', live.client, live.fingerprint);
    now += 5000;
    agent.setCard({ streaming: false });
    const result = await cards.check('r', live.client, live.fingerprint);
    expect(result.state.outcome).toMatchObject({ ok: false, reason: 'StreamingNotAdvertised' });
  });

  it('touches the registry only when routing changes, and removes the Binding on delete', () => {
    const registry = new LiveRegistry();
    let changes = 0;
    registry.onChange(() => changes++);
    const clients = new LiveClients(registry);
    clients.apply(spec('t'));
    clients.apply(spec('t'));
    expect(changes).toBe(1);
    clients.apply(spec('t', ['C2BBB']));
    expect(changes).toBe(2);
    expect(registry.forChannel('slack', 'C2BBB')?.ref).toBe('team-a/chat');
    clients.remove('team-a/chat');
    expect(registry.get('team-a/chat')).toBeUndefined();
    expect(registry.resolve('team-a/chat')).toBeUndefined();
  });
});
