/**
 * Resources the CRDs must accept or refuse, shared by the zod test (crd-fixtures.test.ts) and the
 * real API server test (test/integration/k8s-crds.test.ts): the same table run through both
 * proves the CEL rules and the zod refinements agree.
 */

export type Manifest = { [key: string]: unknown };

export interface Fixture {
  title: string;
  kind: 'AgentBackend' | 'Binding';
  spec: Manifest;
  /** For refused fixtures: a phrase both zod's and the API server's message contain. */
  refusedWith?: string;
}

const binding = (spec: Manifest): Manifest => ({
  backendRef: { name: 'agents' },
  identity: { userId: 'U123' },
  ...spec,
});

export const VALID: Fixture[] = [
  { title: 'a2a backend', kind: 'AgentBackend', spec: { dialect: 'a2a', url: 'https://agents.example/a2a' } },
  {
    title: 'kagent backend with headers',
    kind: 'AgentBackend',
    spec: {
      dialect: 'kagent-v1',
      url: 'http://kagent-controller.kagent:8083/api/a2a',
      headers: [
        { name: 'X-Team', value: 'payments' },
        { name: 'X-Api-Key', valueFrom: { secretKeyRef: { name: 'agent-key', key: 'key' } } },
      ],
    },
  },
  {
    title: 'a2a backend that polls, with the defaults',
    kind: 'AgentBackend',
    spec: { dialect: 'a2a', url: 'https://agents.example/a2a', polling: { enabled: true } },
  },
  {
    title: 'a2a backend that polls, with its own interval and timeout',
    kind: 'AgentBackend',
    spec: {
      dialect: 'a2a',
      url: 'https://agents.example/a2a',
      polling: { enabled: true, interval: '500ms', timeout: '2h30m' },
    },
  },
  { title: 'minimal binding', kind: 'Binding', spec: binding({}) },
  {
    title: 'a per-person binding exchanging at the identity provider',
    kind: 'Binding',
    spec: binding({
      identity: {
        perPerson: {
          audience: 'https://idp.example',
          exchange: {
            tokenUrl: 'https://idp.example/oauth/token',
            clientId: 'agentkourier',
            clientSecretRef: { name: 'idp', key: 'secret' },
            audience: 'urn:agent:support',
            scope: 'agent.use',
          },
        },
      },
    }),
  },
  {
    title: 'a per-person binding whose people sign in, a public client',
    kind: 'Binding',
    spec: binding({
      identity: { perPerson: { signIn: { issuer: 'https://idp.example', clientId: 'agentkourier' } } },
    }),
  },
  {
    title: 'tool approvals by people named one by one (a free Slack workspace has no user groups)',
    kind: 'Binding',
    spec: binding({ interactions: { toolApprovals: { enabled: true, approvers: ['U0ADA', 'W0BOB'] } } }),
  },
  {
    title: 'full binding',
    kind: 'Binding',
    spec: binding({
      agent: { namespace: 'kagent', name: 'k8s-agent' },
      slack: { channels: ['C0123ABCD', 'G0456EFGH'], allowDirectMessages: true, teamId: 'T0001' },
      identity: { tokenSecretRef: { name: 'agent-token', key: 'token' } },
      interactions: {
        questionTimeout: '1h30m',
        toolApprovals: { enabled: true, approverGroups: ['S0SRE'] },
      },
      triggers: [
        {
          name: 'alertmanager',
          instruction: 'Investigate this alert and suggest a fix.',
          tokenSecretRef: { name: 'alert-token', key: 'token' },
          slack: { channel: 'C0123ABCD' },
          onResolved: 'turn',
        },
        {
          name: 'hook',
          kind: 'webhook',
          instruction: 'Look into this.',
          tokenSecretRef: { name: 'alert-token', key: 'hook' },
        },
        {
          name: 'mornings',
          kind: 'schedule',
          instruction: 'Summarise the night’s incidents.',
          schedule: { cron: '0 9 * * 1-5', timeZone: 'Europe/Berlin' },
          slack: { channel: 'G0456EFGH' },
        },
      ],
      triggerLimits: { threadsPerMinute: 10 },
    }),
  },
  {
    title:
      'a binding in Microsoft Teams: a channel, personal chats, Teams approvers and an alert thread there',
    kind: 'Binding',
    spec: binding({
      teams: {
        tenantId: '72f988bf-86f1-41af-91ab-2d7cd011db47',
        channels: ['19:a1b2c3d4e5f6@thread.tacv2', '19:groupchat0example@thread.v2'],
        allowPersonalChats: true,
      },
      interactions: {
        toolApprovals: {
          enabled: true,
          teams: { approverGroups: ['0b6f3c1e-8d2a-4f5b-9c7e-1a2b3c4d5e6f'], approvers: ['ada@example.com'] },
        },
      },
      triggers: [
        {
          name: 'alerts',
          instruction: 'Look.',
          tokenSecretRef: { name: 't', key: 'k' },
          teams: { channel: '19:a1b2c3d4e5f6@thread.tacv2' },
        },
      ],
    }),
  },
];

