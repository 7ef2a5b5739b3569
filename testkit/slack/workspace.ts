import type { FakeAgentSession, FakeMessage, FakeSlack, FakeSlackOptions } from './api.js';
import { SLACK_LIMITS } from './api.js';
import { readChunks } from './block-kit.js';
import {
  type Args,
  chars,
  clone,
  compareTs,
  type Result,
  SlackRefusal,
  type StoredMessage,
  type StoredUser,
  str,
  TS_RE,
} from './values.js';

/**
 * The workspace the fake holds: its identity (team, bot, app), its channels' messages in ts
 * order, people and user groups, ephemerals, reactions and modals, and the rules every method
 * shares (which channel and thread a call means, a message's text, its JSON as Slack returns it).
 * The methods (./methods/) read and change it; the server (./server.ts) only routes to them.
 */

/** agents.sessions.setStatus: the four statuses an agent session can have. */
export const SESSION_STATUSES: ReadonlySet<string> = new Set(['processing', 'active', 'suspended', 'closed']);

/** One Web API method: its arguments in, the rest of `{ok: true, …}` out, or a SlackRefusal thrown. */
export type Handler = (args: Args, warnings: string[]) => Result;

export class Workspace {
  readonly teamId: string;
  readonly botUserId: string;
  readonly botId: string;
  readonly appId: string;
  readonly teamName: string;
  readonly clock: () => number;
  readonly longText: 'refuse' | 'truncate';
  readonly blocksTextLimit: number;
  readonly repliesMaxLimit: number;
  readonly ephemerals: FakeSlack['ephemerals'] = [];
  readonly reactions: FakeSlack['reactions'] = [];
  readonly views: FakeSlack['views'] = [];
  /** Agent sessions by `${channel} ${thread root ts}` (agents.sessions.*, ./methods/agents.ts). */
  readonly sessions = new Map<string, FakeAgentSession>();
  /** Suggested prompts set per DM channel, latest last. */
  readonly suggestedPrompts: FakeSlack['suggestedPrompts'] = [];
  readonly agentApp: boolean;
  readonly subscribedToStop: boolean;

  readonly store = new Map<string, StoredMessage[]>(); // channel → messages in ts order
  /** `${channel} ${ts}` → the message, for find(): a channel may hold thousands (the bench's). */
  private readonly byTs = new Map<string, StoredMessage>();
  readonly users = new Map<string, StoredUser>();
  readonly groups = new Map<string, { users: string[]; disabled: boolean }>();
  private readonly members = new Set<string>(); // `${channel} ${user}` for users seen posting in a channel
  private readonly channels: Set<string> | undefined;
  private lastTs = 0n;

  constructor(options: FakeSlackOptions) {
    this.teamId = options.teamId ?? 'T0001';
    this.botUserId = options.botUserId ?? 'U0BOT';
    this.botId = options.botId ?? 'B0BOT';
    this.appId = options.appId ?? 'A0APP';
    this.teamName = options.teamName ?? 'Fake Team';
    this.clock = options.clock ?? Date.now;
    this.channels = options.channels ? new Set(options.channels) : undefined;
    this.longText = options.longText ?? 'refuse';
    this.blocksTextLimit = options.blocksTextLimit ?? SLACK_LIMITS.blocksTextTotal;
    this.repliesMaxLimit = options.repliesMaxLimit ?? 1000;
    this.agentApp = options.agentApp ?? true;
    this.subscribedToStop = options.subscribedToStop ?? true;
    this.users.set(this.botUserId, { id: this.botUserId, name: 'kourier', realName: 'Kourier', isBot: true });
  }

  // ---- what a test reads and arranges ----

  messages(channel: string, threadTs?: string): FakeMessage[] {
    const list = this.store.get(channel) ?? [];
    const picked =
      threadTs === undefined ? list : list.filter((m) => m.ts === threadTs || m.threadTs === threadTs);
    return picked.map((m) => this.publicCopy(m));
  }

  message(channel: string, ts: string): FakeMessage | undefined {
    const m = this.find(channel, ts);
    return m ? this.publicCopy(m) : undefined;
  }

