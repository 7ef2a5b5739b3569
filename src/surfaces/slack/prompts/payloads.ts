import { createHmac, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';

/**
 * What a prompt's interactions carry: Slack's signed payloads, parsed at the edge, and the opaque
 * tokens on its buttons.
 */

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

/**
 * The ids on a prompt's buttons. A button carries only an opaque token: no session, task, tool
 * or question data (Slack shows a button's value to anyone who inspects the message, and an
 * approval keyed by data the clicker can read invites forgery; docs/reference/slack.md,
 * "Buttons and approvals").
 *
 * The token is an HMAC, under a server secret, of the session, the question's key and what the
 * button does ("approve tool 0", "deny all", "choice 2 of question 1"). Nothing is stored per
 * button: a press names its message's thread (Slack puts channel and thread in the payload, and
 * signs the payload), the thread is the session, the store holds its pending question durably
 * (engine's PendingQuestion: payload and key), and the press is whichever of that question's
 * actions has the token. A button of an older question, of another thread, or forged without
 * the secret matches nothing. Every replica derives the same secret from the bot token, so a
 * press is understood by any replica and after any restart.
 */

/** What a press does; `index` is a tool call's (or a question's) position in the request. */
export type PromptAction =
  | { kind: 'approve'; index: number }
  | { kind: 'deny'; index: number }
  | { kind: 'approve-all' }
  | { kind: 'deny-all' }
  | { kind: 'choice'; question: number; choice: number }
  /** Opens the modal that answers the questions in words (free text, several choices). */
  | { kind: 'answer' };

export function actionName(action: PromptAction): string {
  switch (action.kind) {
    case 'approve':
    case 'deny':
      return `${action.kind}:${action.index}`;
    case 'choice':
      return `choice:${action.question}:${action.choice}`;
    default:
      return action.kind;
  }
}

const TOKEN_CHARS = 22; // 132 bits of base64url

export class PromptTokens {
  readonly #key: Buffer;

  /** `secret`: the bot token (every replica has it) or a dedicated secret. */
  constructor(secret: string) {
    this.#key = createHmac('sha256', 'agentkourier/slack-prompt-token/v1').update(secret).digest();
  }

  /** The token of one action of one question in one session. */
  token(sessionId: string, questionKey: string, action: PromptAction): string {
    return createHmac('sha256', this.#key)
      .update(`${sessionId}\n${questionKey}\n${actionName(action)}`)
      .digest('base64url')
      .slice(0, TOKEN_CHARS);
  }

  /** Which of `candidates` carries `token`, compared in constant time; undefined: none. */
  find(
    sessionId: string,
    questionKey: string,
    candidates: readonly PromptAction[],
    token: string,
  ): PromptAction | undefined {
    if (token.length !== TOKEN_CHARS) return undefined;
    const given = Buffer.from(token);
    let found: PromptAction | undefined;
    for (const action of candidates) {
      const expected = Buffer.from(this.token(sessionId, questionKey, action));
      if (expected.length === given.length && timingSafeEqual(expected, given) && found === undefined)
        found = action;
    }
    return found;
  }
}
