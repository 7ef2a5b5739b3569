/**
 * A stand-in for Slack's Web API on loopback, for tests that drive the real `@slack/web-api` WebClient
 * (and Bolt, which uses it) against it: `new WebClient(token, { slackApiUrl: fake.url })`.
 *
 * It answers the way Slack does — HTTP 200 with `{ok: true, …}` or `{ok: false, error: 'code'}`, HTTP 429
 * with `Retry-After` when rate limited — and refuses what Slack refuses, so a test fails where production
 * would. Every limit below names its source; where Slack's behaviour is undocumented the choice is marked
 * "assumed" and errs on the strict side.
 *
 * Sources:
 * - method pages, docs.slack.dev/reference/methods/<method> (arguments, errors, rate tier), as mirrored in
 *   slack-ruby/slack-api-ref `docs.slack.dev/methods/*.json` and `methods/chat/*.json` (2026-08);
 * - Block Kit reference docs.slack.dev/reference/block-kit/blocks/* and the `@slack/types` typings;
 * - rate limits: docs.slack.dev/apis/web-api/rate-limits (tiers 1–4: 1+/20+/50+/100+ per minute, per
 *   method, per workspace, per app; chat.postMessage "special": about 1 per second per channel);
 * - docs/reference/slack.md for the behaviours seen in public issue reports (stream expiry, ~13.2k blocks).
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

// ---------------------------------------------------------------------------------------------------------
// Public API
// ---------------------------------------------------------------------------------------------------------

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
  /** Largest `limit` conversations.replies honours (default 1000; 15 for non-Marketplace distributed apps). */
  repliesMaxLimit?: number;
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

export interface RecordedCall {
  method: string;
  args: Record<string, unknown>;
  ok: boolean;
  error?: string;
  status: number;
  at: number;
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
  }>;
  reactions: Array<{ channel: string; ts: string; name: string; removed: boolean }>;
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

// ---------------------------------------------------------------------------------------------------------
// Implementation
// ---------------------------------------------------------------------------------------------------------

type Args = Record<string, unknown>;
type Result = Record<string, unknown>;

/** Thrown by a method handler: answers `{ok: false, error, response_metadata?: {messages}}`. */
class SlackRefusal extends Error {
  constructor(
    readonly code: string,
    readonly messages: string[] = [],
    readonly extra: Record<string, unknown> = {},
  ) {
    super(code);
  }
}

interface StoredMessage extends FakeMessage {
  appId?: string;
}

interface StoredUser {
  id: string;
  name: string;
  realName?: string;
  email?: string;
  isBot?: boolean;
  deleted?: boolean;
}

const STREAM_METHODS = new Set(['chat.startStream', 'chat.appendStream', 'chat.stopStream']);
/** Form fields @slack/web-api JSON-stringifies (any non-primitive value) that Slack parses as JSON. */
const JSON_FIELDS: Record<string, string> = {
  blocks: 'invalid_blocks_format',
  attachments: 'invalid_attachments',
  metadata: 'invalid_metadata_format',
  chunks: 'invalid_chunks',
  unfurls: 'invalid_unfurls',
  file_ids: 'invalid_array_arg',
};
const KNOWN_BLOCK_TYPES = new Set([
  'actions',
  'alert',
  'call',
  'card',
  'carousel',
  'container',
  'context',
  'context_actions',
  'data_table',
  'divider',
  'file',
  'header',
  'image',
  'input',
  'markdown',
  'plan',
  'rich_text',
  'section',
  'table',
  'task_card',
  'video',
]);
const TASK_STATUSES = new Set(['pending', 'in_progress', 'complete', 'error']);

