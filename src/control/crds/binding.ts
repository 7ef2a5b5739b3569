import { z } from 'zod';
import { TRIGGER_KINDS } from '../../core/triggers.js';
import { DIALECTS } from './agent-backend.js';
import { identity } from './binding-identity.js';
import { keyedList, uniqueList, withRules } from './cel.js';
import {
  cardSummary,
  conditions,
  namespaceName,
  objectName,
  resourceSchema,
  secretKeyRef,
} from './common.js';
import { DURATION_PATTERN, parseDuration } from './duration.js';

/**
 * Binding: who talks to which agent, and how (docs/architecture.md, "Custom resources"). The one
 * definition of its shape: parsed with these schemas, and the CRD schema is generated from them.
 */

/** Questions wait between these bounds; beyond a week a paused task is as good as lost. */
export const QUESTION_TIMEOUT_MIN_MS = 1000;
export const QUESTION_TIMEOUT_MAX_MS = 7 * 24 * 3_600_000;

const slackChannelId = z
  .string()
  .min(3)
  .max(32)
  .regex(/^[CG][A-Z0-9]+$/, 'must be a Slack channel id (C… or G…)');

const slack = z
  .object({
    channels: uniqueList(
      z
        .array(slackChannelId)
        .max(256)
        .meta({ description: 'Slack channel ids (not names) whose threads reach the agent.' }),
      'channels',
    ).default([]),
    allowDirectMessages: z.boolean().default(false).meta({
      description: 'Whether direct messages to the app reach this Binding (at most one per workspace).',
    }),
    teamId: z
      .string()
      .max(32)
      .regex(/^[TE][A-Z0-9]+$/, 'must be a Slack team id (T… or E…)')
      .optional()
      .meta({ description: 'The workspace the channels are in; unset: any workspace of the install.' }),
    handle: z
      .string()
      .regex(/^[a-z][a-z0-9-]{0,23}$/, 'must be 1–24 lowercase letters, digits or -, starting with a letter')
      .optional()
      .meta({
        description:
          'A short name that lets several Bindings share a channel: a thread that starts with it (`@Agent Kourier billing: …`) goes to this Binding. Every Binding on a shared channel needs its own.',
      }),
    feedback: z
      .object({
        toAgent: z.boolean().default(false).meta({
          description:
            'Whether the feedback people give an answer (each person’s latest press) is sent to the agent as message metadata on the next turn of the thread. Never a turn by itself.',
        }),
      })
      .optional()
      .meta({ description: 'The feedback buttons under finished answers.' }),
  })
  .meta({ description: 'Where in Slack this Binding listens.' });

/** A Microsoft Entra object id (a GUID). */
const entraId = z
  .string()
  .regex(
    /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/,
    'must be a Microsoft Entra object id (a GUID)',
  );

/** A Teams channel's or group chat's conversation id (a channel's is the channel id). */
const teamsConversationId = z
  .string()
  .min(10)
  .max(256)
  .regex(
    /^19:[A-Za-z0-9_.=@-]+@thread\.[a-z0-9]+$/,
    'must be a Teams channel or group chat id (19:…@thread.tacv2, 19:…@thread.v2)',
  );

const teams = z
  .object({
    tenantId: z
      .string()
      .regex(
        /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/,
        'must be a tenant id (a GUID)',
      )
      .meta({
        description:
          'The Microsoft Entra tenant the conversations are in; the install must allow it too (TEAMS_TENANTS).',
      }),
    channels: uniqueList(
      z.array(teamsConversationId).max(256).meta({
        description:
          'Teams channel ids, and group chat ids, whose conversations reach the agent (a channel post that mentions the app, and its replies, are one thread).',
      }),
      'channels',
    ).default([]),
    allowPersonalChats: z.boolean().default(false).meta({
      description:
        'Whether people’s personal chats with the app in this tenant reach this Binding (at most one per tenant).',
    }),
  })
  .meta({ description: 'Where in Microsoft Teams this Binding listens (docs/teams.md).' });

const questionTimeout = withRules(
  z.string().max(32).regex(DURATION_PATTERN, 'must be a duration such as 10m, 1h30m or 90s').meta({
    format: 'duration',
    description: 'How long a question waits for its answer before the task is cancelled; unset: no limit.',
  }),
  [
    {
      cel: "duration(self) >= duration('1s') && duration(self) <= duration('168h')",
      message: 'must be between 1s and 168h',
      check: (d) => {
        const ms = parseDuration(d);
        return ms !== undefined && ms >= QUESTION_TIMEOUT_MIN_MS && ms <= QUESTION_TIMEOUT_MAX_MS;
      },
    },
  ],
);