  addUser(u: {
    id: string;
    name: string;
    realName?: string;
    email?: string;
    isBot?: boolean;
    deleted?: boolean;
  }): void {
    this.users.set(u.id, { ...u });
  }

  addUserGroup(id: string, userIds: string[], options?: { disabled?: boolean }): void {
    this.groups.set(id, { users: [...userIds], disabled: options?.disabled ?? false });
  }

  endStreamEarly(channel: string, ts: string): void {
    const m = this.find(channel, ts);
    if (!m) throw new Error(`fake slack: no message ${channel}/${ts}`);
    if (!m.streaming) throw new Error(`fake slack: message ${channel}/${ts} is not streaming`);
    m.streaming = false;
    m.streamState = 'expired';
  }

  postUserMessage(m: { channel: string; user: string; text: string; threadTs?: string }): FakeMessage {
    let threadTs: string | undefined;
    if (m.threadTs !== undefined) {
      const root = this.find(m.channel, m.threadTs);
      if (!root) throw new Error(`fake slack: no thread ${m.channel}/${m.threadTs}`);
      threadTs = root.threadTs ?? root.ts;
    }
    if (!this.users.has(m.user)) this.users.set(m.user, { id: m.user, name: m.user.toLowerCase() });
    this.members.add(`${m.channel} ${m.user}`);
    const msg: StoredMessage = {
      channel: m.channel,
      ts: this.nextTs(),
      user: m.user,
      text: m.text,
      streaming: false,
      edits: 0,
      ...(threadTs !== undefined ? { threadTs } : {}),
    };
    this.insert(msg);
    return this.publicCopy(msg);
  }

  // ---- what the methods share ----

  nextTs(): string {
    const now = BigInt(Math.floor(this.clock() * 1000));
    const next = now > this.lastTs ? now : this.lastTs + 1n;
    this.lastTs = next;
    return `${next / 1_000_000n}.${(next % 1_000_000n).toString().padStart(6, '0')}`;
  }

  /**
   * Keeps the channel in ts order. A new ts is almost always the latest (nextTs), so it is
   * placed by a search from the end rather than a sort of the whole channel: the bench keeps
   * thousands of threads in one channel.
   */
  insert(m: StoredMessage): void {
    let list = this.store.get(m.channel);
    if (list === undefined) {
      list = [];
      this.store.set(m.channel, list);
    }
    let at = list.length;
    while (at > 0 && compareTs((list[at - 1] as StoredMessage).ts, m.ts) > 0) at--;
    list.splice(at, 0, m);
    const key = `${m.channel} ${m.ts}`;
    if (!this.byTs.has(key)) this.byTs.set(key, m);
  }

  /** The first message of `channel` at `ts` (messages are never removed, only marked deleted). */
  find(channel: string, ts: string): StoredMessage | undefined {
    return this.byTs.get(`${channel} ${ts}`);
  }

  publicCopy(m: StoredMessage): FakeMessage {
    const { appId: _appId, ...rest } = m;
    return clone(rest);
  }

  isBotMessage(m: StoredMessage): boolean {
    return m.user === this.botUserId && m.botId !== undefined;
  }

  checkChannel(args: Args): string {
    const channel = str(args, 'channel');
    if (!channel) throw new SlackRefusal('channel_not_found');
    if (this.channels && !this.channels.has(channel)) throw new SlackRefusal('channel_not_found');
    return channel;
  }

  /** Who is in a channel: people added to it and people seen posting in it (the bot always). */
  channelMembers(channel: string): string[] {
    const out = [this.botUserId];
    for (const entry of this.members) {
      const [c, u] = entry.split(' ');
      if (c === channel && u !== undefined && u !== this.botUserId) out.push(u);
    }
    return out;
  }

  addChannelMember(channel: string, user: string): void {
    this.members.add(`${channel} ${user}`);
  }

