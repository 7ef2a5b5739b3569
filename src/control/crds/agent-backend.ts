import { z } from 'zod';
import { RESERVED_HEADER_NAMES } from '../../a2a/options.js';
import { withRules } from './cel.js';
import { cardSummary, conditions, resourceSchema, secretKeyRef } from './common.js';
import { DURATION_PATTERN, parseDuration } from './duration.js';

/**
 * AgentBackend: where and how to reach agents (docs/architecture.md, "Custom resources"). This file
 * is the one definition: the controller parses with these schemas and ./generate.ts writes the
 * CRD's openAPIV3Schema from them.
 */

export const DIALECTS = ['a2a', 'kagent-v1'] as const;

/**
 * Headers the A2A client sets itself (src/a2a/options.ts): a static header may not replace
 * them, so a backend cannot override the Binding's identity. Refused at admission already.
 */
export { RESERVED_HEADER_NAMES };

const reservedCelList = RESERVED_HEADER_NAMES.map((n) => `'${n}'`).join(', ');

const httpUrl = withRules(
  z
    .url({ protocol: /^https?$/, error: 'must be an http or https URL' })
    .max(2048)
    .meta({
      description:
        'On a2a, the agent endpoint as written (its card is read at <url>/.well-known/agent-card.json). ' +
        'On kagent-v1, the base URL of kagent’s A2A gateway: a Binding’s endpoint is <url>/agents/<namespace>/<name>.',
    }),
  [
    {
      cel: "isURL(self) && url(self).getScheme() in ['http', 'https'] && url(self).getHostname() != ''",
      message: 'must be an http or https URL with a host',
      check: (u) => {
        try {
          const parsed = new URL(u);
          return (parsed.protocol === 'http:' || parsed.protocol === 'https:') && parsed.hostname !== '';
        } catch {
          return false;
        }
      },
    },
  ],
);

const header = withRules(
  z.object({
    name: z
      .string()
      .min(1)
      .max(128)
      .regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, 'must be a valid HTTP header name')
      .meta({
        description: 'Header name; not one the client sets itself (Authorization, X-User-Id, A2A-*, …).',
      }),
    value: z
      .string()
      .max(8192)
      // biome-ignore lint/suspicious/noControlCharactersInRegex: the NUL is what it refuses; \x00 also reads the same in Go's RE2, which checks this pattern in the API server
      .regex(/^[^\r\n\x00]*$/, 'must not contain a line break or NUL')
      .optional()
      .meta({ description: 'The value, written in the resource. For a secret value use valueFrom.' }),
    valueFrom: z
      .object({ secretKeyRef })
      .optional()
      .meta({ description: 'Read the value from a Secret in the AgentBackend’s namespace.' }),
  }),
  [
    {
      cel: 'has(self.value) != has(self.valueFrom)',
      message: 'exactly one of value and valueFrom must be set',
      check: (h) => (h.value === undefined) !== (h.valueFrom === undefined),
    },
    {
      cel: `!(self.name.lowerAscii() in [${reservedCelList}])`,
      message:
        'may not set a header the client sets itself (Authorization, X-User-Id, A2A-*, Content-Type, …)',
      check: (h) => !(RESERVED_HEADER_NAMES as readonly string[]).includes(h.name.toLowerCase()),
    },
  ],
);

export type BackendHeader = z.output<typeof header>;

const headers = withRules(
  z
    .array(header)
    .max(32)
    .meta({ description: 'Static headers sent on every request to the agent, card fetch included.' }),
  [
    {
      cel: 'self.all(h, self.filter(o, o.name.lowerAscii() == h.name.lowerAscii()).size() == 1)',
      message: 'header names must be distinct (case-insensitively)',
      check: (hs) => new Set(hs.map((h) => h.name.toLowerCase())).size === hs.length,
    },
  ],
);

