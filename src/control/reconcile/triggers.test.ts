import { describe, expect, it } from 'vitest';
import { backendObject, bindingObject, secrets } from '../../../test/control/objects.js';
import { tokenDigest, tokenMatches } from '../../core/triggers.js';
import { type BindingSpec, bindingSpec } from '../crds/binding.js';
import { findCondition } from '../status.js';
import { bindingStatus, planBinding } from './binding.js';

const now = new Date('2026-11-30T10:00:00Z');

type Trigger = NonNullable<BindingSpec['triggers']>[number];
const webhook = (overrides: Partial<Trigger> = {}): Trigger => ({
  name: 'alerts',
  kind: 'alertmanager',
  instruction: 'Investigate.',
  onResolved: 'notice',
  tokenSecretRef: { name: 'alert-token', key: 'token' },
  slack: { channel: 'C0ALERTS' },
  ...overrides,
});

function plan(
  spec: Partial<BindingSpec>,
  found: Record<string, Record<string, string>> = {},
  backend = true,
) {
  return planBinding({
    binding: bindingObject({ slack: { channels: ['C0ALERTS'], allowDirectMessages: false }, ...spec }),
    backend: backend ? backendObject() : undefined,
    secrets: secrets({ 'alert-token': { token: 's3cret-token' }, ...found }),
    allowedChannels: undefined,
  });
}

describe('a Binding’s triggers', () => {
  it('resolves a webhook trigger: its token as a digest only, its channel, the storm limit', () => {
    const p = plan({ triggers: [webhook()], triggerLimits: { threadsPerMinute: 9 } });
    const [config] = p.triggers.configs;
    expect(config).toMatchObject({
      binding: 'team-a/chat',
      name: 'alerts',
      kind: 'alertmanager',
      target: { surface: 'slack', channel: 'C0ALERTS' },
      threadsPerMinute: 9,
    });
    expect(config?.problem).toBeUndefined();
    expect(JSON.stringify(config)).not.toContain('s3cret-token');
    expect(tokenMatches('s3cret-token', config?.tokenDigest ?? Buffer.alloc(32))).toBe(true);
    expect(tokenMatches('s3cret-tokeN', config?.tokenDigest ?? Buffer.alloc(32))).toBe(false);
    expect(p.triggers.condition).toMatchObject({ type: 'TriggersReady', status: 'True' });
  });

  it('points a trigger with teams.channel at that Teams channel, in the Binding’s tenant', () => {
    const channel = '19:alerts0channel@thread.tacv2';
    const { slack: _none, ...teamsOnly } = webhook();
    const p = plan({
      teams: {
        tenantId: 'AB12CD34-0000-4000-8000-00000000000A',
        channels: [channel],
        allowPersonalChats: false,
      },
      triggers: [{ ...teamsOnly, teams: { channel } }],
    });
    expect(p.triggers.configs[0]?.target).toEqual({
      surface: 'teams',
      channel,
      workspaceId: 'ab12cd34-0000-4000-8000-00000000000a',
    });
    // The spec's rules: one of the Binding's Teams channels, and one place only.
    const rules = bindingSpec.safeParse({
      backendRef: { name: 'b' },
      teams: { tenantId: 'ab12cd34-0000-4000-8000-00000000000a', channels: [channel] },
      triggers: [{ ...teamsOnly, teams: { channel: '19:other0channel@thread.tacv2' } }],
    });
    expect(rules.success).toBe(false);
  });

  it('marks a trigger not ready when its Secret is missing, its schedule does not read or its channel is not served', () => {
    const p = planBinding({
      binding: bindingObject({
        slack: { channels: ['C0ALERTS', 'C0OTHER'], allowDirectMessages: false },
        triggers: [
          webhook({ tokenSecretRef: { name: 'gone', key: 'token' } }),
          {
            name: 'mornings',
            kind: 'schedule',
            instruction: 'Summarise.',
            onResolved: 'notice',
            schedule: { cron: '0 25 * * *', timeZone: 'UTC' },
          },
          {
            name: 'berlin',
            kind: 'schedule',
            instruction: 'Summarise.',
            onResolved: 'notice',
            schedule: { cron: '0 9 * * *', timeZone: 'Europe/Nowhere' },
          },
          webhook({ name: 'other', slack: { channel: 'C0OTHER' } }),
        ],
      }),
      backend: backendObject(),
      secrets: secrets({ 'alert-token': { token: 't' } }),
      // The operator lets the namespace claim C0ALERTS only.
      allowedChannels: ['C0ALERTS'],
    });
    const problems = Object.fromEntries(p.triggers.configs.map((c) => [c.name, c.problem?.reason]));
    expect(problems).toStrictEqual({
      alerts: 'SecretNotFound',
      mornings: 'InvalidSpec',
      berlin: 'InvalidSpec',
      other: 'ChannelNotAllowed',
    });
    expect(p.triggers.configs[2]?.problem?.message).toContain('Europe/Nowhere');
    expect(p.triggers.condition).toMatchObject({ status: 'False', reason: 'SecretNotFound' });
    // The Binding is not Ready while one of its triggers is not.
    const status = bindingStatus({
      binding: bindingObject(),
      plan: p,
      card: undefined,
      conflicts: [],
      previous: undefined,
      now,
    });
    expect(findCondition(status.conditions, 'TriggersReady')?.status).toBe('False');
  });

  it('keeps the triggers of a Binding that cannot be served, each with the Binding’s reason (503, not 404)', () => {
    const p = plan({ triggers: [webhook()] }, {}, false);
    expect(p.live).toBeUndefined();
    expect(p.triggers.configs[0]?.problem).toStrictEqual({
      reason: 'BackendNotFound',
      message: 'the Binding is not ready: AgentBackend "agents" not found in namespace team-a',
    });
  });

  it('shows each trigger in status: kind, path for webhooks, readiness and the last delivery', () => {
    const p = plan({
      triggers: [
        webhook(),
        {
          name: 'mornings',
          kind: 'schedule',
          instruction: 'Summarise.',
          onResolved: 'notice',
          schedule: { cron: '0 9 * * 1-5', timeZone: 'Europe/Berlin' },
        },
      ],
    });
    const status = bindingStatus({
      binding: bindingObject(),
      plan: p,
      card: undefined,
      conflicts: [],
      previous: undefined,
      now,
      triggerActivity: new Map([
        ['alerts', { at: Date.parse('2026-11-30T09:58:12.345Z'), result: 'opened' }],
      ]),
    });
    expect(status.triggers).toStrictEqual([
      {
        name: 'alerts',
        kind: 'alertmanager',
        ready: true,
        path: '/triggers/team-a/chat/alerts',
        lastDelivery: { time: '2026-11-30T09:58:12Z', result: 'opened' },
      },
      { name: 'mornings', kind: 'schedule', ready: true },
    ]);
  });

  it('has no TriggersReady condition and no status entries without triggers', () => {
    const p = plan({});
    expect(p.triggers).toStrictEqual({ configs: [], condition: undefined });
    const status = bindingStatus({
      binding: bindingObject(),
      plan: p,
      card: undefined,
      conflicts: [],
      previous: undefined,
      now,
    });
    expect(status.triggers).toBeUndefined();
    expect(findCondition(status.conditions, 'TriggersReady')).toBeUndefined();
    expect(tokenDigest('x')).toHaveLength(32);
  });
});