export const INVALID: Fixture[] = [
  {
    title: 'an unknown dialect',
    kind: 'AgentBackend',
    spec: { dialect: 'grpc', url: 'https://agents.example' },
    refusedWith: 'dialect',
  },
  {
    title: 'a URL that is not http(s)',
    kind: 'AgentBackend',
    spec: { dialect: 'a2a', url: 'ftp://agents.example/a2a' },
    refusedWith: 'http or https URL',
  },
  {
    title: 'a header with both value and valueFrom',
    kind: 'AgentBackend',
    spec: {
      dialect: 'a2a',
      url: 'https://agents.example',
      headers: [{ name: 'X-Key', value: 'v', valueFrom: { secretKeyRef: { name: 's', key: 'k' } } }],
    },
    refusedWith: 'exactly one of value and valueFrom',
  },
  {
    title: 'a header that would replace the identity',
    kind: 'AgentBackend',
    spec: {
      dialect: 'a2a',
      url: 'https://agents.example',
      headers: [{ name: 'Authorization', value: 'Bearer x' }],
    },
    refusedWith: 'may not set a header the client sets itself',
  },
  {
    title: 'the same header twice in different case',
    kind: 'AgentBackend',
    spec: {
      dialect: 'a2a',
      url: 'https://agents.example',
      headers: [
        { name: 'X-Team', value: 'a' },
        { name: 'x-team', value: 'b' },
      ],
    },
    refusedWith: 'header names must be distinct',
  },
  {
    title: 'a polling interval below half a second',
    kind: 'AgentBackend',
    spec: { dialect: 'a2a', url: 'https://agents.example', polling: { enabled: true, interval: '100ms' } },
    refusedWith: 'must be between 500ms and 5m',
  },
  {
    title: 'a polling timeout beyond a week',
    kind: 'AgentBackend',
    spec: { dialect: 'a2a', url: 'https://agents.example', polling: { enabled: true, timeout: '200h' } },
    refusedWith: 'must be between 10s and 168h',
  },
  {
    title: 'a polling interval as long as its timeout',
    kind: 'AgentBackend',
    spec: {
      dialect: 'a2a',
      url: 'https://agents.example',
      polling: { enabled: true, interval: '5m', timeout: '1m' },
    },
    refusedWith: 'interval must be shorter than timeout',
  },
  {
    title: 'both tokenSecretRef and userId',
    kind: 'Binding',
    spec: binding({ identity: { userId: 'U1', tokenSecretRef: { name: 't', key: 'token' } } }),
    refusedWith: 'exactly one of tokenSecretRef, userId and perPerson',
  },
  {
    title: 'neither tokenSecretRef nor userId',
    kind: 'Binding',
    spec: binding({ identity: {} }),
    refusedWith: 'exactly one of tokenSecretRef, userId and perPerson',
  },
  {
    title: 'perPerson beside userId',
    kind: 'Binding',
    spec: binding({ identity: { userId: 'U1', perPerson: {} } }),
    refusedWith: 'exactly one of tokenSecretRef, userId and perPerson',
  },
  {
    title: 'perPerson with both an exchange and a sign-in',
    kind: 'Binding',
    spec: binding({
      identity: {
        perPerson: {
          exchange: {
            tokenUrl: 'https://idp.example/token',
            clientId: 'agentkourier',
            clientSecretRef: { name: 'idp', key: 'secret' },
          },
          signIn: { issuer: 'https://idp.example', clientId: 'agentkourier' },
        },
      },
    }),
    refusedWith: 'at most one of exchange and signIn may be set',
  },
  {
    title: 'a question timeout beyond a week',
    kind: 'Binding',
    spec: binding({ interactions: { questionTimeout: '200h' } }),
    refusedWith: 'must be between 1s and 168h',
  },
  {
    title: 'a question timeout that is no duration',
    kind: 'Binding',
    spec: binding({ interactions: { questionTimeout: 'ten minutes' } }),
    refusedWith: 'questionTimeout',
  },
  {
    title: 'tool approvals without approver groups or approvers',
    kind: 'Binding',
    spec: binding({ interactions: { toolApprovals: { enabled: true } } }),
    refusedWith:
      'nobody may approve: name approverGroups or approvers (Slack), or teams.approverGroups or teams.approvers',
  },
  {
    title: 'an approver named by a name instead of a Slack user id',
    kind: 'Binding',
    spec: binding({ interactions: { toolApprovals: { enabled: true, approvers: ['@ada'] } } }),
    refusedWith: 'approvers',
  },
  {
    title: 'a channel name instead of an id',
    kind: 'Binding',
    spec: binding({ slack: { channels: ['#general'] } }),
    refusedWith: 'channels',
  },
  {
    title: 'a webhook trigger without a token',
    kind: 'Binding',
    spec: binding({ triggers: [{ name: 'alerts', instruction: 'Look.' }] }),
    refusedWith: 'a webhook trigger needs tokenSecretRef',
  },
  {
    title: 'a schedule trigger with a token',
    kind: 'Binding',
    spec: binding({
      triggers: [
        {
          name: 'daily',
          kind: 'schedule',
          instruction: 'Summarise.',
          schedule: { cron: '0 9 * * *' },
          tokenSecretRef: { name: 't', key: 'k' },
        },
      ],
    }),
    refusedWith: 'a schedule trigger needs schedule',
  },
  {
    title: 'a trigger in a channel the Binding does not list',
    kind: 'Binding',
    spec: binding({
      slack: { channels: ['C0123ABCD'] },
      triggers: [
        {
          name: 'alerts',
          instruction: 'Look.',
          tokenSecretRef: { name: 't', key: 'k' },
          slack: { channel: 'C0999ZZZZ' },
        },
      ],
    }),
    refusedWith: 'must be one of spec.slack.channels',
  },
  {
    title: 'a Teams trigger in a channel the Binding does not list',
    kind: 'Binding',
    spec: binding({
      teams: { tenantId: '72f988bf-86f1-41af-91ab-2d7cd011db47', channels: ['19:a1b2c3d4e5f6@thread.tacv2'] },
      triggers: [
        {
          name: 'alerts',
          instruction: 'Look.',
          tokenSecretRef: { name: 't', key: 'k' },
          teams: { channel: '19:another0channel@thread.tacv2' },
        },
      ],
    }),
    refusedWith: 'must be one of spec.teams.channels',
  },
  {
    title: 'a trigger in Slack and in Teams at once',
    kind: 'Binding',
    spec: binding({
      slack: { channels: ['C0123ABCD'] },
      teams: { tenantId: '72f988bf-86f1-41af-91ab-2d7cd011db47', channels: ['19:a1b2c3d4e5f6@thread.tacv2'] },
      triggers: [
        {
          name: 'alerts',
          instruction: 'Look.',
          tokenSecretRef: { name: 't', key: 'k' },
          slack: { channel: 'C0123ABCD' },
          teams: { channel: '19:a1b2c3d4e5f6@thread.tacv2' },
        },
      ],
    }),
    refusedWith: 'slack or teams, not both',
  },
  {
    title: 'a Teams channel named by its display name',
    kind: 'Binding',
    spec: binding({
      teams: { tenantId: '72f988bf-86f1-41af-91ab-2d7cd011db47', channels: ['General discussion'] },
    }),
    refusedWith: 'teams.channels',
  },
  {
    title: 'a cron expression of six fields',
    kind: 'Binding',
    spec: binding({
      triggers: [{ name: 'daily', kind: 'schedule', instruction: 'Go.', schedule: { cron: '0 0 9 * * *' } }],
    }),
    refusedWith: 'cron',
  },
  {
    title: 'a storm limit of zero',
    kind: 'Binding',
    spec: binding({ triggerLimits: { threadsPerMinute: 0 } }),
    refusedWith: 'threadsPerMinute',
  },
  {
    title: 'no backendRef',
    kind: 'Binding',
    spec: { identity: { userId: 'U1' } },
    refusedWith: 'backendRef',
  },
];
