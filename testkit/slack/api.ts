/**
 * The fake Slack's public face: what a test configures (FakeSlackOptions), what it reads back
 * (FakeMessage, RecordedCall, FakeSlack) and the limits enforced, each with its source (see
 * ./server.ts for the sources of the whole fake).
 */

/**
 * Per-method windows (`{perMinute}`, or a bare number) plus the workspace-wide chat.update budget.
 * (Spelled with an index signature whose values admit numbers so `workspaceUpdatesPerMinute: 5` type-checks;
 * `Partial<Record<string, {perMinute}>> & {workspaceUpdatesPerMinute?: number}` makes that key unassignable.)
 */
export type FakeSlackRateLimits = {
  [method: string]: { perMinute: number } | number | undefined;
} & { workspaceUpdatesPerMinute?: number };

export interface FakeSlackOptions {
  teamId?: string; // default 'T0001'
  botUserId?: string; // default 'U0BOT'
  botToken?: string; // default 'xoxb-test'; other tokens → invalid_auth
  /**
   * Whether chat.startStream/appendStream/stopStream exist (default true). When false all three answer
   * `unknown_method` — the code Slack documents for these methods as "This method is currently not
   * available" (chat.startStream error list) and answers for any method a workspace does not offer.
   */
  streaming?: boolean;
  /** Defaults: DEFAULT_RATE_LIMITS (Slack's documented tiers, at the tier's floor) and 50 chat.update/min. */
  rateLimits?: FakeSlackRateLimits;
  clock?: () => number; // for rate windows and ts values; default Date.now

  // ---- additions ----
  botId?: string; // default 'B0BOT' (auth.test bot_id; Bolt's ignoreSelf compares it)
  appId?: string; // default 'A0APP'
  teamName?: string; // default 'Fake Team'
  /** Turn every rate window off (injected rateLimitNext still applies). Default true. */
  rateLimitsEnabled?: boolean;
  /** When given, any other channel answers channel_not_found. Default: every channel exists. */
  channels?: string[];
  /**
   * What to do with `text` over 40,000 characters. Slack truncates and warns `message_truncated`
   * (api.slack.com/changelog/2018-04-truncating-really-long-messages); the default here refuses with
   * `msg_too_long` (the code chat.update documents) so a silent truncation fails the test instead.
   */
  longText?: 'refuse' | 'truncate';
  /** Cumulative text across all blocks of one message before msg_blocks_too_long. Default 12,000. */
  blocksTextLimit?: number;
  /**
   * Whether the app is declared an agent (manifest `features.agent_view`; default true). When
   * false, assistant.threads.setSuggestedPrompts answers not_agent_app (documented) and the
   * agents.sessions.* methods answer not_agent_app too (assumed: Slack documents no answer for
   * a non-agent app there; the surface treats the whole family alike).
   */
  agentApp?: boolean;
  /**
   * Whether the app subscribes to agent_session_stopped (default true). When false,
   * setStatus still succeeds but warns missing_agent_session_stopped_event_subscription.
   */
  subscribedToStop?: boolean;
  /** Largest `limit` conversations.replies honours (default 1000; 15 for non-Marketplace distributed apps). */
  repliesMaxLimit?: number;
  /**
   * More workspaces besides the first (the options above), each with its own bot token, bot user
   * and rate windows; `fake.workspace(teamId)` reads and arranges one. With `oauth`, these start
   * uninstalled: their token works once oauth.v2.access has handed it out.
   */
  workspaces?: FakeWorkspaceOptions[];
  /** The app's OAuth credentials: oauth.v2.access exists and checks them. */
  oauth?: FakeOAuthOptions;
  /**
   * The app-level token (`xapp-…`, default 'xapp-test') apps.connections.open accepts for Socket
   * Mode (./socket-mode.ts). Slack mints it in the app's settings, one per app, not per workspace.
   */
  appToken?: string;
  /**
   * The address to listen on (default 127.0.0.1). A cluster test runs the fake on the node's
   * address or 0.0.0.0 so pods reach it; the `ws://` URL apps.connections.open hands out then
   * names the address each caller used (its Host header), not this one.
   */
  host?: string;
  /** The port to listen on (default 0: any free one). */
  port?: number;
}

export type FakeWorkspaceOptions = Pick<
  FakeSlackOptions,
  'teamId' | 'teamName' | 'botUserId' | 'botId' | 'botToken' | 'rateLimits' | 'channels'
> & { teamId: string; botToken: string };

