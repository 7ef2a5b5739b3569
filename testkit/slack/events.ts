/**
 * Inbound Slack traffic for an app in HTTP mode, built and signed the way Slack sends it:
 * Events API `event_callback` envelopes (application/json) and interactivity payloads
 * (application/x-www-form-urlencoded `payload=<json>`), each signed with Slack's v0 scheme —
 * `x-slack-signature: v0=hex(HMAC-SHA256(signingSecret, "v0:{timestamp}:{raw body}"))` and
 * `x-slack-request-timestamp: {unix seconds}`. Bolt (receivers/verify-request.js) rejects a timestamp
 * more than 5 minutes in the past and any signature mismatch, answering 401.
 *
 * Sources: docs.slack.dev/authentication/verifying-requests-from-slack,
 * docs.slack.dev/apis/events-api (envelope, X-Slack-Retry-Num / X-Slack-Retry-Reason),
 * docs.slack.dev/reference/events/app_mention and /message, docs.slack.dev/reference/interaction-payloads.
 */
import { createHmac, randomUUID } from 'node:crypto';

export interface SignedRequestOptions {
  /** Signature timestamp (unix seconds); default now. */
  timestampSeconds?: number;
  /** Sign with a wrong secret, as a forger would. */
  badSignature?: boolean;
  /** X-Slack-Retry-Num / X-Slack-Retry-Reason (e.g. 'http_timeout'), as on Slack's redeliveries. */
  retryNum?: number;
  retryReason?: string;
}

export interface SendEventOptions extends SignedRequestOptions {
  teamId?: string; // default 'T0001'
  eventId?: string; // default a fresh 'Ev…' id (keep it to model a redelivery)
  eventTime?: number; // unix seconds; default now
  // ---- additions ----
  apiAppId?: string; // default 'A0APP'
  /** The installation the event is for (authorizations[0].user_id); default 'U0BOT'. */
  botUserId?: string;
}

export function signSlackRequest(
  signingSecret: string,
  body: string,
  timestampSeconds: number = Math.floor(Date.now() / 1000),
): { 'x-slack-signature': string; 'x-slack-request-timestamp': string } {
  const hex = createHmac('sha256', signingSecret).update(`v0:${timestampSeconds}:${body}`).digest('hex');
  return { 'x-slack-signature': `v0=${hex}`, 'x-slack-request-timestamp': String(timestampSeconds) };
}

function eventId(): string {
  return `Ev${randomUUID().replace(/-/g, '').slice(0, 10).toUpperCase()}`;
}

/** The `event_callback` envelope Slack wraps every Events API event in. */
export function eventEnvelope(
  event: Record<string, unknown>,
  options: SendEventOptions = {},
): Record<string, unknown> {
  const teamId = options.teamId ?? 'T0001';
  return {
    token: 'verification-token-unused',
    team_id: teamId,
    context_team_id: teamId,
    context_enterprise_id: null,
    api_app_id: options.apiAppId ?? 'A0APP',
    event,
    type: 'event_callback',
    event_id: options.eventId ?? eventId(),
    event_time: options.eventTime ?? Math.floor(Date.now() / 1000),
    authorizations: [
      {
        enterprise_id: null,
        team_id: teamId,
        user_id: options.botUserId ?? 'U0BOT',
        is_bot: true,
        is_enterprise_install: false,
      },
    ],
    is_ext_shared_channel: false,
  };
}

async function sendSigned(
  url: string,
  signingSecret: string,
  body: string,
  contentType: string,
  options: SignedRequestOptions,
): Promise<{ status: number; body: string; elapsedMs: number }> {
  const signed = signSlackRequest(
    options.badSignature ? `${signingSecret}-forged` : signingSecret,
    body,
    options.timestampSeconds,
  );
  const headers: Record<string, string> = {
    'content-type': contentType,
    'user-agent': 'Slackbot 1.0 (+https://api.slack.com/robots)',
    ...signed,
  };
  if (options.retryNum !== undefined) headers['x-slack-retry-num'] = String(options.retryNum);
  if (options.retryReason !== undefined) headers['x-slack-retry-reason'] = options.retryReason;
  const started = performance.now();
  const res = await fetch(url, { method: 'POST', headers, body });
  const text = await res.text();
  return { status: res.status, body: text, elapsedMs: performance.now() - started };
}

