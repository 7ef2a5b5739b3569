import { z } from 'zod';
import type { CallContext, SlackApi } from '../web-api/client.js';
import { SlackPlatformError } from '../web-api/errors.js';

/**
 * The agent platform's Web API methods (docs/reference/slack.md, "Agent sessions"): a thread's
 * session status and title, the suggested prompts of a DM, and the members of a channel (who
 * may stop a task). Bolt 5.1 has no helpers for them, so they go through SlackApi's generic
 * call, with the same budget, schema check and span as every other call.
 */

/** The four statuses of an agent session (a closed list: free text is refused). */
export type SessionStatus = 'processing' | 'active' | 'suspended' | 'closed';

const setStatusAnswer = z.object({ status: z.string().optional(), title: z.string().optional() });
const anyOk = z.object({});
const membersPage = z.object({
  members: z.array(z.string()),
  response_metadata: z.object({ next_cursor: z.string().optional() }).optional(),
});

/**
 * Refusals that mean the workspace (or this app) has no agent sessions: the app is not declared
 * an agent, the feature is off, the method is unknown, or the token lacks the scope.
 */
const NO_SESSIONS = new Set([
  'not_agent_app',
  'feature_disabled',
  'unknown_method',
  'missing_scope',
  'not_allowed_token_type',
]);

export function meansNoAgentPlatform(error: unknown): boolean {
  return error instanceof SlackPlatformError && NO_SESSIONS.has(error.slackError);
}

export interface PromptSuggestion {
  title: string;
  message: string;
}

export class AgentApi {
  readonly #api: SlackApi;

  constructor(api: SlackApi) {
    this.#api = api;
  }

  /** Creates the thread's session (with `title`, counted only then) or changes its status. */
  setStatus(
    ctx: CallContext,
    args: { channel: string; threadTs: string; status: SessionStatus; title?: string },
  ): Promise<{ title: string | undefined }> {
    return this.#api
      .call(
        'agents.sessions.setStatus',
        ctx,
        {
          channel_id: args.channel,
          thread_ts: args.threadTs,
          status: args.status,
          ...(args.title === undefined ? {} : { title: args.title }),
        },
        setStatusAnswer,
      )
      .then((answer) => ({ title: answer.title }));
  }

  async rename(ctx: CallContext, args: { channel: string; threadTs: string; title: string }): Promise<void> {
    await this.#api.call(
      'agents.sessions.rename',
      ctx,
      { channel_id: args.channel, thread_ts: args.threadTs, title: args.title },
      anyOk,
    );
  }

  /** A DM's suggested prompts; never with thread_ts (in an agent_view app that fails silently). */
  async setSuggestedPrompts(
    ctx: CallContext,
    args: { channel: string; title: string; prompts: readonly PromptSuggestion[] },
  ): Promise<void> {
    await this.#api.call(
      'assistant.threads.setSuggestedPrompts',
      ctx,
      { channel_id: args.channel, title: args.title, prompts: args.prompts },
      anyOk,
    );
  }

  /** Whether `user` is a member of `channel` (paged; at most `maxPages` pages of 1,000). */
  async isMember(ctx: CallContext, channel: string, user: string, maxPages = 20): Promise<boolean> {
    let cursor: string | undefined;
    for (let page = 0; page < maxPages; page++) {
      const answer = await this.#api.call(
        'conversations.members',
        ctx,
        { channel, limit: 1000, ...(cursor === undefined ? {} : { cursor }) },
        membersPage,
      );
      if (answer.members.includes(user)) return true;
      cursor = answer.response_metadata?.next_cursor;
      if (cursor === undefined || cursor === '') return false;
    }
    return false;
  }
}