const toolApprovals = withRules(
  z
    .object({
      enabled: z.boolean().default(false),
      approverGroups: uniqueList(
        z
          .array(
            z
              .string()
              .min(2)
              .max(32)
              .regex(/^S[A-Z0-9]+$/, 'must be a Slack user group id (S…)'),
          )
          .max(32)
          .meta({ description: 'Slack user group ids whose members may approve a tool call.' }),
        'approverGroups',
      ).default([]),
      approvers: uniqueList(
        z
          .array(
            z
              .string()
              .min(3)
              .max(32)
              .regex(/^[UW][A-Z0-9]+$/, 'must be a Slack user id (U… or W…)'),
          )
          .max(100)
          .meta({
            description:
              'Slack user ids of people who may approve a tool call, besides the members of approverGroups (user groups are a paid Slack plan feature; a free workspace names its approvers here).',
          }),
        'approvers',
      ).default([]),
      teams: z
        .object({
          approverGroups: uniqueList(
            z.array(entraId).max(32).meta({
              description:
                'Microsoft Entra group object ids whose members may approve a tool call in Teams (transitive membership, asked of Microsoft Graph).',
            }),
            'approverGroups',
          ).default([]),
          approvers: uniqueList(
            z
              .array(
                z
                  .string()
                  .min(3)
                  .max(320)
                  .regex(
                    /^([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}|[^\s@]+@[^\s@]+)$/,
                    'must be a Microsoft Entra user object id or an email',
                  ),
              )
              .max(100)
              .meta({
                description:
                  'People who may approve in Teams: Entra user object ids, or emails (matched against their email or UPN).',
              }),
            'approvers',
          ).default([]),
        })
        .optional()
        .meta({ description: 'Who may approve in Microsoft Teams, whose people and groups have Entra ids.' }),
    })
    .meta({ description: 'Tool approvals (kagent-v1): who may let the agent run a tool.' }),
  [
    {
      cel: '!self.enabled || size(self.approverGroups) > 0 || size(self.approvers) > 0 || (has(self.teams) && (size(self.teams.approverGroups) > 0 || size(self.teams.approvers) > 0))',
      message:
        'tool approvals are enabled but nobody may approve: name approverGroups or approvers (Slack), or teams.approverGroups or teams.approvers',
      check: (t) =>
        !t.enabled ||
        t.approverGroups.length > 0 ||
        t.approvers.length > 0 ||
        (t.teams !== undefined && t.teams.approverGroups.length + t.teams.approvers.length > 0),
    },
  ],
);

/** A cron expression of five fields; croner checks it in full when the Binding is reconciled. */
const CRON_PATTERN = /^\S+( \S+){4}$/;
/** An IANA time zone name's shape; whether the zone exists is checked when reconciled. */
const TIME_ZONE_PATTERN = /^[A-Za-z][A-Za-z0-9_+-]*(\/[A-Za-z0-9_+-]+){0,2}$/;

const trigger = withRules(
  z.object({
    name: z
      .string()
      .min(1)
      .max(63)
      .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, 'must be a DNS-1123 label')
      .meta({
        description: 'Names the trigger; a webhook is served at /triggers/<namespace>/<binding>/<name>.',
      }),
    kind: z.enum(TRIGGER_KINDS).default('alertmanager').meta({
      description:
        'alertmanager (its webhook payload, version 4), webhook (a small generic JSON shape), or schedule (a cron expression).',
    }),
    instruction: z.string().min(1).max(4096).meta({
      description: 'What the agent is asked to do; the alert fields (or the run) follow as untrusted data.',
    }),
    tokenSecretRef: secretKeyRef.optional().meta({
      description:
        'The bearer token a webhook sender presents (Authorization: Bearer …); webhook kinds only.',
    }),
    slack: z
      .object({
        channel: slackChannelId.meta({ description: 'One of spec.slack.channels.' }),
      })
      .optional()
      .meta({
        description: 'The Slack channel the trigger’s threads start in; unset: the web chat (local mode).',
      }),
    teams: z
      .object({
        channel: teamsConversationId.meta({ description: 'One of spec.teams.channels (a channel).' }),
      })
      .optional()
      .meta({
        description:
          'The Teams channel the trigger’s threads start in (a new post there); instead of slack. The app must have been added to its team.',
      }),
    schedule: z
      .object({
        cron: z
          .string()
          .min(9)
          .max(128)
          .regex(CRON_PATTERN, 'must be a cron expression of five fields (minute hour day month weekday)')
          .meta({
            description: 'Five fields: minute hour day-of-month month day-of-week, e.g. "0 9 * * 1-5".',
          }),
        timeZone: z
          .string()
          .min(1)
          .max(64)
          .regex(TIME_ZONE_PATTERN, 'must be an IANA time zone name such as Europe/Berlin')
          .default('UTC')
          .meta({ description: 'The IANA time zone the expression is read in.' }),
      })
      .optional()
      .meta({ description: 'When a schedule trigger runs: one new thread per run (schedule kind only).' }),
    onResolved: z.enum(['notice', 'turn']).default('notice').meta({
      description:
        'When every alert of a group has resolved: notice (a message in the thread) or turn (the message, and a turn telling the agent).',
    }),
  }),
  [
    {
      cel: "self.kind == 'schedule' ? (has(self.schedule) && !has(self.tokenSecretRef)) : (has(self.tokenSecretRef) && !has(self.schedule))",
      message:
        'a schedule trigger needs schedule (and no tokenSecretRef); a webhook trigger needs tokenSecretRef (and no schedule)',
      check: (t) =>
        t.kind === 'schedule'
          ? t.schedule !== undefined && t.tokenSecretRef === undefined
          : t.tokenSecretRef !== undefined && t.schedule === undefined,
    },
  ],
);