  /**
   * A person presses the stop button of the thread's agent session: Slack stops the app's
   * streams in the thread (later appends answer stopped_by_user) and sends
   * agent_session_stopped, which this returns for the test to deliver. The status is left as
   * it was: the app must set it (docs.slack.dev, agent_session_stopped).
   */
  pressStop(channel: string, threadTs: string, user: string): Record<string, unknown> {
    const session = this.sessions.get(`${channel} ${threadTs}`);
    if (session === undefined) throw new Error(`fake slack: no agent session in ${channel}/${threadTs}`);
    if (session.status !== 'processing')
      throw new Error(
        `fake slack: the session is ${session.status}; the stop button shows only while processing`,
      );
    const stopped: string[] = [];
    for (const m of this.store.get(channel) ?? []) {
      if (m.threadTs !== threadTs || !m.streaming || !this.isBotMessage(m)) continue;
      m.streaming = false;
      m.streamState = 'stopped';
      m.stoppedByUser = true;
      stopped.push(m.ts);
    }
    return {
      type: 'agent_session_stopped',
      channel,
      user,
      thread_ts: threadTs,
      streaming_message_ts: stopped,
      event_ts: this.nextTs(),
    };
  }

  /**
   * Creates the thread's agent session or changes its status (agents.sessions.setStatus, and
   * chat.stopStream's session_status). The statuses are a closed list; free text is refused
   * with invalid_arguments, as the live API answers (docs/reference/slack.md).
   */
  setSessionStatus(
    channel: string,
    threadTs: string,
    status: string,
    via: string,
    create: { title?: string; initiator?: string } = {},
  ): FakeAgentSession {
    if (!SESSION_STATUSES.has(status))
      throw new SlackRefusal('invalid_arguments', [
        '[ERROR] must be a valid enum value [json-pointer:/status]',
      ]);
    const key = `${channel} ${threadTs}`;
    let session = this.sessions.get(key);
    if (session === undefined) {
      session = {
        channel,
        threadTs,
        status,
        title: create.title ?? '',
        history: [],
        titles: create.title === undefined ? [] : [create.title],
        ...(create.initiator === undefined ? {} : { initiator: create.initiator }),
      };
      this.sessions.set(key, session);
    }
    session.status = status;
    session.history.push({ status, via, at: this.clock() });
    return session;
  }

  isKnownMember(channel: string, user: string): boolean {
    return this.users.has(user) || this.members.has(`${channel} ${user}`);
  }

  /** Resolves `thread_ts` to the thread's root ts (Slack files a reply-to-a-reply under the root). */
  resolveThread(channel: string, args: Args, key = 'thread_ts'): string | undefined {
    const threadTs = str(args, key);
    if (threadTs === undefined || threadTs === '') return undefined;
    const root = this.find(channel, threadTs);
    if (!root || (root.deleted && !root.threadTs && !this.hasReplies(root)))
      throw new SlackRefusal('thread_not_found');
    return root.threadTs ?? root.ts;
  }

  hasReplies(root: StoredMessage): boolean {
    return (this.store.get(root.channel) ?? []).some((m) => m.threadTs === root.ts && !m.deleted);
  }

  /** The text of a message body: `text`, or `markdown_text` (exclusive with text and blocks). */
  readContent(args: Args, required: boolean): { text?: string; warnings: string[] } {
    const warnings: string[] = [];
    let text = str(args, 'text');
    const markdown = str(args, 'markdown_text');
    if (markdown !== undefined) {
      if (text !== undefined || args.blocks !== undefined) throw new SlackRefusal('markdown_text_conflict');
      if (chars(markdown) > SLACK_LIMITS.markdownTextChars) throw new SlackRefusal('msg_too_long');
      text = markdown;
    }
    if (text !== undefined && chars(text) > SLACK_LIMITS.textChars) {
      if (this.longText === 'refuse') throw new SlackRefusal('msg_too_long');
      text = Array.from(text).slice(0, SLACK_LIMITS.textChars).join('');
      warnings.push('message_truncated');
    }
    const hasOther = args.blocks !== undefined || args.attachments !== undefined;
    if (required && (text === undefined || text === '') && !hasOther) throw new SlackRefusal('no_text');
    return { ...(text !== undefined ? { text } : {}), warnings };
  }

