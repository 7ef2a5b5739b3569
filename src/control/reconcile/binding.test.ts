// Over our ~450-line rule as one piece: every row of planBinding (identity, backend, channels,
// settings, triggers, status) is read against the same fixtures, beside the others.
import { describe, expect, it } from 'vitest';
import { backendObject, bindingObject, secrets } from '../../../test/control/objects.js';
import { StreamingNotAdvertisedError } from '../../core/agent/errors.js';
import { KAGENT_HITL_EXTENSION } from '../../dialects/index.js';
import { conflictsByBinding, DIRECT_MESSAGES_ENTRY } from '../channels.js';
import { findCondition } from '../status.js';
import { bindingStatus, type CardState, planBinding } from './binding.js';
import { acceptedCard, refusedCard } from './card.js';
import type { SecretView } from './secrets.js';

const now = new Date('2026-11-30T10:00:00Z');

const okCard: CardState = {
  since: '2026-11-30T09:59:00Z',
  outcome: acceptedCard({
    name: 'Echo',
    description: '',
    agentVersion: '1.2.3',
    protocolVersion: '1.0',
    cardFormat: '1.0',
    streaming: true,
    extensions: [],
    jsonRpcInterfaces: [],
    skills: [],
  }),
};

describe('planBinding', () => {
  it('[DT-2] builds the client of an a2a Binding: endpoint as written, the identity, static headers', () => {
    const plan = planBinding({
      binding: bindingObject({ identity: { tokenSecretRef: { name: 'tok', key: 'token' } } }),
      backend: backendObject({
        headers: [
          { name: 'X-Team', value: 'payments' },
          { name: 'X-Key', valueFrom: { secretKeyRef: { name: 'key', key: 'k' } } },
        ],
      }),
      secrets: secrets({ tok: { token: 's3cret' }, key: { k: 'api-key' } }),
      allowedChannels: undefined,
    });
    expect(plan.live?.client).toEqual({
      endpoint: 'http://agent.example/a2a',
      identity: { kind: 'bearer', token: 's3cret' },
      headers: { 'X-Team': 'payments', 'X-Key': 'api-key' },
      extensions: [],
    });
    expect(plan.live?.ref).toBe('team-a/chat');
    expect(plan.backendCondition.status).toBe('True');
    expect(plan.credentialsCondition.status).toBe('True');
  });

  it('[DT-2] reaches a kagent agent at url/agents/<namespace>/<name> and asks for the HITL extension', () => {
    const plan = planBinding({
      binding: bindingObject({ agent: { namespace: 'kagent', name: 'k8s-agent' } }),
      backend: backendObject({ dialect: 'kagent-v1', url: 'http://kagent.example/api/a2a/' }),
      secrets: secrets({}),
      allowedChannels: undefined,
    });
    expect(plan.live?.client.endpoint).toBe('http://kagent.example/api/a2a/agents/kagent/k8s-agent');
    expect(plan.live?.client.extensions).toEqual([KAGENT_HITL_EXTENSION]);
    expect(plan.live?.dialect).toBe('kagent-v1');
  });

  it('[S-8] a per-person Binding: its assertions are for the AgentBackend (its url by default), in the header it names', () => {
    const plan = planBinding({
      binding: bindingObject({ identity: { perPerson: {} } }),
      backend: backendObject(),
      secrets: secrets({}),
      allowedChannels: undefined,
    });
    expect(plan.live?.client.identity).toEqual({
      kind: 'person',
      audience: 'http://agent.example/a2a',
      header: 'Authorization',
      userIdHeader: false,
    });
    expect(plan.credentialsCondition.status).toBe('True');
    // On kagent-v1, X-User-Id names the person too; an audience and a header of its own.
    const kagent = planBinding({
      binding: bindingObject({
        agent: { namespace: 'kagent', name: 'k8s-agent' },
        identity: { perPerson: { audience: 'urn:kagent:k8s-agent', header: 'X-Agent-Identity' } },
      }),
      backend: backendObject({ dialect: 'kagent-v1', url: 'http://kagent.example/api/a2a/' }),
      secrets: secrets({}),
      allowedChannels: undefined,
    });
    expect(kagent.live?.client.identity).toEqual({
      kind: 'person',
      audience: 'urn:kagent:k8s-agent',
      header: 'X-Agent-Identity',
      userIdHeader: true,
    });
  });

  it('a per-person Binding with an exchange: the client secret from its Secret, the token endpoint the assertion’s audience', () => {
    const exchange = {
      tokenUrl: 'https://idp.example/oauth/token',
      clientId: 'agentkourier',
      clientSecretRef: { name: 'idp', key: 'secret' },
      audience: 'urn:agent:support',
      scope: 'agent.use',
    };
    const plan = planBinding({
      binding: bindingObject({ identity: { perPerson: { exchange } } }),
      backend: backendObject(),
      secrets: secrets({ idp: { secret: 'client-s3cret' } }),
      allowedChannels: undefined,
    });
    expect(plan.live?.client.identity).toEqual({
      kind: 'person',
      audience: 'https://idp.example/oauth/token',
      header: 'Authorization',
      userIdHeader: false,
      exchange: {
        tokenUrl: 'https://idp.example/oauth/token',
        clientId: 'agentkourier',
        clientSecret: 'client-s3cret',
        audience: 'urn:agent:support',
        scope: 'agent.use',
        agent: plan.backend?.name,
      },
    });
    // Its Secret missing: the Binding says so, and has no client (never a call without it).
    const missing = planBinding({
      binding: bindingObject({ identity: { perPerson: { exchange } } }),
      backend: backendObject(),
      secrets: secrets({}),
      allowedChannels: undefined,
    });
    expect(missing.live).toBeUndefined();
    expect(missing.credentialsCondition).toMatchObject({ status: 'False' });
    expect(missing.credentialsCondition.message).toContain('identity.perPerson.exchange.clientSecretRef');
  });

  it('refuses a kagent-v1 Binding without spec.agent as InvalidSpec (a rule CEL cannot check)', () => {
    const plan = planBinding({
      binding: bindingObject(),
      backend: backendObject({ dialect: 'kagent-v1' }),
      secrets: secrets({}),
      allowedChannels: undefined,
    });
    expect(plan.live).toBeUndefined();
    expect(plan.backendCondition).toMatchObject({ status: 'False', reason: 'InvalidSpec' });
    expect(plan.backendCondition.message).toContain('spec.agent');
  });

  it('reports BackendNotFound when the namespace has no such AgentBackend', () => {
    const plan = planBinding({
      binding: bindingObject(),
      backend: undefined,
      secrets: secrets({}),
      allowedChannels: undefined,
    });
    expect(plan.live).toBeUndefined();
    expect(plan.backendCondition).toMatchObject({ status: 'False', reason: 'BackendNotFound' });
    expect(plan.backendCondition.message).toContain('"agents"');
  });

  it.each([
    ['a missing Secret', secrets({}), 'Secret "tok" not found'],
    ['a missing key', secrets({ tok: { other: 'x' } }), 'has no key "token"'],
    ['an unreadable Secret', secrets({}, ['tok']), 'cannot be read'],
  ])('reports SecretNotFound for %s, without the value', (_what, lookup, message) => {
    const plan = planBinding({
      binding: bindingObject({ identity: { tokenSecretRef: { name: 'tok', key: 'token' } } }),
      backend: backendObject(),
      secrets: lookup,
      allowedChannels: undefined,
    });
    expect(plan.live).toBeUndefined();
    expect(plan.credentialsCondition).toMatchObject({ status: 'False', reason: 'SecretNotFound' });
    expect(plan.credentialsCondition.message).toContain(message);
  });

  it('reports SecretForbidden, with what to grant, when the control plane may not read the Secret', () => {
    const grant = 'the controller may not list Secrets in namespace "team-a": grant it';
    const plan = planBinding({
      binding: bindingObject({ identity: { tokenSecretRef: { name: 'tok', key: 'token' } } }),
      backend: backendObject(),
      secrets: (): SecretView => ({ kind: 'forbidden', message: grant }),
      allowedChannels: undefined,
    });
    expect(plan.live).toBeUndefined();
    expect(plan.credentialsCondition).toEqual({
      type: 'CredentialsResolved',
      status: 'False',
      reason: 'SecretForbidden',
      message: `identity.tokenSecretRef: Secret "tok" cannot be read: ${grant}`,
    });
  });

  it('reports a backend header whose Secret is missing on the Binding too', () => {
    const plan = planBinding({
      binding: bindingObject(),
      backend: backendObject({
        headers: [{ name: 'X-Key', valueFrom: { secretKeyRef: { name: 'key', key: 'k' } } }],
      }),
      secrets: secrets({}),
      allowedChannels: undefined,
    });
    expect(plan.live).toBeUndefined();
    expect(plan.credentialsCondition).toMatchObject({ status: 'False', reason: 'SecretNotFound' });
    expect(plan.credentialsCondition.message).toContain('AgentBackend "agents"');
  });

  it('refuses a token with a line break as InvalidSpec, naming the setting but not the token', () => {
    const plan = planBinding({
      binding: bindingObject({ identity: { tokenSecretRef: { name: 'tok', key: 'token' } } }),
      backend: backendObject(),
      secrets: secrets({ tok: { token: 'abc\ndef' } }),
      allowedChannels: undefined,
    });
    expect(plan.live).toBeUndefined();
    expect(plan.credentialsCondition.reason).toBe('InvalidSpec');
    expect(plan.credentialsCondition.message).not.toContain('abc');
  });

  it('routes spec.slack.feedback.toAgent to the Slack surface only when it is true', () => {
    const plan = (feedback?: { toAgent: boolean }) =>
      planBinding({
        binding: bindingObject({
          slack: {
            channels: ['C1AAA'],
            allowDirectMessages: false,
            ...(feedback === undefined ? {} : { feedback }),
          },
        }),
        backend: backendObject(),
        secrets: secrets({}),
        allowedChannels: undefined,
      }).live?.slack;
    expect(plan({ toAgent: true })?.feedbackToAgent).toBe(true);
    expect(plan({ toAgent: false })).not.toHaveProperty('feedbackToAgent');
    expect(plan()).not.toHaveProperty('feedbackToAgent');
  });

  it('routes a Binding with spec.teams on the Teams surface, its tenant (in lower case) as the workspace', () => {
    const channel = '19:0a1b2c3d4e5f@thread.tacv2';
    const plan = planBinding({
      binding: bindingObject({
        teams: {
          tenantId: 'AB12CD34-0000-4000-8000-00000000000A',
          channels: [channel],
          allowPersonalChats: true,
        },
      }),
      backend: backendObject(),
      secrets: secrets({}),
      allowedChannels: undefined,
    });
    expect(plan.live?.teams).toEqual({
      channels: [channel],
      allowDirectMessages: true,
      workspaceId: 'ab12cd34-0000-4000-8000-00000000000a',
    });
    const slackOnly = planBinding({
      binding: bindingObject({ slack: { channels: ['C1AAA'], allowDirectMessages: false } }),
      backend: backendObject(),
      secrets: secrets({}),
      allowedChannels: undefined,
    });
    expect(slackOnly.live?.teams).toBeUndefined();
  });

  it('keeps channels the namespace may not claim out of the registry', () => {
    const plan = planBinding({
      binding: bindingObject({ slack: { channels: ['C1AAA', 'C2BBB'], allowDirectMessages: false } }),
      backend: backendObject(),
      secrets: secrets({}),
      allowedChannels: ['C1AAA'],
    });
    expect(plan.live?.slack.channels).toEqual(['C1AAA']);
    expect(plan.refusedChannels).toEqual(['C2BBB']);
  });

  it('takes direct messages only when the namespace allowlist names them, and says so in status', () => {
    const dmBinding = bindingObject({ slack: { channels: ['C1AAA'], allowDirectMessages: true } });
    const observe = (allowedChannels: readonly string[] | undefined) =>
      planBinding({ binding: dmBinding, backend: backendObject(), secrets: secrets({}), allowedChannels });

    // A namespace allowed no channels, and no DMs, takes neither.
    const none = observe([]);
    expect(none.live?.slack).toMatchObject({ channels: [], allowDirectMessages: false });
    expect(none.refusedDirectMessages).toBe(true);
    // Channels but not DMs.
    const channelsOnly = observe(['C1AAA']);
    expect(channelsOnly.live?.slack).toMatchObject({ channels: ['C1AAA'], allowDirectMessages: false });
    const status = bindingStatus({
      binding: dmBinding,
      plan: channelsOnly,
      card: okCard,
      conflicts: [],
      previous: undefined,
      now,
    });
    expect(findCondition(status.conditions, 'ChannelsAssigned')).toMatchObject({
      status: 'False',
      reason: 'ChannelNotAllowed',
    });
    expect(findCondition(status.conditions, 'ChannelsAssigned')?.message).toContain(
      'may not take direct messages',
    );
    // The DM entry grants DMs, and no channel of that name.
    const both = observe(['C1AAA', DIRECT_MESSAGES_ENTRY]);
    expect(both.live?.slack).toMatchObject({ channels: ['C1AAA'], allowDirectMessages: true });
    expect(both.refusedDirectMessages).toBe(false);
    // Without the controller setting, nothing is restricted.
    expect(observe(undefined).live?.slack.allowDirectMessages).toBe(true);
  });

  it('a namespace refused DMs cannot block another team’s DM Binding with a conflict', () => {
    const dm = { channels: [], allowDirectMessages: true };
    const allowed = planBinding({
      binding: bindingObject({ slack: dm }, 'dm', 'team-a'),
      backend: backendObject(),
      secrets: secrets({}),
      allowedChannels: [DIRECT_MESSAGES_ENTRY],
    });
    const refused = planBinding({
      binding: bindingObject({ slack: dm }, 'grab', 'team-b'),
      backend: backendObject(),
      secrets: secrets({}),
      allowedChannels: [],
    });
    const live = [allowed.live, refused.live].flatMap((l) => (l === undefined ? [] : [l]));
    expect(
      conflictsByBinding(
        [],
        live.map((l) => ({ ref: l.ref, routes: { slack: l.slack } })),
      ).size,
    ).toBe(0);
  });

  it('[Q-4] turns questionTimeout into settings.questionTimeoutMs; unset means no limit', () => {
    const timed = planBinding({
      binding: bindingObject({ interactions: { questionTimeout: '10m' } }),
      backend: backendObject(),
      secrets: secrets({}),
      allowedChannels: undefined,
    });
    expect(timed.live?.settings.questionTimeoutMs).toBe(600_000);
    const untimed = planBinding({
      binding: bindingObject(),
      backend: backendObject(),
      secrets: secrets({}),
      allowedChannels: undefined,
    });
    expect(untimed.live?.settings.questionTimeoutMs).toBeNull();
  });

  it('[P-1] takes spec.polling of the backend: the client accepts a card without streaming, the engine polls at its interval', () => {
    const polled = planBinding({
      binding: bindingObject(),
      backend: backendObject({ polling: { enabled: true, interval: '3s', timeout: '30m' } }),
      secrets: secrets({}),
      allowedChannels: undefined,
    });
    expect(polled.live?.client.polling).toBe(true);
    expect(polled.live?.settings.polling).toEqual({ intervalMs: 3_000, timeoutMs: 1_800_000 });
    for (const polling of [undefined, { enabled: false, interval: '3s', timeout: '30m' }]) {
      const plain = planBinding({
        binding: bindingObject(),
        backend: backendObject(polling === undefined ? {} : { polling }),
        secrets: secrets({}),
        allowedChannels: undefined,
      });
      expect(plain.live?.client.polling).toBeUndefined();
      expect(plain.live?.settings.polling).toBeUndefined();
    }
  });
});