export type Trigger = z.output<typeof trigger>;

const triggerLimits = z
  .object({
    threadsPerMinute: z.number().int().min(1).max(60).default(5).meta({
      description:
        'New threads the triggers may open in any minute; further alert groups join one storm thread.',
    }),
  })
  .meta({ description: 'Bounds of the triggers, so an alert storm cannot flood a channel or the agent.' });

export const bindingSpec = withRules(
  z
    .object({
      backendRef: z
        .object({ name: objectName.meta({ description: 'An AgentBackend in the Binding’s own namespace.' }) })
        .meta({ description: 'The AgentBackend to reach the agent through.' }),
      agent: z
        .object({ namespace: namespaceName, name: objectName })
        .optional()
        .meta({ description: 'The kagent agent (kagent-v1 backends only, where it is required).' }),
      slack: slack.optional(),
      teams: teams.optional(),
      identity,
      interactions: z
        .object({
          questionTimeout: questionTimeout.optional(),
          toolApprovals: toolApprovals.optional(),
        })
        .optional()
        .meta({ description: 'How questions the agent asks, and its tool approvals, are handled in chat.' }),
      triggers: keyedList(
        z.array(trigger).max(32).meta({
          description: 'Alert webhooks and schedules that start threads with this agent (docs/triggers.md).',
        }),
        'name',
        'triggers',
      ).optional(),
      triggerLimits: triggerLimits.optional(),
    })
    .meta({ description: 'Who talks to which agent, and how.' }),
  [
    {
      cel: '!has(self.triggers) || self.triggers.all(t, !has(t.slack) || (has(self.slack) && t.slack.channel in self.slack.channels))',
      message: 'a trigger’s slack.channel must be one of spec.slack.channels',
      check: (spec) =>
        (spec.triggers ?? []).every(
          (t) => t.slack === undefined || (spec.slack?.channels ?? []).includes(t.slack.channel),
        ),
    },
    {
      cel: '!has(self.triggers) || self.triggers.all(t, !has(t.teams) || (has(self.teams) && t.teams.channel in self.teams.channels))',
      message: 'a trigger’s teams.channel must be one of spec.teams.channels',
      check: (spec) =>
        (spec.triggers ?? []).every(
          (t) => t.teams === undefined || (spec.teams?.channels ?? []).includes(t.teams.channel),
        ),
    },
    {
      cel: '!has(self.triggers) || self.triggers.all(t, !(has(t.slack) && has(t.teams)))',
      message: 'a trigger starts its threads in one place: slack or teams, not both',
      check: (spec) => (spec.triggers ?? []).every((t) => t.slack === undefined || t.teams === undefined),
    },
  ],
);

export type BindingSpec = z.output<typeof bindingSpec>;

export const bindingStatus = z.object({
  observedGeneration: z.number().int().nonnegative().optional(),
  conditions: conditions.optional(),
  backend: z
    .object({
      name: z.string().max(253),
      dialect: z.enum(DIALECTS),
      endpoint: z
        .string()
        .max(4096)
        .meta({ description: 'Where every call goes (the card is read below it).' }),
    })
    .optional()
    .meta({ description: 'The AgentBackend this Binding resolved to.' }),
  card: cardSummary.optional().meta({ description: 'The agent card of the last successful fetch.' }),
  lastCardFetch: z
    .object({
      time: z.string().meta({ format: 'date-time' }),
      result: z.string().max(64).meta({ description: 'Accepted, or the reason it was refused.' }),
    })
    .optional()
    .meta({ description: 'When the card was last read for this Binding, and how it went.' }),
  channels: z
    .array(z.string().max(32))
    .max(256)
    .optional()
    .meta({ description: 'The channels this Binding serves now (claimed, allowed and not in conflict).' }),
  triggers: z
    .array(
      z.object({
        name: z.string().max(63),
        kind: z.string().max(32),
        path: z
          .string()
          .max(512)
          .optional()
          .meta({ description: 'Where a webhook trigger takes deliveries, on the broker’s HTTP port.' }),
        ready: z.boolean(),
        message: z.string().max(1024).optional().meta({ description: 'Why it is not ready.' }),
        lastDelivery: z
          .object({
            time: z.string().meta({ format: 'date-time' }),
            result: z.string().max(64).meta({
              description:
                'opened, continued, resolved, throttled, duplicate, ignored, invalid, ran or skipped.',
            }),
          })
          .optional()
          .meta({ description: 'The last delivery (or run), as recorded by whichever replica took it.' }),
      }),
    )
    .max(32)
    .optional()
    .meta({ description: 'Each trigger, its path and its last delivery.' }),
});

export type BindingStatus = z.output<typeof bindingStatus>;

export const binding = resourceSchema('Binding', bindingSpec, bindingStatus);

export type Binding = z.output<typeof binding>;