/** POSTs `event` wrapped in an event_callback envelope, signed, as application/json. */
export async function sendSlackEvent(
  appUrl: string,
  signingSecret: string,
  event: Record<string, unknown>,
  options: SendEventOptions = {},
): Promise<{ status: number; body: string; elapsedMs: number }> {
  return sendSigned(
    appUrl,
    signingSecret,
    JSON.stringify(eventEnvelope(event, options)),
    'application/json',
    options,
  );
}

/**
 * POSTs an interactivity payload (block_actions, view_submission, …) as Slack does: form-encoded
 * `payload=<json>` with Content-Type exactly `application/x-www-form-urlencoded` (Bolt compares it
 * verbatim), signed over the encoded body.
 */
export async function sendSlackInteraction(
  appUrl: string,
  signingSecret: string,
  payload: Record<string, unknown>,
  options: SendEventOptions = {},
): Promise<{ status: number; body: string; elapsedMs: number }> {
  const body = new URLSearchParams({ payload: JSON.stringify(payload) }).toString();
  return sendSigned(appUrl, signingSecret, body, 'application/x-www-form-urlencoded', options);
}

/** The `rich_text` block Slack attaches to messages typed by people. */
function richTextBlocks(text: string): unknown[] {
  return [
    {
      type: 'rich_text',
      block_id: randomUUID().slice(0, 5),
      elements: [{ type: 'rich_text_section', elements: [{ type: 'text', text }] }],
    },
  ];
}

/**
 * An `app_mention` event. `text` gets a leading `<@botUserId>` unless it already mentions the bot
 * (Slack puts the mention in the text the user typed).
 */
export function mentionEvent(o: {
  channel: string;
  user: string;
  text: string;
  ts: string;
  threadTs?: string;
  botUserId?: string;
  teamId?: string;
}): Record<string, unknown> {
  const mention = `<@${o.botUserId ?? 'U0BOT'}>`;
  const text = o.text.includes(mention) ? o.text : `${mention} ${o.text}`;
  return {
    type: 'app_mention',
    user: o.user,
    text,
    ts: o.ts,
    client_msg_id: randomUUID(),
    team: o.teamId ?? 'T0001',
    blocks: richTextBlocks(text),
    channel: o.channel,
    event_ts: o.ts,
    ...(o.threadTs !== undefined ? { thread_ts: o.threadTs } : {}),
  };
}

/** A `message` event (message.channels / message.im). Bot messages carry `bot_id` and no client_msg_id. */
export function messageEvent(o: {
  channel: string;
  user: string;
  text: string;
  ts: string;
  threadTs?: string;
  subtype?: string;
  botId?: string;
  channelType?: 'channel' | 'im';
  teamId?: string;
}): Record<string, unknown> {
  const human = o.botId === undefined && o.subtype === undefined;
  return {
    type: 'message',
    ...(o.subtype !== undefined ? { subtype: o.subtype } : {}),
    user: o.user,
    text: o.text,
    ts: o.ts,
    ...(human ? { client_msg_id: randomUUID(), blocks: richTextBlocks(o.text) } : {}),
    ...(o.botId !== undefined ? { bot_id: o.botId, app_id: 'A0APP' } : {}),
    team: o.teamId ?? 'T0001',
    channel: o.channel,
    event_ts: o.ts,
    channel_type: o.channelType ?? (o.channel.startsWith('D') ? 'im' : 'channel'),
    ...(o.threadTs !== undefined ? { thread_ts: o.threadTs } : {}),
  };
}

/**
 * A `block_actions` payload for a button click on a message (addition): what Bolt's `app.action()`
 * receives, with `user.id`, `container.message_ts`/`channel_id`, the message's blocks, and `actions[0]`.
 */