export interface FakeOAuthOptions {
  clientId: string;
  clientSecret: string;
  /** The bot scopes oauth.v2.access reports granted. */
  scopes?: string[];
  /** Who installed the app (authed_user.id). */
  installerUserId?: string;
  /**
   * Token rotation on (`token_rotation_enabled`): oauth.v2.access hands out expiring access
   * tokens with a refresh token, and exchanges a refresh token (once: a used one is revoked)
   * for a new pair. The n-th access token of a workspace lives `lifetimesSec[n]` seconds (the last
   * repeats); a call made with an expired one is refused `token_expired`.
   */
  rotation?: { lifetimesSec: number[] };
}

/** One workspace of a fake that serves several (FakeSlack.workspace). */
export interface FakeWorkspace {
  teamId: string;
  botUserId: string;
  botToken: string;
  /** Whether its token works (installed, and neither never installed nor uninstalled). */
  installed: boolean;
  callsOf(method: string): RecordedCall[];
  messages(channel: string, threadTs?: string): FakeMessage[];
  addUser(u: { id: string; name: string; realName?: string; email?: string; isBot?: boolean }): void;
  postUserMessage(m: { channel: string; user: string; text: string; threadTs?: string }): FakeMessage;
}

export interface FakeMessage {
  channel: string;
  ts: string;
  threadTs?: string;
  user: string;
  text: string;
  blocks?: unknown[];
  metadata?: { event_type: string; event_payload: Record<string, unknown> };
  streaming: boolean; // true between startStream and stopStream
  edits: number; // chat.update / appendStream count
  deleted?: boolean;
  // ---- additions ----
  botId?: string; // set on the bot's own messages
  attachments?: unknown[];
  /** 'streaming' → 'stopped' (stopStream) or 'expired' (endStreamEarly); absent for ordinary messages. */
  streamState?: 'streaming' | 'stopped' | 'expired';
  /** Non-text stream chunks in arrival order (task_update, plan_update, blocks). */
  chunks?: unknown[];
  recipientUserId?: string;
  recipientTeamId?: string;
}

/** A thread's agent session as the fake holds it. */
export interface FakeAgentSession {
  channel: string;
  threadTs: string;
  status: string;
  title: string;
  initiator?: string;
  /** Every status it was given, in order, and by which method. */
  history: Array<{ status: string; via: string; at: number }>;
  /** Every title it was given (the creating setStatus's, then each rename). */
  titles: string[];
}

export interface RecordedCall {
  method: string;
  args: Record<string, unknown>;
  ok: boolean;
  error?: string;
  status: number;
  at: number;
  /** The workspace whose token made the call (absent for calls without a valid token). */
  team?: string;
  /** Where the call carried its token: the Authorization header, a form field, or both (absent: none). */
  tokenIn?: 'header' | 'body' | 'both';
  /** The request's Content-Type as sent. */
  contentType?: string;
}

