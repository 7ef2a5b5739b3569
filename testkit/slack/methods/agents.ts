import { chars, isRecord, SlackRefusal, str } from '../values.js';
import type { Handler, Workspace } from '../workspace.js';

/**
 * The agent platform: agents.sessions.setStatus and agents.sessions.rename (thread sessions),
 * assistant.threads.setSuggestedPrompts, and conversations.members (who may stop a task).
 * Arguments, errors and tiers as docs/reference/slack.md records them from Slack's method
 * pages; where Slack documents no error code the choice is marked assumed.
 */

/** Non-agent apps: setSuggestedPrompts documents not_agent_app; the session methods do not (assumed). */
function requireAgent(ws: Workspace): void {
  if (!ws.agentApp) throw new SlackRefusal('not_agent_app');
}

function threadOf(ws: Workspace, args: Record<string, unknown>): { channel: string; threadTs: string } {
  const channel = str(args, 'channel_id');
  if (channel === undefined || channel === '') throw new SlackRefusal('channel_not_found');
  ws.checkChannel({ channel });
  const raw = str(args, 'thread_ts');
  if (raw === undefined || raw === '') throw new SlackRefusal('thread_ts_required');
  // Assumed: Slack's pages name no code for a thread that does not exist.
  const threadTs = ws.resolveThread(channel, { thread_ts: raw });
  if (threadTs === undefined) throw new SlackRefusal('thread_ts_required');
  return { channel, threadTs };
}

/** Titles are 1–200 characters (agents.sessions.rename; setStatus's title at most 200). */
function title(args: Record<string, unknown>, required: boolean): string | undefined {
  const t = str(args, 'title');
  if (t === undefined) {
    if (required) throw new SlackRefusal('invalid_arguments', ['[ERROR] missing required field: title']);
    return undefined;
  }
  if (chars(t) < 1 || chars(t) > 200)
    throw new SlackRefusal('invalid_arguments', ['[ERROR] must be 1-200 characters [json-pointer:/title]']);
  return t;
}

export function agentMethods(ws: Workspace): Record<string, Handler> {
  return {
    'agents.sessions.setStatus': (args, warnings) => {
      requireAgent(ws);
      const { channel, threadTs } = threadOf(ws, args);
      const status = str(args, 'status');
      if (status === undefined)
        throw new SlackRefusal('invalid_arguments', ['[ERROR] missing required field: status']);
      const given = title(args, false);
      const initiator = str(args, 'initiator_user_id');
      if (initiator !== undefined && !ws.users.has(initiator)) throw new SlackRefusal('user_not_found');
      const session = ws.setSessionStatus(channel, threadTs, status, 'agents.sessions.setStatus', {
        ...(given === undefined ? {} : { title: given }),
        ...(initiator === undefined ? {} : { initiator }),
      });
      if (!ws.subscribedToStop) warnings.push('missing_agent_session_stopped_event_subscription');
      return { status: session.status, agent_status: session.status, title: session.title };
    },

    'agents.sessions.rename': (args) => {
      requireAgent(ws);
      const { channel, threadTs } = threadOf(ws, args);
      const given = title(args, true) ?? '';
      const session = ws.sessions.get(`${channel} ${threadTs}`);
      if (session === undefined) throw new SlackRefusal('session_not_found');
      session.title = given;
      session.titles.push(given);
      return { title: given };
    },

    'assistant.threads.setSuggestedPrompts': (args) => {
      requireAgent(ws);
      const channel = str(args, 'channel_id');
      if (channel === undefined || channel === '') throw new SlackRefusal('channel_not_found');
      ws.checkChannel({ channel });
      // In an agent_view app thread_ts makes the call fail silently; the fake refuses it loudly.
      if (args.thread_ts !== undefined)
        throw new SlackRefusal('invalid_thread_ts', [
          '[ERROR] thread_ts is for the legacy assistant container',
        ]);
      const prompts = args.prompts;
      if (!Array.isArray(prompts) || prompts.length === 0 || prompts.length > 4)
        throw new SlackRefusal('invalid_arguments', [
          '[ERROR] prompts: 1 to 4 items [json-pointer:/prompts]',
        ]);
      const list = prompts.map((p, i) => {
        if (
          !isRecord(p) ||
          typeof p.title !== 'string' ||
          typeof p.message !== 'string' ||
          p.title === '' ||
          p.message === ''
        )
          throw new SlackRefusal('invalid_arguments', [
            `[ERROR] title and message required [json-pointer:/prompts/${i}]`,
          ]);
        return { title: p.title, message: p.message };
      });
      const listTitle = str(args, 'title');
      ws.suggestedPrompts.push({
        channel,
        prompts: list,
        ...(listTitle === undefined ? {} : { title: listTitle }),
      });
      return {};
    },

    // Tier 4; conversations:read (channels:read, groups:read, im:read, mpim:read by kind).
    'conversations.members': (args) => {
      const channel = ws.checkChannel(args);
      const rawLimit = str(args, 'limit');
      const limit = rawLimit === undefined ? 100 : Number(rawLimit);
      if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new SlackRefusal('invalid_limit');
      const rawCursor = str(args, 'cursor');
      const start = rawCursor === undefined || rawCursor === '' ? 0 : Number(rawCursor);
      if (!Number.isInteger(start) || start < 0) throw new SlackRefusal('invalid_cursor');
      const all = ws.channelMembers(channel);
      const next = start + limit < all.length ? String(start + limit) : '';
      return { members: all.slice(start, start + limit), response_metadata: { next_cursor: next } };
    },
  };
}