export function blockActionsPayload(o: {
  user: string;
  channel: string;
  messageTs: string;
  threadTs?: string;
  actionId: string;
  blockId?: string;
  value?: string;
  messageBlocks?: unknown[];
  messageText?: string;
  teamId?: string;
  botUserId?: string;
  /** The element's type (default 'button'; 'feedback_buttons' for a feedback press). */
  actionType?: string;
  /** The press's response_url (the fake's `responseUrl()`); default: one that goes nowhere. */
  responseUrl?: string;
  /** A press on an ephemeral message: Slack sends no `message` then, only the container. */
  ephemeral?: boolean;
}): Record<string, unknown> {
  const teamId = o.teamId ?? 'T0001';
  const actionTs = `${(Date.now() / 1000).toFixed(6)}`;
  return {
    type: 'block_actions',
    user: { id: o.user, username: o.user.toLowerCase(), name: o.user.toLowerCase(), team_id: teamId },
    api_app_id: 'A0APP',
    token: 'verification-token-unused',
    container: {
      type: 'message',
      message_ts: o.messageTs,
      channel_id: o.channel,
      is_ephemeral: o.ephemeral === true,
      ...(o.threadTs !== undefined ? { thread_ts: o.threadTs } : {}),
    },
    trigger_id: `${Date.now()}.${randomUUID().slice(0, 8)}`,
    team: { id: teamId, domain: 'fake' },
    enterprise: null,
    is_enterprise_install: false,
    channel: { id: o.channel, name: o.channel.toLowerCase() },
    ...(o.ephemeral === true
      ? {}
      : {
          message: {
            type: 'message',
            user: o.botUserId ?? 'U0BOT',
            bot_id: 'B0BOT',
            ts: o.messageTs,
            text: o.messageText ?? '',
            blocks: o.messageBlocks ?? [],
            ...(o.threadTs !== undefined ? { thread_ts: o.threadTs } : {}),
          },
        }),
    state: { values: {} },
    response_url: o.responseUrl ?? `https://hooks.slack.com/actions/${teamId}/0/fake`,
    actions: [
      {
        type: o.actionType ?? 'button',
        action_id: o.actionId,
        block_id: o.blockId ?? 'b',
        text: { type: 'plain_text', text: o.actionId, emoji: true },
        ...(o.value !== undefined ? { value: o.value } : {}),
        action_ts: actionTs,
      },
    ],
  };
}

/**
 * A `view_submission` payload (addition): a modal submitted, as Bolt's `app.view()` receives it,
 * with `view.callback_id`, `view.private_metadata` and the inputs' `view.state.values`
 * (docs.slack.dev/reference/interaction-payloads/view-interactions-payload).
 */
export function viewSubmissionPayload(o: {
  user: string;
  view: Record<string, unknown>;
  values: Record<string, Record<string, unknown>>;
  viewId?: string;
  teamId?: string;
}): Record<string, unknown> {
  const teamId = o.teamId ?? 'T0001';
  return {
    type: 'view_submission',
    team: { id: teamId, domain: 'fake' },
    user: { id: o.user, username: o.user.toLowerCase(), name: o.user.toLowerCase(), team_id: teamId },
    api_app_id: 'A0APP',
    token: 'verification-token-unused',
    trigger_id: `${Date.now()}.${randomUUID().slice(0, 8)}`,
    view: {
      id: o.viewId ?? 'V0VIEW',
      team_id: teamId,
      type: 'modal',
      blocks: o.view.blocks ?? [],
      private_metadata: o.view.private_metadata ?? '',
      callback_id: o.view.callback_id ?? '',
      state: { values: o.values },
      hash: `${Date.now()}.abc`,
      title: o.view.title,
      app_id: 'A0APP',
      bot_id: 'B0BOT',
    },
    response_urls: [],
    is_enterprise_install: false,
    enterprise: null,
  };
}