export interface FakeSlack {
  url: string; // base for SLACK_API_URL / WebClient slackApiUrl, ending with '/api/'
  calls: RecordedCall[];
  callsOf(method: string): RecordedCall[];
  messages(channel: string, threadTs?: string): FakeMessage[]; // current state, in ts order; threadTs filters a thread (root included)
  message(channel: string, ts: string): FakeMessage | undefined;
  ephemerals: Array<{
    channel: string;
    user: string;
    text: string;
    threadTs?: string;
    ts?: string;
    blocks?: unknown[];
    /** Removed through an interaction's response_url (`delete_original`). */
    deleted?: boolean;
  }>;
  reactions: Array<{ channel: string; ts: string; name: string; removed: boolean }>;
  /** The agent session of a thread (by its root ts), if the app made one. */
  session(channel: string, threadTs: string): FakeAgentSession | undefined;
  /** Suggested prompts set with assistant.threads.setSuggestedPrompts, in order. */
  suggestedPrompts: Array<{
    channel: string;
    title?: string;
    prompts: Array<{ title: string; message: string }>;
  }>;
  /** A person presses the session's stop button: returns the agent_session_stopped event to send. */
  pressStop(channel: string, threadTs: string, user: string): Record<string, unknown>;
  /** Puts a person in a channel (conversations.members); people who post there are in it too. */
  addChannelMember(channel: string, user: string): void;
  /** Modals opened with views.open, in order (addition). */
  views: Array<{ id: string; triggerId: string; view: Record<string, unknown> }>;
  addUser(u: {
    id: string;
    name: string;
    realName?: string;
    email?: string;
    isBot?: boolean;
    deleted?: boolean;
  }): void;
  addUserGroup(id: string, userIds: string[], options?: { disabled?: boolean }): void;
  failNext(method: string, error: string, times?: number): void; // next call(s) answer {ok:false,error}
  rateLimitNext(method: string, retryAfterSeconds: number, times?: number): void; // next call(s) 429
  serverErrorNext(method: string, status?: number, times?: number): void; // next call(s) HTTP 5xx, nothing done
  /** Next call(s) answered only after `ms` (a slow or stalled Slack, a congested network); then as usual. */
  delayNext(method: string, ms: number, times?: number): void;
  /**
   * Every call of `method` from now on waits, unanswered, until `release()`; `waiting()`: how
   * many calls wait now.
   */
  holdCalls(method: string): { release: () => void; waiting: () => number };
  /** Next call(s) HTTP 200 with an HTML page, nothing done (what a proxy or load balancer in the way sends). */
  htmlNext(method: string, times?: number): void;
  endStreamEarly(channel: string, ts: string): void; // later appendStream/stopStream → message_not_in_streaming_state
  postUserMessage(m: { channel: string; user: string; text: string; threadTs?: string }): FakeMessage;
  close(): Promise<void>;
  // ---- additions ----
  teamId: string;
  botUserId: string;
  botId: string;
  botToken: string;
  /** Forget recorded calls (state and rate windows stay). */
  clearCalls(): void;
  /** One of the workspaces (the first, or one of `workspaces`); throws for an unknown team. */
  workspace(teamId: string): FakeWorkspace;
  /**
   * A person approved the install in `teamId` on Slack's authorize page: the code the redirect
   * to the app carries (needs `oauth`). `redirectUri` must then come back to oauth.v2.access.
   */
  authorizeInstall(teamId: string, redirectUri?: string): string;
  /** The app is removed from `teamId`: its token answers token_revoked from now on. */
  uninstall(teamId: string): void;
  /**
   * The response_url Slack puts in the payload of a press on `messageTs` (an ephemeral message
   * when `ephemeral`) by `user`, in `teamId` (default: the first workspace); see ./responses.ts.
   */
  responseUrl(o: {
    channel: string;
    user: string;
    messageTs: string;
    ephemeral?: boolean;
    teamId?: string;
  }): string;
  /** Every POST to a response_url, in order: what was sent and what the fake answered. */
  responses: Array<{ path: string; body: unknown; status: number; ok: boolean }>;
  /** The app-level token apps.connections.open accepts (Socket Mode). */
  appToken: string;
  /** Socket Mode: the WebSocket side of the fake (./socket-mode.ts). */
  socketMode: FakeSocketMode;
}

/** Why Slack tells a Socket Mode connection to go (docs.slack.dev/apis/events-api/using-socket-mode#disconnect). */
export type SocketDisconnectReason = 'warning' | 'refresh_requested' | 'link_disabled';

/** One WebSocket connection an app opened with a ticket from apps.connections.open. */
export interface FakeSocketConnection {
  /** 1, 2, … in the order they opened. */
  id: number;
  openedAt: number;
  /** The peer's address as the fake saw it. */
  remoteAddress: string;
  /** Set once closed: by the app (a close frame), or dropped by the fake (`drop()`), or at close(). */
  closedAt?: number;
  closeCode?: number;
}

/** An envelope the fake sent over a connection. */
export interface FakeSocketEnvelope {
  envelopeId: string;
  type: 'events_api' | 'interactive';
  payload: Record<string, unknown>;
  connection: number;
  at: number;
}

/** An acknowledgement the app sent back: `{envelope_id, payload?}`. */
export interface FakeSocketAck {
  envelopeId: string;
  /** What the app answered with (a view_submission's `response_action`, say); absent when it sent none. */
  payload?: Record<string, unknown>;
  connection: number;
  at: number;
  /** No envelope was waiting for it: an unknown id, a second ack, or one after the wait gave up. */
  unexpected?: boolean;
}

/** What the fake refused or could not read on the WebSocket side, for tests to assert there is none. */
export interface FakeSocketProblem {
  connection?: number;
  /** e.g. 'unknown ticket', 'ticket used', 'not JSON', 'not an acknowledgement: …' */
  reason: string;
  at: number;
}

/** Options of one envelope: how long to wait for the ack, and the envelope's own fields. */
export interface SocketEnvelopeOptions {
  /** How long to wait for an open connection and then the ack (default 3,000 ms; see SOCKET_LIMITS). */
  timeoutMs?: number;
}