describe('bindingStatus', () => {
  it('[P-1] says the card was accepted without streaming, its tasks followed by polling', () => {
    const plan = planBinding({
      binding: bindingObject(),
      backend: backendObject({ polling: { enabled: true, interval: '2s', timeout: '1h' } }),
      secrets: secrets({}),
      allowedChannels: undefined,
    });
    const polledCard: CardState =
      okCard.outcome.ok === true
        ? { ...okCard, outcome: { ok: true, card: { ...okCard.outcome.card, streaming: false } } }
        : okCard;
    const status = bindingStatus({
      binding: bindingObject(),
      plan,
      card: polledCard,
      conflicts: [],
      previous: undefined,
      now,
    });
    expect(findCondition(status.conditions, 'CardAccepted')).toMatchObject({ status: 'True' });
    expect(findCondition(status.conditions, 'CardAccepted')?.message).toContain(
      'without streaming: its tasks are followed by polling',
    );
    expect(status.card?.streaming).toBe(false);
  });
  const plan = planBinding({
    binding: bindingObject(),
    backend: backendObject(),
    secrets: secrets({}),
    allowedChannels: undefined,
  });

  it('is Ready with the card summary when the card was accepted', () => {
    const status = bindingStatus({
      binding: bindingObject(),
      plan,
      card: okCard,
      conflicts: [],
      previous: undefined,
      now,
    });
    expect(findCondition(status.conditions, 'Ready')).toMatchObject({
      status: 'True',
      reason: 'Ready',
      observedGeneration: 2,
    });
    expect(status.observedGeneration).toBe(2);
    expect(status.card).toMatchObject({
      name: 'Echo',
      version: '1.2.3',
      protocolVersion: '1.0',
      streaming: true,
    });
    expect(status.backend).toEqual({ name: 'agents', dialect: 'a2a', endpoint: 'http://agent.example/a2a' });
    expect(status.lastCardFetch).toEqual({ time: okCard.since, result: 'CardAccepted' });
  });

  it('[DT-3] is not Ready, with StreamingNotAdvertised, when the card lacks streaming', () => {
    const card: CardState = { since: okCard.since, outcome: refusedCard(new StreamingNotAdvertisedError()) };
    const status = bindingStatus({
      binding: bindingObject(),
      plan,
      card,
      conflicts: [],
      previous: undefined,
      now,
    });
    expect(findCondition(status.conditions, 'Ready')).toMatchObject({
      status: 'False',
      reason: 'StreamingNotAdvertised',
    });
    expect(findCondition(status.conditions, 'CardAccepted')?.message).toContain('capabilities.streaming');
    expect(status.card).toBeUndefined();
  });

  it('names the other Binding of a channel conflict', () => {
    const status = bindingStatus({
      binding: bindingObject({ slack: { channels: ['C1AAA'], allowDirectMessages: false } }),
      plan,
      card: okCard,
      conflicts: [{ what: 'C1AAA', others: ['team-b/other'] }],
      previous: undefined,
      now,
    });
    const channels = findCondition(status.conditions, 'ChannelsAssigned');
    expect(channels).toMatchObject({ status: 'False', reason: 'ChannelConflict' });
    expect(channels?.message).toContain('team-b/other');
    expect(findCondition(status.conditions, 'Ready')?.reason).toBe('ChannelConflict');
  });

  it('keeps transition times and the card time when nothing changed, so no write follows', () => {
    const first = bindingStatus({
      binding: bindingObject(),
      plan,
      card: okCard,
      conflicts: [],
      previous: undefined,
      now,
    });
    const later = new Date('2026-11-30T11:00:00Z');
    const reread: CardState = { ...okCard, since: '2026-11-30T10:59:00Z' };
    const second = bindingStatus({
      binding: bindingObject(),
      plan,
      card: reread,
      conflicts: [],
      previous: first,
      now: later,
    });
    expect(second).toEqual(first);
  });

  it('says the card is pending before the first read, and not checked when unresolved', () => {
    const pending = bindingStatus({
      binding: bindingObject(),
      plan,
      card: undefined,
      conflicts: [],
      previous: undefined,
      now,
    });
    expect(findCondition(pending.conditions, 'CardAccepted')).toMatchObject({
      status: 'Unknown',
      reason: 'Pending',
    });
    const unresolved = planBinding({
      binding: bindingObject(),
      backend: undefined,
      secrets: secrets({}),
      allowedChannels: undefined,
    });
    const status = bindingStatus({
      binding: bindingObject(),
      plan: unresolved,
      card: undefined,
      conflicts: [],
      previous: undefined,
      now,
    });
    expect(findCondition(status.conditions, 'CardAccepted')?.reason).toBe('NotChecked');
    expect(findCondition(status.conditions, 'Ready')?.reason).toBe('BackendNotFound');
  });
});