  readAttachments(args: Args): unknown[] | undefined {
    if (args.attachments === undefined) return undefined;
    if (!Array.isArray(args.attachments)) throw new SlackRefusal('invalid_attachments');
    if (args.attachments.length > SLACK_LIMITS.attachments) throw new SlackRefusal('too_many_attachments');
    return clone(args.attachments);
  }

  messageJson(m: StoredMessage, withMetadata: boolean): Record<string, unknown> {
    const out: Record<string, unknown> = {
      type: 'message',
      user: m.user,
      text: m.text,
      ts: m.ts,
      team: this.teamId,
    };
    if (m.botId) {
      out.bot_id = m.botId;
      out.app_id = m.appId ?? this.appId;
    }
    if (m.blocks) out.blocks = clone(m.blocks);
    if (m.attachments) out.attachments = clone(m.attachments);
    if (m.threadTs) {
      out.thread_ts = m.threadTs;
      const root = this.find(m.channel, m.threadTs);
      if (root) out.parent_user_id = root.user;
    } else {
      const replies = (this.store.get(m.channel) ?? []).filter((r) => r.threadTs === m.ts && !r.deleted);
      if (replies.length > 0) {
        out.thread_ts = m.ts;
        out.reply_count = replies.length;
        out.reply_users = [...new Set(replies.map((r) => r.user))];
        out.reply_users_count = (out.reply_users as string[]).length;
        out.latest_reply = replies[replies.length - 1]?.ts;
      }
    }
    if (m.edits > 0 && !m.streamState) out.edited = { user: m.user, ts: m.ts };
    if (m.streamState) out.streaming_state = m.streamState === 'streaming' ? 'in_progress' : 'completed';
    if (withMetadata && m.metadata) out.metadata = clone(m.metadata);
    return out;
  }

  readStreamText(args: Args): { text: string; other: unknown[] } {
    let text = '';
    const markdown = str(args, 'markdown_text');
    if (markdown !== undefined) {
      // Documented limit: 12,000 characters per call. The error code for exceeding it is not documented.
      if (chars(markdown) > SLACK_LIMITS.markdownTextChars) throw new SlackRefusal('msg_too_long');
      text += markdown;
    }
    if (args.chunks !== undefined) {
      const c = readChunks(args.chunks, this.blocksTextLimit);
      text += c.text;
      return { text, other: c.other };
    }
    return { text, other: [] };
  }

  /**
   * `stopCode`: what a stream a person stopped answers. chat.appendStream documents
   * stopped_by_user; for chat.stopStream Slack documents nothing (assumed here:
   * message_not_in_streaming_state, the answer for any stream no longer streaming).
   */
  streamTarget(args: Args, stopCode = 'message_not_in_streaming_state'): StoredMessage {
    const channel = this.checkChannel(args);
    const ts = str(args, 'ts');
    const m = ts !== undefined ? this.find(channel, ts) : undefined;
    if (!m || m.deleted) throw new SlackRefusal('message_not_found');
    if (!this.isBotMessage(m)) throw new SlackRefusal('message_not_owned_by_app');
    // After a person's stop, appends are refused as such (chat.appendStream: stopped_by_user).
    if (m.stoppedByUser === true) throw new SlackRefusal(stopCode);
    if (!m.streaming) throw new SlackRefusal('message_not_in_streaming_state');
    return m;
  }

  reactionTarget(args: Args): { channel: string; ts: string; name: string } {
    const channel = this.checkChannel(args);
    const ts = str(args, 'timestamp');
    if (!ts) throw new SlackRefusal('no_item_specified');
    if (!TS_RE.test(ts)) throw new SlackRefusal('bad_timestamp');
    const m = this.find(channel, ts);
    if (!m || m.deleted) throw new SlackRefusal('message_not_found');
    const name = str(args, 'name');
    // Emoji names go without colons (reactions.add: invalid_name).
    if (!name || !/^[a-z0-9_+'-]+(::skin-tone-[2-6])?$/.test(name)) throw new SlackRefusal('invalid_name');
    return { channel, ts, name };
  }
}