/** Length in characters (code points), as Slack counts, not UTF-16 units. */
function chars(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

function tsToMicros(ts: string): bigint {
  const [s = '0', f = ''] = ts.split('.');
  return BigInt(s) * 1_000_000n + BigInt(f.padEnd(6, '0').slice(0, 6) || '0');
}
function compareTs(a: string, b: string): number {
  const x = tsToMicros(a);
  const y = tsToMicros(b);
  return x < y ? -1 : x > y ? 1 : 0;
}
const TS_RE = /^\d+\.\d{6}$/;

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
function str(args: Args, key: string): string | undefined {
  const v = args[key];
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return undefined;
}
function flag(args: Args, key: string): boolean {
  const v = args[key];
  return v === true || v === 'true' || v === '1' || v === 1;
}
function problem(code: string, message: string, pointer: string): SlackRefusal {
  return new SlackRefusal(code, [`[ERROR] ${message} [json-pointer:${pointer}]`]);
}
function clone<T>(v: T): T {
  return structuredClone(v);
}

// ---- Block Kit validation ---------------------------------------------------------------------------

function checkTextObject(obj: unknown, pointer: string, max: number, plainOnly: boolean): void {
  if (!isRecord(obj)) throw problem('invalid_blocks', 'must be an object', pointer);
  const type = obj.type;
  if (type !== 'plain_text' && (plainOnly || type !== 'mrkdwn')) {
    throw problem(
      'invalid_blocks',
      `must be one of ${plainOnly ? '[plain_text]' : '[plain_text, mrkdwn]'}`,
      `${pointer}/type`,
    );
  }
  if (typeof obj.text !== 'string' || obj.text.length === 0) {
    throw problem('invalid_blocks', 'must be more than 0 characters', `${pointer}/text`);
  }
  if (chars(obj.text) > max) {
    throw problem('invalid_blocks', `must be less than ${max + 1} characters`, `${pointer}/text`);
  }
}

function checkElement(el: unknown, pointer: string, actionIds: Set<string>): void {
  if (!isRecord(el) || typeof el.type !== 'string') {
    throw problem('invalid_blocks', 'must provide an object with a type', pointer);
  }
  if (el.action_id !== undefined) {
    if (typeof el.action_id !== 'string' || chars(el.action_id) > SLACK_LIMITS.actionIdChars) {
      throw problem('invalid_blocks', 'must be less than 256 characters', `${pointer}/action_id`);
    }
    if (actionIds.has(el.action_id)) {
      throw problem('invalid_blocks', `duplicate action_id: ${el.action_id}`, `${pointer}/action_id`);
    }
    actionIds.add(el.action_id);
  }
  if (el.type === 'button') {
    checkTextObject(el.text, `${pointer}/text`, SLACK_LIMITS.buttonTextChars, true);
    if (
      el.value !== undefined &&
      (typeof el.value !== 'string' || chars(el.value) > SLACK_LIMITS.buttonValueChars)
    ) {
      throw problem('invalid_blocks', 'must be less than 2001 characters', `${pointer}/value`);
    }
    if (el.url !== undefined && (typeof el.url !== 'string' || chars(el.url) > SLACK_LIMITS.buttonUrlChars)) {
      throw problem('invalid_blocks', 'must be less than 3001 characters', `${pointer}/url`);
    }
    if (el.style !== undefined && el.style !== 'primary' && el.style !== 'danger') {
      throw problem('invalid_blocks', 'must be one of [primary, danger]', `${pointer}/style`);
    }
  }
}

function checkBlock(block: unknown, pointer: string, blockIds: Set<string>): void {
  if (!isRecord(block) || typeof block.type !== 'string') {
    throw problem('invalid_blocks', 'missing required field: type', pointer);
  }
  if (!KNOWN_BLOCK_TYPES.has(block.type)) {
    throw problem('invalid_blocks', `unsupported type: ${block.type}`, `${pointer}/type`);
  }
  if (block.block_id !== undefined) {
    if (typeof block.block_id !== 'string' || chars(block.block_id) > SLACK_LIMITS.blockIdChars) {
      throw problem('invalid_blocks', 'must be less than 256 characters', `${pointer}/block_id`);
    }
    if (blockIds.has(block.block_id)) {
      throw problem('invalid_blocks', `duplicate block_id: ${block.block_id}`, `${pointer}/block_id`);
    }
    blockIds.add(block.block_id);
  }
  const actionIds = new Set<string>();
  switch (block.type) {
    case 'section': {
      if (block.text === undefined && block.fields === undefined) {
        throw problem('invalid_blocks', 'must provide either text or fields', pointer);
      }
      if (block.text !== undefined)
        checkTextObject(block.text, `${pointer}/text`, SLACK_LIMITS.sectionTextChars, false);
      if (block.fields !== undefined) {
        if (!Array.isArray(block.fields) || block.fields.length > SLACK_LIMITS.sectionFields) {
          throw problem('invalid_blocks', 'no more than 10 items allowed', `${pointer}/fields`);
        }
        block.fields.forEach((f, i) => {
          checkTextObject(f, `${pointer}/fields/${i}`, SLACK_LIMITS.sectionFieldChars, false);
        });
      }
      if (block.accessory !== undefined) checkElement(block.accessory, `${pointer}/accessory`, actionIds);
      break;
    }
    case 'header':
      checkTextObject(block.text, `${pointer}/text`, SLACK_LIMITS.headerTextChars, true);
      break;
    case 'markdown':
      if (typeof block.text !== 'string' || block.text.length === 0) {
        throw problem('invalid_blocks', 'must be more than 0 characters', `${pointer}/text`);
      }
      if (chars(block.text) > SLACK_LIMITS.markdownBlockChars) {
        throw problem('invalid_blocks', 'must be less than 12001 characters', `${pointer}/text`);
      }
      break;
    case 'context':
      if (!Array.isArray(block.elements) || block.elements.length === 0) {
        throw problem('invalid_blocks', 'must provide at least 1 item', `${pointer}/elements`);
      }
      if (block.elements.length > SLACK_LIMITS.contextElements) {
        throw problem('invalid_blocks', 'no more than 10 items allowed', `${pointer}/elements`);
      }
      break;
    case 'actions':
      if (!Array.isArray(block.elements) || block.elements.length === 0) {
        throw problem('invalid_blocks', 'must provide at least 1 item', `${pointer}/elements`);
      }
      if (block.elements.length > SLACK_LIMITS.actionsElements) {
        throw problem('invalid_blocks', 'no more than 25 items allowed', `${pointer}/elements`);
      }
      block.elements.forEach((el, i) => {
        checkElement(el, `${pointer}/elements/${i}`, actionIds);
      });
      break;
    case 'rich_text':
      if (!Array.isArray(block.elements)) {
        throw problem('invalid_blocks', 'missing required field: elements', pointer);
      }
      break;
    default:
      break;
  }
}

/** Sum of every string `text` property in the blocks (what the cumulative limit counts). */
function blocksTextLength(value: unknown): number {
  if (Array.isArray(value)) return value.reduce((n: number, v) => n + blocksTextLength(v), 0);
  if (!isRecord(value)) return 0;
  let n = 0;
  for (const [k, v] of Object.entries(value)) {
    if (k === 'text' && typeof v === 'string') n += chars(v);
    else n += blocksTextLength(v);
  }
  return n;
}

function validateBlocks(blocks: unknown, tooManyCode: string, totalLimit: number): unknown[] {
  if (!Array.isArray(blocks)) throw new SlackRefusal('invalid_blocks_format');
  if (blocks.length > SLACK_LIMITS.blocksPerMessage) {
    throw problem(tooManyCode, 'no more than 50 items allowed', '/blocks');
  }
  const ids = new Set<string>();
  blocks.forEach((b, i) => {
    checkBlock(b, `/blocks/${i}`, ids);
  });
  if (blocksTextLength(blocks) > totalLimit) throw new SlackRefusal('msg_blocks_too_long');
  return blocks;
}

/** A modal view for views.open (addition): its own limits, then its blocks as in messages. */
function validateView(view: unknown): Record<string, unknown> {
  if (!isRecord(view)) throw new SlackRefusal('invalid_arguments', ['[ERROR] missing required field: view']);
  if (view.type !== 'modal') throw problem('invalid_arguments', 'must be one of [modal]', '/view/type');
  checkTextObject(view.title, '/view/title', 24, true);
  if (view.submit !== undefined) checkTextObject(view.submit, '/view/submit', 24, true);
  if (view.close !== undefined) checkTextObject(view.close, '/view/close', 24, true);
  if (
    view.callback_id !== undefined &&
    (typeof view.callback_id !== 'string' || chars(view.callback_id) > 255)
  )
    throw problem('invalid_arguments', 'must be less than 256 characters', '/view/callback_id');
  if (
    view.private_metadata !== undefined &&
    (typeof view.private_metadata !== 'string' || chars(view.private_metadata) > 3_000)
  )
    throw problem('invalid_arguments', 'must be less than 3001 characters', '/view/private_metadata');
  if (!Array.isArray(view.blocks) || view.blocks.length === 0 || view.blocks.length > 100)
    throw problem('invalid_arguments', 'must provide 1 to 100 blocks', '/view/blocks');
  const ids = new Set<string>();
  let inputs = 0;
  view.blocks.forEach((b, i) => {
    const pointer = `/view/blocks/${i}`;
    if (isRecord(b) && b.type === 'input') {
      inputs++;
      if (b.block_id !== undefined) {
        if (typeof b.block_id !== 'string' || ids.has(b.block_id))
          throw problem('invalid_arguments', 'duplicate block_id', `${pointer}/block_id`);
        ids.add(b.block_id);
      }
      checkTextObject(b.label, `${pointer}/label`, 2_000, true);
      const el = b.element;
      if (!isRecord(el) || typeof el.type !== 'string')
        throw problem('invalid_arguments', 'missing required field: element', `${pointer}/element`);
      if (el.type === 'static_select' || el.type === 'multi_static_select') {
        if (!Array.isArray(el.options) || el.options.length === 0 || el.options.length > 100)
          throw problem('invalid_arguments', 'must provide 1 to 100 options', `${pointer}/element/options`);
        el.options.forEach((o, j) => {
          if (!isRecord(o))
            throw problem('invalid_arguments', 'must be an object', `${pointer}/element/options/${j}`);
          checkTextObject(o.text, `${pointer}/element/options/${j}/text`, 75, true);
          if (typeof o.value !== 'string' || o.value === '' || chars(o.value) > 150)
            throw problem(
              'invalid_arguments',
              'must be 1 to 150 characters',
              `${pointer}/element/options/${j}/value`,
            );
        });
      } else if (el.type === 'plain_text_input') {
        if (el.max_length !== undefined && (typeof el.max_length !== 'number' || el.max_length > 3_000))
          throw problem('invalid_arguments', 'must be at most 3000', `${pointer}/element/max_length`);
      }
      return;
    }
    checkBlock(b, pointer, ids);
  });
  if (inputs > 0 && view.submit === undefined)
    throw problem('invalid_arguments', 'a view with input blocks needs submit', '/view/submit');
  return view;
}

function validateMetadata(metadata: unknown): FakeMessage['metadata'] | null {
  if (!isRecord(metadata)) throw new SlackRefusal('invalid_metadata_format');
  if (Object.keys(metadata).length === 0) return null; // `{}` removes metadata on chat.update
  if (typeof metadata.event_type !== 'string' || metadata.event_type.length === 0) {
    throw new SlackRefusal('invalid_metadata_schema', ['[ERROR] missing required field: event_type']);
  }
  if (!isRecord(metadata.event_payload)) {
    throw new SlackRefusal('invalid_metadata_schema', ['[ERROR] missing required field: event_payload']);
  }
  return { event_type: metadata.event_type, event_payload: clone(metadata.event_payload) };
}

/** Validates stream chunks; returns the markdown text they add and the other chunks. */
function readChunks(chunks: unknown, totalLimit: number): { text: string; other: unknown[] } {
  if (!Array.isArray(chunks)) throw new SlackRefusal('invalid_chunks');
  let text = '';
  const other: unknown[] = [];
  chunks.forEach((c, i) => {
    const ptr = `/chunks/${i}`;
    if (!isRecord(c) || typeof c.type !== 'string')
      throw problem('invalid_chunks', 'missing required field: type', ptr);
    switch (c.type) {
      case 'markdown_text':
        if (typeof c.text !== 'string') throw problem('invalid_chunks', 'missing required field: text', ptr);
        if (chars(c.text) > SLACK_LIMITS.markdownTextChars) {
          throw problem('invalid_chunks', 'must be less than 12001 characters', `${ptr}/text`);
        }
        text += c.text;
        break;
      case 'task_update':
        if (typeof c.id !== 'string' || typeof c.title !== 'string') {
          throw problem('invalid_chunks', 'missing required field: id, title', ptr);
        }
        if (typeof c.status !== 'string' || !TASK_STATUSES.has(c.status)) {
          throw problem(
            'invalid_chunks',
            'must be one of [pending, in_progress, complete, error]',
            `${ptr}/status`,
          );
        }
        other.push(clone(c));
        break;
      case 'plan_update':
        if (typeof c.title !== 'string')
          throw problem('invalid_chunks', 'missing required field: title', ptr);
        other.push(clone(c));
        break;
      case 'blocks':
        validateBlocks(c.blocks, 'msg_blocks_too_many', totalLimit);
        other.push(clone(c));
        break;
      default:
        throw problem('invalid_chunks', `unsupported type: ${c.type}`, `${ptr}/type`);
    }
  });
  return { text, other };
}

// ---- rate windows -----------------------------------------------------------------------------------

class Windows {
  private readonly hits = new Map<string, number[]>();

  /** Seconds to wait if `key` already had `perMinute` hits in the last 60 s, else undefined. */
  wait(key: string, perMinute: number, now: number): number | undefined {
    if (!Number.isFinite(perMinute)) return undefined;
    const list = (this.hits.get(key) ?? []).filter((t) => t > now - 60_000);
    this.hits.set(key, list);
    if (list.length < perMinute) return undefined;
    const oldest = list[list.length - perMinute] ?? now;
    return Math.max(1, Math.ceil((oldest + 60_000 - now) / 1000));
  }

  hit(key: string, now: number): void {
    const list = this.hits.get(key) ?? [];
    list.push(now);
    this.hits.set(key, list);
  }
}

// ---- the server ---------------------------------------------------------------------------------------

class FakeSlackServer implements FakeSlack {
  url = '';
  readonly calls: RecordedCall[] = [];
  readonly ephemerals: FakeSlack['ephemerals'] = [];
  readonly reactions: FakeSlack['reactions'] = [];
  readonly views: FakeSlack['views'] = [];
  readonly teamId: string;
  readonly botUserId: string;
  readonly botId: string;
  readonly botToken: string;

  private readonly appId: string;
  private readonly teamName: string;
  private readonly streaming: boolean;
  private readonly clock: () => number;
  private readonly limits: Record<string, number>;
  private readonly updatesPerMinute: number;
  private readonly rateLimitsEnabled: boolean;
  private readonly channels: Set<string> | undefined;
  private readonly longText: 'refuse' | 'truncate';
  private readonly blocksTextLimit: number;
  private readonly repliesMaxLimit: number;

  private readonly store = new Map<string, StoredMessage[]>(); // channel → messages in ts order
  private readonly users = new Map<string, StoredUser>();
  private readonly groups = new Map<string, { users: string[]; disabled: boolean }>();
  private readonly members = new Set<string>(); // `${channel} ${user}` for users seen posting in a channel
  private readonly failures = new Map<string, Array<{ error: string; left: number }>>();
  private readonly serverErrors = new Map<string, Array<{ status: number; left: number }>>();
  private readonly throttles = new Map<string, Array<{ retryAfter: number; left: number }>>();
  private readonly windows = new Windows();
  private lastTs = 0n;
  private server: Server | undefined;

  constructor(options: FakeSlackOptions) {
    this.teamId = options.teamId ?? 'T0001';
    this.botUserId = options.botUserId ?? 'U0BOT';
    this.botToken = options.botToken ?? 'xoxb-test';
    this.botId = options.botId ?? 'B0BOT';
    this.appId = options.appId ?? 'A0APP';
    this.teamName = options.teamName ?? 'Fake Team';
    this.streaming = options.streaming ?? true;
    this.clock = options.clock ?? Date.now;
    this.rateLimitsEnabled = options.rateLimitsEnabled ?? true;
    this.channels = options.channels ? new Set(options.channels) : undefined;
    this.longText = options.longText ?? 'refuse';
    this.blocksTextLimit = options.blocksTextLimit ?? SLACK_LIMITS.blocksTextTotal;
    this.repliesMaxLimit = options.repliesMaxLimit ?? 1000;
    const { workspaceUpdatesPerMinute, ...perMethod } = options.rateLimits ?? {};
    this.updatesPerMinute = workspaceUpdatesPerMinute ?? DEFAULT_WORKSPACE_UPDATES_PER_MINUTE;
    this.limits = { ...DEFAULT_RATE_LIMITS };
    for (const [method, v] of Object.entries(perMethod)) {
      if (typeof v === 'number') this.limits[method] = v;
      else if (v !== undefined) this.limits[method] = v.perMinute;
    }
    this.users.set(this.botUserId, { id: this.botUserId, name: 'kourier', realName: 'Kourier', isBot: true });
  }

  async listen(): Promise<void> {
    const server = createServer((req, res) => {
      this.handle(req, res).catch((err: unknown) => {
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
        res.end(String(err));
      });
    });
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    const { port } = server.address() as AddressInfo;
    this.url = `http://127.0.0.1:${port}/api/`;
  }

  close(): Promise<void> {
    const server = this.server;
    if (!server) return Promise.resolve();
    this.server = undefined;
    return new Promise((resolve, reject) => {
      server.close((err) => (err ? reject(err) : resolve()));
      server.closeAllConnections();
    });
  }

  // ---- test-facing API ----

  callsOf(method: string): RecordedCall[] {
    return this.calls.filter((c) => c.method === method);
  }

  clearCalls(): void {
    this.calls.length = 0;
  }

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

  failNext(method: string, error: string, times = 1): void {
    const list = this.failures.get(method) ?? [];
    list.push({ error, left: times });
    this.failures.set(method, list);
  }

  serverErrorNext(method: string, status = 503, times = 1): void {
    const list = this.serverErrors.get(method) ?? [];
    list.push({ status, left: times });
    this.serverErrors.set(method, list);
  }

  rateLimitNext(method: string, retryAfterSeconds: number, times = 1): void {
    const list = this.throttles.get(method) ?? [];
    list.push({ retryAfter: retryAfterSeconds, left: times });
    this.throttles.set(method, list);
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

  // ---- helpers ----

  private nextTs(): string {
    const now = BigInt(Math.floor(this.clock() * 1000));
    const next = now > this.lastTs ? now : this.lastTs + 1n;
    this.lastTs = next;
    return `${next / 1_000_000n}.${(next % 1_000_000n).toString().padStart(6, '0')}`;
  }

  private insert(m: StoredMessage): void {
    const list = this.store.get(m.channel) ?? [];
    list.push(m);
    list.sort((a, b) => compareTs(a.ts, b.ts));
    this.store.set(m.channel, list);
  }

  private find(channel: string, ts: string): StoredMessage | undefined {
    return this.store.get(channel)?.find((m) => m.ts === ts);
  }

  private publicCopy(m: StoredMessage): FakeMessage {
    const { appId: _appId, ...rest } = m;
    return clone(rest);
  }

  private isBotMessage(m: StoredMessage): boolean {
    return m.user === this.botUserId && m.botId !== undefined;
  }

  private checkChannel(args: Args): string {
    const channel = str(args, 'channel');
    if (!channel) throw new SlackRefusal('channel_not_found');
    if (this.channels && !this.channels.has(channel)) throw new SlackRefusal('channel_not_found');
    return channel;
  }

  private isKnownMember(channel: string, user: string): boolean {
    return this.users.has(user) || this.members.has(`${channel} ${user}`);
  }

  /** Resolves `thread_ts` to the thread's root ts (Slack files a reply-to-a-reply under the root). */
  private resolveThread(channel: string, args: Args, key = 'thread_ts'): string | undefined {
    const threadTs = str(args, key);
    if (threadTs === undefined || threadTs === '') return undefined;
    const root = this.find(channel, threadTs);
    if (!root || (root.deleted && !root.threadTs && !this.hasReplies(root)))
      throw new SlackRefusal('thread_not_found');
    return root.threadTs ?? root.ts;
  }

  private hasReplies(root: StoredMessage): boolean {
    return (this.store.get(root.channel) ?? []).some((m) => m.threadTs === root.ts && !m.deleted);
  }

  /** The text of a message body: `text`, or `markdown_text` (exclusive with text and blocks). */
  private readContent(args: Args, required: boolean): { text?: string; warnings: string[] } {
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

  private readAttachments(args: Args): unknown[] | undefined {
    if (args.attachments === undefined) return undefined;
    if (!Array.isArray(args.attachments)) throw new SlackRefusal('invalid_attachments');
    if (args.attachments.length > SLACK_LIMITS.attachments) throw new SlackRefusal('too_many_attachments');
    return clone(args.attachments);
  }

  private messageJson(m: StoredMessage, withMetadata: boolean): Record<string, unknown> {
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

  // ---- HTTP ----

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (!url.pathname.startsWith('/api/') || (req.method !== 'POST' && req.method !== 'GET')) {
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('not found');
      return;
    }
    const method = decodeURIComponent(url.pathname.slice('/api/'.length));
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    const contentType = (req.headers['content-type'] ?? '').toLowerCase();
    const isJson = contentType.startsWith('application/json');

    const args: Args = Object.fromEntries(url.searchParams);
    let bodyError: string | undefined;
    if (raw.length > 0) {
      if (isJson) {
        try {
          const parsed: unknown = JSON.parse(raw);
          if (isRecord(parsed)) Object.assign(args, parsed);
          else bodyError = 'invalid_json';
        } catch {
          bodyError = 'invalid_json';
        }
      } else if (contentType.startsWith('application/x-www-form-urlencoded') || contentType === '') {
        for (const [k, v] of new URLSearchParams(raw)) args[k] = v;
      } else {
        bodyError = 'invalid_form_data';
      }
    }

    // Nested values arrive JSON-encoded in form bodies (WebClient JSON.stringifies any non-primitive).
    // Decoded up front so recorded calls show them as objects; a bad one is refused after auth.
    let badJson: string | undefined;
    for (const [field, code] of Object.entries(JSON_FIELDS)) {
      const v = args[field];
      if (typeof v !== 'string') continue;
      try {
        args[field] = JSON.parse(v);
      } catch {
        badJson ??= code;
      }
    }

    // Token: the Authorization header, or (form bodies only) a `token` field; JSON bodies must use the header.
    const header = req.headers.authorization;
    const bearer = header?.startsWith('Bearer ') ? header.slice('Bearer '.length) : undefined;
    const bodyToken = !isJson ? str(args, 'token') : undefined;
    const token = bearer ?? bodyToken;
    delete args.token;

    const reply = (status: number, body: Result, headers: Record<string, string> = {}): void => {
      const ok = body.ok === true;
      this.calls.push({
        method,
        args,
        ok,
        ...(ok ? {} : { error: String(body.error) }),
        status,
        at: this.clock(),
      });
      res.writeHead(status, {
        'content-type': 'application/json; charset=utf-8',
        'x-slack-req-id': randomUUID(),
        ...headers,
      });
      res.end(JSON.stringify(body));
    };
    const refuse = (e: SlackRefusal, warnings: string[] = []): void => {
      const body: Result = { ok: false, error: e.code, ...e.extra };
      const meta: Record<string, unknown> = {};
      if (e.messages.length > 0) meta.messages = e.messages;
      if (warnings.length > 0) {
        meta.warnings = warnings;
        body.warning = warnings.join(',');
      }
      if (Object.keys(meta).length > 0) body.response_metadata = meta;
      reply(200, body);
    };

    // Injected faults first: they model Slack's state, whatever the request.
    const outage = this.take(this.serverErrors, method);
    if (outage) {
      reply(outage.status, { ok: false, error: 'service_unavailable' });
      return;
    }
    const throttle = this.take(this.throttles, method);
    if (throttle) {
      reply(429, { ok: false, error: 'ratelimited' }, { 'retry-after': String(throttle.retryAfter) });
      return;
    }
    const failure = this.take(this.failures, method);
    if (failure) {
      refuse(new SlackRefusal(failure.error));
      return;
    }
    if (bodyError) {
      refuse(new SlackRefusal(bodyError));
      return;
    }
    if (token === undefined || token === '') {
      refuse(new SlackRefusal('not_authed'));
      return;
    }
    if (token !== this.botToken) {
      refuse(new SlackRefusal('invalid_auth'));
      return;
    }
    const handler = this.handlers[method];
    if (!handler || (STREAM_METHODS.has(method) && !this.streaming)) {
      refuse(new SlackRefusal('unknown_method', [], { req_method: method }));
      return;
    }
    const retryAfter = this.checkRateLimit(method, args);
    if (retryAfter !== undefined) {
      reply(429, { ok: false, error: 'ratelimited' }, { 'retry-after': String(retryAfter) });
      return;
    }
    const warnings: string[] = [];
    if (isJson && !contentType.includes('charset')) warnings.push('missing_charset');
    try {
      if (badJson) throw new SlackRefusal(badJson);
      const result = handler(args, warnings);
      const body: Result = { ok: true, ...result };
      if (warnings.length > 0) {
        body.warning = warnings.join(',');
        body.response_metadata = { warnings };
      }
      reply(200, body);
    } catch (e) {
      if (e instanceof SlackRefusal) refuse(e, warnings);
      else throw e;
    }
  }

  private take<T extends { left: number }>(map: Map<string, T[]>, method: string): T | undefined {
    const list = map.get(method);
    const head = list?.[0];
    if (!list || !head) return undefined;
    head.left -= 1;
    if (head.left <= 0) list.shift();
    return head;
  }

  private checkRateLimit(method: string, args: Args): number | undefined {
    if (!this.rateLimitsEnabled) return undefined;
    const now = this.clock();
    const keys: Array<[string, number]> = [];
    const perMinute = this.limits[method];
    if (perMinute !== undefined) {
      // chat.postMessage's special limit is per channel; every other tier is per method per workspace.
      const key = method === 'chat.postMessage' ? `${method} ${str(args, 'channel') ?? ''}` : method;
      keys.push([key, perMinute]);
    }
    if (method === 'chat.update') keys.push(['workspace updates', this.updatesPerMinute]);
    let wait: number | undefined;
    for (const [key, limit] of keys) {
      const w = this.windows.wait(key, limit, now);
      if (w !== undefined) wait = Math.max(wait ?? 0, w);
    }
    if (wait !== undefined) return wait;
    for (const [key] of keys) this.windows.hit(key, now);
    return undefined;
  }

  // ---- methods ----

  private readonly handlers: Record<string, (args: Args, warnings: string[]) => Result> = {
    'auth.test': () => ({
      url: `https://${this.teamName.toLowerCase().replace(/[^a-z0-9]+/g, '-')}.slack.com/`,
      team: this.teamName,
      user: this.users.get(this.botUserId)?.name ?? 'kourier',
      team_id: this.teamId,
      user_id: this.botUserId,
      bot_id: this.botId,
      app_id: this.appId,
      is_enterprise_install: false,
    }),

    'chat.postMessage': (args, warnings) => {
      const channel = this.checkChannel(args);
      const threadTs = this.resolveThread(channel, args);
      const content = this.readContent(args, true);
      warnings.push(...content.warnings);
      const blocks =
        args.blocks !== undefined
          ? validateBlocks(args.blocks, 'invalid_blocks', this.blocksTextLimit)
          : undefined;
      const attachments = this.readAttachments(args);
      const metadata = args.metadata !== undefined ? validateMetadata(args.metadata) : undefined;
      const msg: StoredMessage = {
        channel,
        ts: this.nextTs(),
        user: this.botUserId,
        botId: this.botId,
        appId: this.appId,
        text: content.text ?? '',
        streaming: false,
        edits: 0,
        ...(threadTs !== undefined ? { threadTs } : {}),
        ...(blocks ? { blocks: clone(blocks) } : {}),
        ...(attachments ? { attachments } : {}),
        ...(metadata ? { metadata } : {}),
      };
      this.insert(msg);
      return { channel, ts: msg.ts, message: this.messageJson(msg, false) };
    },

    'chat.update': (args, warnings) => {
      const channel = this.checkChannel(args);
      const ts = str(args, 'ts');
      const m = ts !== undefined ? this.find(channel, ts) : undefined;
      if (!m || m.deleted) throw new SlackRefusal('message_not_found');
      if (!this.isBotMessage(m)) throw new SlackRefusal('cant_update_message');
      if (m.streaming) throw new SlackRefusal('streaming_state_conflict');
      const content = this.readContent(args, true);
      warnings.push(...content.warnings);
      const blocks =
        args.blocks !== undefined
          ? validateBlocks(args.blocks, 'invalid_blocks', this.blocksTextLimit)
          : undefined;
      const attachments = this.readAttachments(args);
      const metadata = args.metadata !== undefined ? validateMetadata(args.metadata) : undefined;
      m.text = content.text ?? '';
      // Omitted blocks/attachments/metadata are retained; `[]` / `{}` remove them (chat.update docs).
      if (blocks !== undefined) {
        if (blocks.length > 0) m.blocks = clone(blocks);
        else delete m.blocks;
      }
      if (attachments !== undefined) {
        if (attachments.length > 0) m.attachments = attachments;
        else delete m.attachments;
      }
      if (metadata === null) delete m.metadata;
      else if (metadata !== undefined) m.metadata = metadata;
      m.edits += 1;
      return { channel, ts: m.ts, text: m.text, message: this.messageJson(m, false) };
    },

    'chat.delete': (args) => {
      const channel = this.checkChannel(args);
      const ts = str(args, 'ts');
      const m = ts !== undefined ? this.find(channel, ts) : undefined;
      if (!m || m.deleted) throw new SlackRefusal('message_not_found');
      if (!this.isBotMessage(m)) throw new SlackRefusal('cant_delete_message');
      m.deleted = true;
      m.streaming = false;
      return { channel, ts: m.ts };
    },

    'chat.postEphemeral': (args, warnings) => {
      const channel = this.checkChannel(args);
      const user = str(args, 'user');
      if (!user || !this.isKnownMember(channel, user)) throw new SlackRefusal('user_not_in_channel');
      const threadTs = this.resolveThread(channel, args);
      const content = this.readContent(args, true);
      warnings.push(...content.warnings);
      const blocks =
        args.blocks !== undefined
          ? validateBlocks(args.blocks, 'invalid_blocks', this.blocksTextLimit)
          : undefined;
      const ts = this.nextTs();
      this.ephemerals.push({
        channel,
        user,
        text: content.text ?? '',
        ts,
        ...(threadTs !== undefined ? { threadTs } : {}),
        ...(blocks ? { blocks: clone(blocks) } : {}),
      });
      return { message_ts: ts };
    },

    'chat.startStream': (args) => {
      const channel = this.checkChannel(args);
      const rawThread = str(args, 'thread_ts');
      if (!rawThread)
        throw new SlackRefusal('invalid_arguments', ['[ERROR] missing required field: thread_ts']);
      const threadTs = this.resolveThread(channel, args);
      const recipientUserId = str(args, 'recipient_user_id');
      const recipientTeamId = str(args, 'recipient_team_id');
      if (!channel.startsWith('D')) {
        // Required outside DMs (chat.startStream: missing_recipient_user_id / missing_recipient_team_id).
        if (!recipientUserId) throw new SlackRefusal('missing_recipient_user_id');
        if (!recipientTeamId) throw new SlackRefusal('missing_recipient_team_id');
      }
      if (recipientTeamId !== undefined && recipientTeamId !== this.teamId)
        throw new SlackRefusal('team_not_found');
      if (recipientUserId !== undefined && !this.users.has(recipientUserId))
        throw new SlackRefusal('user_not_found');
      const added = this.readStreamText(args);
      const msg: StoredMessage = {
        channel,
        ts: this.nextTs(),
        user: this.botUserId,
        botId: this.botId,
        appId: this.appId,
        text: added.text,
        streaming: true,
        streamState: 'streaming',
        edits: 0,
        ...(threadTs !== undefined ? { threadTs } : {}),
        ...(added.other.length > 0 ? { chunks: added.other } : {}),
        ...(recipientUserId !== undefined ? { recipientUserId } : {}),
        ...(recipientTeamId !== undefined ? { recipientTeamId } : {}),
      };
      this.insert(msg);
      return { channel, ts: msg.ts };
    },

    'chat.appendStream': (args) => {
      const m = this.streamTarget(args);
      const added = this.readStreamText(args);
      if (added.text === '' && added.other.length === 0) throw new SlackRefusal('no_text');
      m.text += added.text;
      if (added.other.length > 0) m.chunks = [...(m.chunks ?? []), ...added.other];
      m.edits += 1;
      return { channel: m.channel, ts: m.ts };
    },

    'chat.stopStream': (args) => {
      const m = this.streamTarget(args);
      const added = this.readStreamText(args);
      const blocks =
        args.blocks !== undefined
          ? validateBlocks(args.blocks, 'msg_blocks_too_many', this.blocksTextLimit)
          : undefined;
      const metadata = args.metadata !== undefined ? validateMetadata(args.metadata) : undefined;
      m.text += added.text;
      if (added.other.length > 0) m.chunks = [...(m.chunks ?? []), ...added.other];
      if (blocks && blocks.length > 0) m.blocks = [...(m.blocks ?? []), ...clone(blocks)];
      if (metadata) m.metadata = metadata;
      m.streaming = false;
      m.streamState = 'stopped';
      return { channel: m.channel, ts: m.ts, message: this.messageJson(m, false) };
    },

    'reactions.add': (args) => {
      const { channel, ts, name } = this.reactionTarget(args);
      if (this.reactions.some((r) => r.channel === channel && r.ts === ts && r.name === name && !r.removed)) {
        throw new SlackRefusal('already_reacted');
      }
      this.reactions.push({ channel, ts, name, removed: false });
      return {};
    },

    'reactions.remove': (args) => {
      const { channel, ts, name } = this.reactionTarget(args);
      const r = this.reactions.find(
        (x) => x.channel === channel && x.ts === ts && x.name === name && !x.removed,
      );
      if (!r) throw new SlackRefusal('no_reaction');
      r.removed = true;
      return {};
    },

    'users.info': (args) => {
      const id = str(args, 'user');
      const u = id !== undefined ? this.users.get(id) : undefined;
      if (!u) throw new SlackRefusal('user_not_found');
      const profile: Record<string, unknown> = {
        real_name: u.realName ?? u.name,
        display_name: u.name,
        ...(u.email !== undefined ? { email: u.email } : {}),
      };
      return {
        user: {
          id: u.id,
          team_id: this.teamId,
          name: u.name,
          real_name: u.realName ?? u.name,
          deleted: u.deleted ?? false,
          is_bot: u.isBot ?? false,
          is_app_user: false,
          profile,
        },
      };
    },

    // views.open (addition): Block Kit's modal surface, docs.slack.dev/reference/methods/views.open and
    // docs.slack.dev/surfaces/modals (title 24, submit/close 24, callback_id 255, private_metadata 3000
    // characters, 100 blocks; a modal with input blocks needs `submit`). The trigger_id is not checked
    // against a press (tests craft presses), only required.
    'views.open': (args) => {
      const triggerId = str(args, 'trigger_id');
      if (!triggerId)
        throw new SlackRefusal('invalid_arguments', ['[ERROR] missing required field: trigger_id']);
      let view = args.view;
      if (typeof view === 'string') {
        try {
          view = JSON.parse(view) as unknown;
        } catch {
          throw new SlackRefusal('invalid_arguments', ['[ERROR] view must be JSON']);
        }
      }
      const checked = validateView(view);
      const id = `V${randomUUID().replace(/-/g, '').slice(0, 10).toUpperCase()}`;
      this.views.push({ id, triggerId, view: clone(checked) });
      return { view: { id, ...clone(checked), state: { values: {} } } };
    },

    'usergroups.users.list': (args) => {
      const id = str(args, 'usergroup');
      const g = id !== undefined ? this.groups.get(id) : undefined;
      // Assumed: a disabled group is invisible unless include_disabled is passed.
      if (!g || (g.disabled && !flag(args, 'include_disabled'))) throw new SlackRefusal('no_such_subteam');
      return { users: [...g.users] };
    },

    'conversations.replies': (args) => {
      const channel = this.checkChannel(args);
      const ts = str(args, 'ts');
      if (!ts) throw new SlackRefusal('invalid_arguments', ['[ERROR] missing required field: ts']);
      if (!TS_RE.test(ts)) throw new SlackRefusal('invalid_ts_latest');
      const target = this.find(channel, ts);
      if (!target) throw new SlackRefusal('thread_not_found');
      const rootTs = target.threadTs ?? target.ts;
      const root = this.find(channel, rootTs);
      const replies = (this.store.get(channel) ?? []).filter((m) => m.threadTs === rootTs && !m.deleted);
      if (!root || (root.deleted && replies.length === 0)) throw new SlackRefusal('thread_not_found');
      const withMetadata = flag(args, 'include_all_metadata');
      const inclusive = flag(args, 'inclusive');
      const oldest = str(args, 'oldest');
      const latest = str(args, 'latest');
      const inRange = (m: StoredMessage): boolean => {
        if (oldest !== undefined) {
          const c = compareTs(m.ts, oldest.includes('.') ? oldest : `${oldest}.000000`);
          if (c < 0 || (c === 0 && !inclusive)) return false;
        }
        if (latest !== undefined) {
          const c = compareTs(m.ts, latest.includes('.') ? latest : `${latest}.000000`);
          if (c > 0 || (c === 0 && !inclusive)) return false;
        }
        return true;
      };
      const rootJson = root.deleted
        ? {
            type: 'message',
            subtype: 'tombstone',
            text: 'This message was deleted.',
            user: 'USLACKBOT',
            ts: root.ts,
          }
        : this.messageJson(root, withMetadata);
      const all = [rootJson, ...replies.filter(inRange).map((m) => this.messageJson(m, withMetadata))];
      let start = 0;
      const cursor = str(args, 'cursor');
      if (cursor) {
        const decoded = Buffer.from(cursor, 'base64').toString('utf8');
        const m = /^next_ts:(\d+)$/.exec(decoded);
        if (!m?.[1]) throw new SlackRefusal('invalid_cursor');
        const after = BigInt(m[1]);
        start = all.findIndex((x) => tsToMicros(String(x.ts)) >= after);
        if (start < 0) start = all.length;
      }
      const askedLimit = Number(str(args, 'limit') ?? this.repliesMaxLimit);
      const limit = Math.max(
        1,
        Math.min(Number.isFinite(askedLimit) ? askedLimit : 1000, this.repliesMaxLimit),
      );
      const page = all.slice(start, start + limit);
      const nextItem = all[start + limit];
      const hasMore = nextItem !== undefined;
      return {
        messages: page,
        has_more: hasMore,
        ...(hasMore
          ? {
              response_metadata: {
                next_cursor: Buffer.from(`next_ts:${tsToMicros(String(nextItem.ts))}`).toString('base64'),
              },
            }
          : {}),
      };
    },

    // conversations.history (addition): docs.slack.dev/reference/methods/conversations.history — the
    // channel's own messages (thread replies are not in it, their roots are), newest first; `oldest` and
    // `latest` bound it (exclusive unless `inclusive`), `limit` defaults to 100 and is capped at 999, and
    // the cursor continues with older messages.
    'conversations.history': (args) => {
      const channel = this.checkChannel(args);
      const withMetadata = flag(args, 'include_all_metadata');
      const inclusive = flag(args, 'inclusive');
      const bound = (v: string | undefined): string | undefined =>
        v === undefined ? undefined : v.includes('.') ? v : `${v}.000000`;
      const oldest = bound(str(args, 'oldest'));
      const latest = bound(str(args, 'latest'));
      const all = (this.store.get(channel) ?? [])
        .filter((m) => !m.deleted && (m.threadTs === undefined || m.threadTs === m.ts))
        .filter((m) => {
          if (oldest !== undefined) {
            const c = compareTs(m.ts, oldest);
            if (c < 0 || (c === 0 && !inclusive)) return false;
          }
          if (latest !== undefined) {
            const c = compareTs(m.ts, latest);
            if (c > 0 || (c === 0 && !inclusive)) return false;
          }
          return true;
        })
        .sort((a, b) => compareTs(b.ts, a.ts));
      let start = 0;
      const cursor = str(args, 'cursor');
      if (cursor) {
        const m = /^next_ts:(\d+)$/.exec(Buffer.from(cursor, 'base64').toString('utf8'));
        if (!m?.[1]) throw new SlackRefusal('invalid_cursor');
        const before = BigInt(m[1]);
        start = all.findIndex((x) => tsToMicros(x.ts) <= before);
        if (start < 0) start = all.length;
      }
      const asked = Number(str(args, 'limit') ?? 100);
      const limit = Math.max(1, Math.min(Number.isFinite(asked) ? asked : 100, 999));
      const page = all.slice(start, start + limit);
      const next = all[start + limit];
      return {
        messages: page.map((m) => this.messageJson(m, withMetadata)),
        has_more: next !== undefined,
        ...(next === undefined
          ? {}
          : {
              response_metadata: {
                next_cursor: Buffer.from(`next_ts:${tsToMicros(next.ts)}`).toString('base64'),
              },
            }),
      };
    },

    'conversations.info': (args) => {
      const channel = this.checkChannel(args);
      const isIm = channel.startsWith('D');
      const isPrivate = channel.startsWith('G');
      return {
        channel: {
          id: channel,
          ...(isIm ? {} : { name: channel.toLowerCase() }),
          is_channel: !isIm && !isPrivate,
          is_group: isPrivate,
          is_im: isIm,
          is_mpim: false,
          is_private: isIm || isPrivate,
          is_archived: false,
          is_member: true,
          is_ext_shared: false,
          context_team_id: this.teamId,
          created: Math.floor(this.clock() / 1000),
        },
      };
    },
  };

  private readStreamText(args: Args): { text: string; other: unknown[] } {
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

  private streamTarget(args: Args): StoredMessage {
    const channel = this.checkChannel(args);
    const ts = str(args, 'ts');
    const m = ts !== undefined ? this.find(channel, ts) : undefined;
    if (!m || m.deleted) throw new SlackRefusal('message_not_found');
    if (!this.isBotMessage(m)) throw new SlackRefusal('message_not_owned_by_app');
    if (!m.streaming) throw new SlackRefusal('message_not_in_streaming_state');
    return m;
  }

  private reactionTarget(args: Args): { channel: string; ts: string; name: string } {
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

export async function startFakeSlack(options: FakeSlackOptions = {}): Promise<FakeSlack> {
  const fake = new FakeSlackServer(options);
  await fake.listen();
  return fake;
}