/** P-1: the bounds of spec.polling, in milliseconds. */
export const POLL_INTERVAL_MIN_MS = 500;
export const POLL_INTERVAL_MAX_MS = 5 * 60_000;
export const POLL_TIMEOUT_MIN_MS = 10_000;
export const POLL_TIMEOUT_MAX_MS = 7 * 24 * 3_600_000;
export const DEFAULT_POLL_INTERVAL = '2s';
export const DEFAULT_POLL_TIMEOUT = '1h';

function boundedDuration(description: string, min: string, max: string, minMs: number, maxMs: number) {
  return withRules(
    z
      .string()
      .max(32)
      .regex(DURATION_PATTERN, 'must be a duration such as 2s, 10m or 1h30m')
      .meta({ format: 'duration', description }),
    [
      {
        cel: `duration(self) >= duration('${min}') && duration(self) <= duration('${max}')`,
        message: `must be between ${min} and ${max}`,
        check: (d) => {
          const ms = parseDuration(d);
          return ms !== undefined && ms >= minMs && ms <= maxMs;
        },
      },
    ],
  );
}

const polling = withRules(
  z
    .object({
      enabled: z.boolean().default(false).meta({
        description:
          'Reach agents whose card does not advertise streaming: turns are sent with the non-streaming SendMessage and followed with GetTask. A card that streams keeps streaming.',
      }),
      interval: boundedDuration(
        `How often a running task is read with GetTask (default ${DEFAULT_POLL_INTERVAL}); a task that stays the same is read less often, up to 8 times this.`,
        '500ms',
        '5m',
        POLL_INTERVAL_MIN_MS,
        POLL_INTERVAL_MAX_MS,
      ).default(DEFAULT_POLL_INTERVAL),
      timeout: boundedDuration(
        `How long a turn may run before its task is cancelled and the thread told (default ${DEFAULT_POLL_TIMEOUT}).`,
        '10s',
        '168h',
        POLL_TIMEOUT_MIN_MS,
        POLL_TIMEOUT_MAX_MS,
      ).default(DEFAULT_POLL_TIMEOUT),
    })
    .meta({ description: 'Polling for agents that do not stream; off by default.' }),
  [
    {
      cel: 'duration(self.interval) < duration(self.timeout)',
      message: 'interval must be shorter than timeout',
      check: (p) => (parseDuration(p.interval) ?? 0) < (parseDuration(p.timeout) ?? 0),
    },
  ],
);

export type BackendPolling = z.output<typeof polling>;

export const agentBackendSpec = z
  .object({
    dialect: z.enum(DIALECTS).meta({
      description:
        'a2a: any agent serving A2A 1.0 or 0.3 over JSON-RPC. kagent-v1: kagent, with its human-in-the-loop extension.',
    }),
    url: httpUrl,
    headers: headers.optional(),
    polling: polling.optional(),
  })
  .meta({ description: 'Where and how to reach agents.' });

export type AgentBackendSpec = z.output<typeof agentBackendSpec>;

export const agentBackendStatus = z.object({
  observedGeneration: z.number().int().nonnegative().optional(),
  conditions: conditions.optional(),
  dialect: z.enum(DIALECTS).optional(),
  card: cardSummary
    .extend({
      binding: z.string().max(253).meta({ description: 'The Binding whose client read this card.' }),
    })
    .optional()
    .meta({ description: 'The agent card last accepted through one of this backend’s Bindings.' }),
  polling: z
    .object({
      enabled: z.boolean(),
      interval: z.string().max(32),
      timeout: z.string().max(32),
    })
    .optional()
    .meta({ description: 'The polling settings in force (spec.polling with its defaults), when enabled.' }),
  bindings: z
    .number()
    .int()
    .nonnegative()
    .optional()
    .meta({ description: 'How many Bindings in this namespace use this backend.' }),
});

export type AgentBackendStatus = z.output<typeof agentBackendStatus>;

export const agentBackend = resourceSchema('AgentBackend', agentBackendSpec, agentBackendStatus);

export type AgentBackend = z.output<typeof agentBackend>;