export interface SocketEventOptions extends SocketEnvelopeOptions {
  teamId?: string;
  /** Keep one to model a redelivery. */
  eventId?: string;
  eventTime?: number;
  /** The envelope's retry_attempt / retry_reason (a redelivery), default 0 and ''. */
  retryAttempt?: number;
  retryReason?: string;
}

export interface FakeSocketMode {
  /** Every connection opened so far, open or closed, in order. */
  readonly connections: readonly FakeSocketConnection[];
  /** How many are open now. */
  readonly openCount: number;
  readonly envelopes: readonly FakeSocketEnvelope[];
  readonly acks: readonly FakeSocketAck[];
  readonly problems: readonly FakeSocketProblem[];
  /**
   * Sends an Events API event (`event`, wrapped in its event_callback envelope as over HTTP) in an
   * `events_api` envelope and resolves with the app's ack; rejects with SocketAckTimeoutError when
   * no connection opens or no ack comes within the timeout.
   */
  sendEvent(event: Record<string, unknown>, options?: SocketEventOptions): Promise<FakeSocketAck>;
  /** Sends an interactivity payload (block_actions, view_submission, …) in an `interactive` envelope. */
  sendInteraction(payload: Record<string, unknown>, options?: SocketEnvelopeOptions): Promise<FakeSocketAck>;
  /** Tells every open connection to go (`{type: 'disconnect', reason}`); returns how many were told. */
  disconnect(reason?: SocketDisconnectReason): number;
  /** Cuts every open connection without a close frame (a network drop); returns how many. */
  drop(): number;
  /** Resolves once `count` connections have opened in all and one is open (default wait 10 s). */
  opened(count: number, timeoutMs?: number): Promise<void>;
}

/** Slack's documented tiers at their floor (Tier 2 = 20/min, Tier 3 = 50/min, Tier 4 = 100/min). */
export const DEFAULT_RATE_LIMITS: Readonly<Record<string, number>> = {
  'chat.postMessage': 60, // "special": ~1 per second per channel — enforced per channel here
  'chat.postEphemeral': 100, // Tier 4
  'chat.delete': 50, // Tier 3
  'chat.startStream': 20, // Tier 2
  'chat.appendStream': 100, // Tier 4
  'chat.stopStream': 20, // Tier 2
  'reactions.add': 50, // Tier 3
  'reactions.remove': 20, // Tier 2
  'users.info': 100, // Tier 4
  'usergroups.users.list': 20, // Tier 2
  'views.open': 100, // Tier 4
  'conversations.replies': 50, // Tier 3 (internal apps; 1/min for distributed non-Marketplace apps)
  'conversations.info': 50, // Tier 3
  'conversations.history': 50, // Tier 3 (internal apps; 1/min for distributed non-Marketplace apps)
  'conversations.members': 100, // Tier 4
  'agents.sessions.setStatus': 50, // Tier 3
  'agents.sessions.rename': 50, // Tier 3
  'assistant.threads.setSuggestedPrompts': 100, // Tier 4
  // auth.test is "special" with no published number: not limited. chat.update: see workspaceUpdatesPerMinute.
};
/** chat.update is Tier 3: 50 per minute for the whole workspace, shared by every thread editing messages. */
export const DEFAULT_WORKSPACE_UPDATES_PER_MINUTE = 50;

/** Message and Block Kit limits enforced (see the header for sources). */
export const SLACK_LIMITS = {
  textChars: 40_000, // chat.postMessage/update `text` (truncation changelog, 2018)
  markdownTextChars: 12_000, // `markdown_text` on chat.* and the stream methods (method pages)
  blocksPerMessage: 50, // Block Kit: "up to 50 blocks in each message"
  sectionTextChars: 3_000, // section block `text`
  sectionFieldChars: 2_000, // each section `fields` item; at most 10 fields
  sectionFields: 10,
  headerTextChars: 150, // header block plain_text
  markdownBlockChars: 12_000, // markdown block `text`
  blocksTextTotal: 12_000, // markdown blocks cumulatively (markdown block page); observed msg_blocks_too_long ~13.2k
  contextElements: 10,
  actionsElements: 25,
  buttonTextChars: 75,
  actionIdChars: 255,
  blockIdChars: 255,
  buttonValueChars: 2_000,
  buttonUrlChars: 3_000,
  attachments: 100, // too_many_attachments
} as const;
