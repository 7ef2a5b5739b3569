import { z } from 'zod';

/**
 * The interactivity payloads a prompt receives, as Slack signs them: a press of one of its
 * buttons (block_actions) and a submitted modal (view_submission). Parsed at the edge; a
 * payload that does not parse is not one of ours.
 */

const slackId = z.string().regex(/^[A-Z0-9]{2,40}$/);

/** Slack user group ids: `S` and letters or digits. Anything else is never looked up. */
export const GROUP_ID = /^S[A-Z0-9]{2,30}$/;
const ts = z.string().regex(/^\d+\.\d+$/);

export const pressSchema = z.object({
  type: z.literal('block_actions'),
  user: z.object({ id: slackId, team_id: slackId.optional() }),
  team: z.object({ id: slackId }).nullish(),
  trigger_id: z.string().optional(),
  container: z.object({ channel_id: slackId, message_ts: ts, thread_ts: ts.optional() }),
  message: z
    .object({ ts: ts.optional(), thread_ts: ts.optional(), blocks: z.array(z.unknown()).optional() })
    .optional(),
  actions: z.array(z.object({ action_id: z.string(), value: z.string().optional() })).min(1),
});

export const submissionSchema = z.object({
  type: z.literal('view_submission'),
  user: z.object({ id: slackId, team_id: slackId.optional() }),
  view: z.object({
    callback_id: z.string(),
    private_metadata: z.string(),
    state: z.object({ values: z.record(z.string(), z.record(z.string(), z.unknown())) }).optional(),
  }),
});

export type Press = z.infer<typeof pressSchema>;

/** Where a press or a submission happened, and who made it. */
export interface Place {
  team: string;
  channel: string;
  threadTs: string;
  /** The prompt message. */
  messageTs: string;
  user: string;
}

/** The place of a press: the prompt message, its thread, the presser. */
export function placeOfPress(p: Press): Place {
  const threadTs = p.container.thread_ts ?? p.message?.thread_ts;
  return {
    team: p.team?.id ?? p.user.team_id ?? '',
    channel: p.container.channel_id,
    threadTs: threadTs ?? p.container.message_ts,
    messageTs: p.container.message_ts,
    user: p.user.id,
  };
}
