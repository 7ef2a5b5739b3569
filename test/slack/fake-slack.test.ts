import type { AddressInfo } from 'node:net';
import { App, HTTPReceiver, type Logger, LogLevel, verifySlackRequest } from '@slack/bolt';
import {
  type Block,
  ErrorCode,
  type KnownBlock,
  type WebAPICallError,
  WebAPIPlatformError,
  WebAPIRateLimitedError,
  WebAPIRequestError,
  WebClient,
  WebClientEvent,
} from '@slack/web-api';
import { afterEach, describe, expect, it } from 'vitest';
import { type FakeSlack, type FakeSlackOptions, startFakeSlack } from '../../testkit/slack/index.js';
import { quietWindow } from '../helpers/quiet-window.js';
import {
  blockActionsPayload,
  mentionEvent,
  messageEvent,
  sendSlackEvent,
  sendSlackInteraction,
  signSlackRequest,
} from './events.js';

const CHANNEL = 'C0CHAN';
const USER = 'U0HUMAN';
const quiet = { logLevel: LogLevel.ERROR };
/** WebClient logs Slack's `[ERROR] …` response messages at error level; the tests assert them instead. */
const silent: Logger = {
  debug: () => {},
  info: () => {},
  warn: () => {},
  error: () => {},
  setLevel: () => {},
  getLevel: () => LogLevel.ERROR,
  setName: () => {},
};

const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((x) => x.close()));
});

async function fake(options: FakeSlackOptions = {}): Promise<FakeSlack> {
  const f = await startFakeSlack(options);
  open.push(f);
  return f;
}

function client(f: FakeSlack, extra: ConstructorParameters<typeof WebClient>[1] = {}): WebClient {
  return new WebClient(f.botToken, {
    slackApiUrl: f.url,
    retryConfig: { retries: 0 },
    logger: silent,
    ...extra,
  });
}

/** The Slack error code a rejected call carries. */
async function slackError(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (e) {
    if (e instanceof WebAPIPlatformError) return e.data.error;
    throw e;
  }
  throw new Error('expected the call to be refused');
}

function section(text: string): KnownBlock {
  return { type: 'section', text: { type: 'mrkdwn', text } };
}

describe('fake Slack Web API, through the real WebClient', () => {
  it('authenticates like Slack: auth.test, wrong token → invalid_auth, JSON body token → not_authed', async () => {
    const f = await fake();
    const auth = await client(f).auth.test();
    expect(auth).toMatchObject({ ok: true, team_id: 'T0001', user_id: 'U0BOT', bot_id: 'B0BOT' });

    const wrong = new WebClient('xoxb-other', { slackApiUrl: f.url, retryConfig: { retries: 0 }, ...quiet });
    expect(await slackError(wrong.auth.test())).toBe('invalid_auth');

    // WebClient sends form bodies with the token in an Authorization header; JSON needs the header too.
    const call = f.callsOf('auth.test')[0];
    expect(call).toMatchObject({ method: 'auth.test', ok: true, status: 200 });
    expect(call?.args).not.toHaveProperty('token');
    const res = await fetch(`${f.url}chat.postMessage`, {
      method: 'POST',
      headers: { 'content-type': 'application/json; charset=utf-8' },
      body: JSON.stringify({ token: f.botToken, channel: CHANNEL, text: 'hi' }),
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ok: false, error: 'not_authed' });
    const jsonOk = await fetch(`${f.url}chat.postMessage`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${f.botToken}` },
      body: JSON.stringify({
        channel: CHANNEL,
        text: 'hi',
        metadata: { event_type: 'x', event_payload: { a: 1 } },
      }),
    });
    const body = (await jsonOk.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ ok: true, channel: CHANNEL, warning: 'missing_charset' });
    expect(f.message(CHANNEL, String(body.ts))?.metadata).toEqual({
      event_type: 'x',
      event_payload: { a: 1 },
    });
    expect(await slackError(client(f).apiCall('chat.nonesuch'))).toBe('unknown_method');

    // A form body as WebClient sends it, with a nested value that is not JSON.
    const form = await fetch(`${f.url}chat.postMessage`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Bearer ${f.botToken}` },
      body: new URLSearchParams({ channel: CHANNEL, text: 'x', blocks: '[{"type":' }).toString(),
    });
    expect(await form.json()).toEqual({ ok: false, error: 'invalid_blocks_format' });
  });

  it('posts, replies in a thread with metadata, and updates only its own messages', async () => {
    const f = await fake();
    const web = client(f);
    const root = f.postUserMessage({ channel: CHANNEL, user: USER, text: 'question' });
    expect(root.ts).toMatch(/^\d+\.\d{6}$/);

    const blocks: Array<KnownBlock | Block> = [section('*thinking*'), { type: 'divider' }];
    const posted = await web.chat.postMessage({
      channel: CHANNEL,
      thread_ts: root.ts,
      text: 'thinking',
      blocks,
      metadata: { event_type: 'kourier_turn', event_payload: { session: 's1', turn: 1 } },
    });
    expect(posted.ok).toBe(true);
    const replyTs = String(posted.ts);
    expect(replyTs > root.ts).toBe(true);
    // Form encoding: blocks/metadata travel as JSON strings and are recorded decoded.
    expect(f.callsOf('chat.postMessage')[0]?.args.blocks).toEqual(blocks);

    const updated = await web.chat.update({ channel: CHANNEL, ts: replyTs, text: 'the answer' });
    expect(updated).toMatchObject({ ok: true, ts: replyTs, text: 'the answer' });
    expect(f.message(CHANNEL, replyTs)).toMatchObject({
      threadTs: root.ts,
      user: 'U0BOT',
      text: 'the answer',
      blocks, // omitted blocks are kept (chat.update docs); [] would remove them
      metadata: { event_type: 'kourier_turn', event_payload: { session: 's1', turn: 1 } },
      streaming: false,
      edits: 1,
    });
    await web.chat.update({ channel: CHANNEL, ts: replyTs, text: 'final', blocks: [] });
    expect(f.message(CHANNEL, replyTs)?.blocks).toBeUndefined();

    // A reply to a reply lands in the root's thread.
    const nested = await web.chat.postMessage({ channel: CHANNEL, thread_ts: replyTs, text: 'more' });
    expect(f.messages(CHANNEL, root.ts).map((m) => m.ts)).toEqual([root.ts, replyTs, nested.ts]);
    expect(f.messages(CHANNEL).length).toBe(3);

    expect(await slackError(web.chat.update({ channel: CHANNEL, ts: root.ts, text: 'x' }))).toBe(
      'cant_update_message',
    );
    expect(await slackError(web.chat.update({ channel: CHANNEL, ts: '1.000001', text: 'x' }))).toBe(
      'message_not_found',
    );
    expect(
      await slackError(web.chat.postMessage({ channel: CHANNEL, thread_ts: '1.000001', text: 'x' })),
    ).toBe('thread_not_found');
    expect(await slackError(web.chat.delete({ channel: CHANNEL, ts: root.ts }))).toBe('cant_delete_message');
    await web.chat.delete({ channel: CHANNEL, ts: String(nested.ts) });
    expect(f.message(CHANNEL, String(nested.ts))?.deleted).toBe(true);
    expect(await slackError(web.chat.update({ channel: CHANNEL, ts: String(nested.ts), text: 'x' }))).toBe(
      'message_not_found',
    );

    const eph = await web.chat.postEphemeral({
      channel: CHANNEL,
      user: USER,
      text: 'only you',
      thread_ts: root.ts,
    });
    expect(eph.message_ts).toMatch(/^\d+\.\d{6}$/);
    expect(f.ephemerals).toEqual([
      { channel: CHANNEL, user: USER, text: 'only you', threadTs: root.ts, ts: eph.message_ts },
    ]);
    expect(await slackError(web.chat.postEphemeral({ channel: CHANNEL, user: 'U0NOBODY', text: 'x' }))).toBe(
      'user_not_in_channel',
    );
  });

  it('refuses what Slack refuses: text, block count, section and cumulative block sizes', async () => {
    const f = await fake();
    const web = client(f);
    const post = (args: Record<string, unknown>) =>
      web.apiCall('chat.postMessage', { channel: CHANNEL, ...args });

    await post({ text: 'x'.repeat(40_000) });
    expect(await slackError(post({ text: 'x'.repeat(40_001) }))).toBe('msg_too_long');
    expect(await slackError(post({}))).toBe('no_text');
    expect(await slackError(post({ text: 'a', markdown_text: 'b' }))).toBe('markdown_text_conflict');

    const fifty = Array.from({ length: 50 }, (_, i) => section(`block ${i}`));
    await post({ text: 'fifty', blocks: fifty });
    expect(await slackError(post({ text: 'too many', blocks: [...fifty, section('51')] }))).toBe(
      'invalid_blocks',
    );

    await post({ text: 'ok', blocks: [section('s'.repeat(3000))] });
    try {
      await post({ text: 'long', blocks: [section('s'.repeat(3001))] });
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(WebAPIPlatformError);
      const data = (e as WebAPIPlatformError).data;
      expect(data.error).toBe('invalid_blocks');
      expect(data.response_metadata?.messages).toEqual([
        '[ERROR] must be less than 3001 characters [json-pointer:/blocks/0/text/text]',
      ]);
    }
    expect(
      await slackError(
        post({
          text: 'h',
          blocks: [{ type: 'header', text: { type: 'plain_text', text: 'h'.repeat(151) } }],
        }),
      ),
    ).toBe('invalid_blocks');
    expect(await slackError(post({ text: 'b', blocks: [{ type: 'nonesuch' }] }))).toBe('invalid_blocks');

    // Cumulative text across blocks: 4 × 3,000 = 12,000 passes, one more character does not.
    const four = Array.from({ length: 4 }, () => section('m'.repeat(3000)));
    await post({ text: 'at the limit', blocks: four });
    expect(await slackError(post({ text: 'over', blocks: [...four, section('!')] }))).toBe(
      'msg_blocks_too_long',
    );
    const bigMarkdown = [{ type: 'markdown', text: 'm'.repeat(12_000) }];
    await post({ text: 'md', blocks: bigMarkdown });
    expect(
      await slackError(post({ text: 'md', blocks: [...bigMarkdown, { type: 'markdown', text: 'x' }] })),
    ).toBe('msg_blocks_too_long');

    // Slack itself truncates over-long text with a warning; the fake does that only when asked.
    const lenient = await fake({ longText: 'truncate' });
    const truncated = await client(lenient).chat.postMessage({ channel: CHANNEL, text: 'y'.repeat(40_001) });
    expect(truncated.response_metadata?.warnings).toEqual(['message_truncated']);
    expect(lenient.message(CHANNEL, String(truncated.ts))?.text.length).toBe(40_000);

    const root = f.postUserMessage({ channel: CHANNEL, user: USER, text: 'q' });
    const reply = await web.chat.postMessage({ channel: CHANNEL, text: 'r', thread_ts: root.ts });
    expect(
      await slackError(web.chat.update({ channel: CHANNEL, ts: String(reply.ts), text: 'x'.repeat(40_001) })),
    ).toBe('msg_too_long');
    expect(f.message(CHANNEL, String(reply.ts))?.text).toBe('r');
  });

  it('streams: start, append (text and chunks), update refused mid-stream, stop with blocks', async () => {
    const f = await fake();
    const web = client(f);
    const root = f.postUserMessage({ channel: CHANNEL, user: USER, text: 'long question' });

    expect(await slackError(web.chat.startStream({ channel: CHANNEL, thread_ts: root.ts }))).toBe(
      'missing_recipient_user_id',
    );
    const started = await web.chat.startStream({
      channel: CHANNEL,
      thread_ts: root.ts,
      recipient_user_id: USER,
      recipient_team_id: f.teamId,
      markdown_text: 'Hello',
    });
    const ts = String(started.ts);
    expect(f.message(CHANNEL, ts)).toMatchObject({
      threadTs: root.ts,
      text: 'Hello',
      streaming: true,
      edits: 0,
    });

    await web.chat.appendStream({ channel: CHANNEL, ts, markdown_text: ', world' });
    await web.chat.appendStream({
      channel: CHANNEL,
      ts,
      chunks: [
        { type: 'markdown_text', text: '!' },
        { type: 'task_update', id: 't1', title: 'search', status: 'in_progress' },
      ],
    });
    expect(
      await slackError(web.chat.appendStream({ channel: CHANNEL, ts, markdown_text: 'x'.repeat(12_001) })),
    ).toBe('msg_too_long');
    expect(await slackError(web.chat.update({ channel: CHANNEL, ts, text: 'edit' }))).toBe(
      'streaming_state_conflict',
    );
    expect(f.message(CHANNEL, ts)).toMatchObject({ text: 'Hello, world!', streaming: true, edits: 2 });

    const feedback = [
      {
        type: 'context_actions',
        elements: [
          {
            type: 'feedback_buttons',
            action_id: 'feedback',
            positive_button: { text: { type: 'plain_text', text: 'Good' }, value: 'good' },
            negative_button: { text: { type: 'plain_text', text: 'Bad' }, value: 'bad' },
          },
        ],
      },
    ];
    const stopped = await web.chat.stopStream({
      channel: CHANNEL,
      ts,
      markdown_text: ' Bye.',
      blocks: feedback,
    });
    expect(stopped.message?.text).toBe('Hello, world! Bye.');
    expect(f.message(CHANNEL, ts)).toMatchObject({
      text: 'Hello, world! Bye.',
      streaming: false,
      streamState: 'stopped',
      blocks: feedback,
      chunks: [{ type: 'task_update', id: 't1', title: 'search', status: 'in_progress' }],
    });
    expect(await slackError(web.chat.appendStream({ channel: CHANNEL, ts, markdown_text: 'late' }))).toBe(
      'message_not_in_streaming_state',
    );
    expect(
      await slackError(web.chat.appendStream({ channel: CHANNEL, ts: root.ts, markdown_text: 'x' })),
    ).toBe('message_not_owned_by_app');
  });

  it('a stream the server ends early refuses append and stop, keeps its text, and accepts chat.update', async () => {
    const f = await fake();
    const web = client(f);
    const dm = 'D0DM';
    const root = f.postUserMessage({ channel: dm, user: USER, text: 'hi' });
    // In a DM no recipient is needed; WebClient's own ChatStreamer sends markdown_text chunks.
    const streamer = web.chatStream({ channel: dm, thread_ts: root.ts, buffer_size: 1 });
    await streamer.append({ markdown_text: 'partial answer' });
    const ts = String(streamer.ts);
    expect(f.message(dm, ts)).toMatchObject({ text: 'partial answer', streaming: true });

    f.endStreamEarly(dm, ts);
    expect(await slackError(streamer.append({ markdown_text: ' more' }))).toBe(
      'message_not_in_streaming_state',
    );
    expect(await slackError(web.chat.stopStream({ channel: dm, ts }))).toBe('message_not_in_streaming_state');
    expect(f.message(dm, ts)).toMatchObject({
      text: 'partial answer',
      streaming: false,
      streamState: 'expired',
    });

    await web.chat.update({ channel: dm, ts, text: 'partial answer, finished by edit' });
    expect(f.message(dm, ts)?.text).toBe('partial answer, finished by edit');
  });

  it('without streaming, the stream methods are unknown_method', async () => {
    const f = await fake({ streaming: false });
    const root = f.postUserMessage({ channel: 'D0DM', user: USER, text: 'hi' });
    expect(await slackError(client(f).chat.startStream({ channel: 'D0DM', thread_ts: root.ts }))).toBe(
      'unknown_method',
    );
    expect(f.messages('D0DM').length).toBe(1);
  });

  it('answers 429 with Retry-After; WebClient rejects, or retries after waiting', async () => {
    const f = await fake();
    const root = f.postUserMessage({ channel: CHANNEL, user: USER, text: 'q' });

    // rejectRateLimitedCalls: a typed error carrying Retry-After, no waiting.
    f.rateLimitNext('chat.postMessage', 7);
    const rejecting = client(f, { rejectRateLimitedCalls: true });
    const err = await rejecting.chat.postMessage({ channel: CHANNEL, text: 'x' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WebAPIRateLimitedError);
    expect((err as WebAPIRateLimitedError).retryAfter).toBe(7);
    expect(f.callsOf('chat.postMessage')).toEqual([
      expect.objectContaining({ ok: false, error: 'ratelimited', status: 429 }),
    ]);

    // Default: WebClient sleeps Retry-After, then its retry policy decides. With retries: 0 the 429 surfaces as a
    // WebAPIRequestError (not a rate-limit error) wrapping "A rate limit was exceeded".
    f.rateLimitNext('chat.postMessage', 0);
    const noRetry = await client(f)
      .chat.postMessage({ channel: CHANNEL, text: 'x' })
      .catch((e: unknown) => e);
    expect(noRetry).toBeInstanceOf(WebAPIRequestError);
    expect((noRetry as WebAPICallError).code).toBe(ErrorCode.RequestError);
    expect((noRetry as WebAPIRequestError).original.message).toMatch(
      /rate limit was exceeded.*retry-after: 0/,
    );

    // With a retry, the call succeeds once Retry-After has passed; WebClient emits `rate_limited`.
    f.rateLimitNext('chat.postMessage', 1);
    const retrying = client(f, { retryConfig: { retries: 1, minTimeout: 0, maxTimeout: 0 } });
    const seen: number[] = [];
    retrying.on(WebClientEvent.RATE_LIMITED, (sec: number) => seen.push(sec));
    const started = Date.now();
    const ok = await retrying.chat.postMessage({
      channel: CHANNEL,
      text: 'after the wait',
      thread_ts: root.ts,
    });
    expect(ok.ok).toBe(true);
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
    expect(seen).toEqual([1]);
    expect(f.callsOf('chat.postMessage').map((c) => c.status)).toEqual([429, 429, 429, 200]);

    f.failNext('users.info', 'fatal_error', 2);
    expect(await slackError(client(f).users.info({ user: 'U0BOT' }))).toBe('fatal_error');
    expect(await slackError(client(f).users.info({ user: 'U0BOT' }))).toBe('fatal_error');
    expect((await client(f).users.info({ user: 'U0BOT' })).user?.is_bot).toBe(true);
  });

  it('enforces per-method windows and the workspace chat.update budget on its clock', async () => {
    let now = 1_800_000_000_000;
    const f = await fake({
      clock: () => now,
      rateLimits: { workspaceUpdatesPerMinute: 3, 'reactions.add': 2 },
    });
    const web = client(f, { rejectRateLimitedCalls: true });
    const a = await web.chat.postMessage({ channel: 'C1', text: 'a' });
    const b = await web.chat.postMessage({ channel: 'C2', text: 'b' });
    expect(a.ts).toBe('1800000000.000000');
    expect(b.ts).toBe('1800000000.000001'); // same clock reading: still strictly increasing

    // The budget is shared by every channel.
    await web.chat.update({ channel: 'C1', ts: String(a.ts), text: 'a1' });
    now += 10_000;
    await web.chat.update({ channel: 'C2', ts: String(b.ts), text: 'b1' });
    await web.chat.update({ channel: 'C1', ts: String(a.ts), text: 'a2' });
    const limited = await web.chat
      .update({ channel: 'C2', ts: String(b.ts), text: 'b2' })
      .catch((e: unknown) => e);
    expect(limited).toBeInstanceOf(WebAPIRateLimitedError);
    expect((limited as WebAPIRateLimitedError).retryAfter).toBe(50); // the first update leaves the window in 50 s
    expect(f.message('C2', String(b.ts))?.text).toBe('b1');
    now += 50_000;
    await web.chat.update({ channel: 'C2', ts: String(b.ts), text: 'b2' });
    expect(f.message('C2', String(b.ts))).toMatchObject({ text: 'b2', edits: 2 });

    await web.reactions.add({ channel: 'C1', timestamp: String(a.ts), name: 'eyes' });
    expect(
      await slackError(web.reactions.add({ channel: 'C1', timestamp: String(a.ts), name: 'eyes' })),
    ).toBe('already_reacted');
    const third = await web.reactions
      .add({ channel: 'C1', timestamp: String(a.ts), name: 'x' })
      .catch((e) => e);
    expect(third).toBeInstanceOf(WebAPIRateLimitedError);
    expect((third as WebAPIRateLimitedError).retryAfter).toBe(60);
    await web.reactions.remove({ channel: 'C1', timestamp: String(a.ts), name: 'eyes' });
    expect(
      await slackError(web.reactions.remove({ channel: 'C1', timestamp: String(a.ts), name: 'eyes' })),
    ).toBe('no_reaction');
    expect(f.reactions).toEqual([{ channel: 'C1', ts: a.ts, name: 'eyes', removed: true }]);
  });

  it('users.info, usergroups.users.list and conversations.replies with metadata and pages', async () => {
    const f = await fake();
    const web = client(f);
    f.addUser({ id: USER, name: 'ada', realName: 'Ada Lovelace', email: 'ada@example.com' });
    f.addUserGroup('S0APPROVERS', [USER, 'U0OTHER']);
    f.addUserGroup('S0OLD', [USER], { disabled: true });

    const info = await web.users.info({ user: USER });
    expect(info.user).toMatchObject({ id: USER, name: 'ada', real_name: 'Ada Lovelace', is_bot: false });
    expect(info.user?.profile?.email).toBe('ada@example.com');
    expect(await slackError(web.users.info({ user: 'U0GHOST' }))).toBe('user_not_found');

    expect((await web.usergroups.users.list({ usergroup: 'S0APPROVERS' })).users).toEqual([USER, 'U0OTHER']);
    expect(await slackError(web.usergroups.users.list({ usergroup: 'S0NONE' }))).toBe('no_such_subteam');
    expect(await slackError(web.usergroups.users.list({ usergroup: 'S0OLD' }))).toBe('no_such_subteam');
    expect((await web.usergroups.users.list({ usergroup: 'S0OLD', include_disabled: true })).users).toEqual([
      USER,
    ]);

    const root = f.postUserMessage({ channel: CHANNEL, user: USER, text: 'start' });
    await web.chat.postMessage({
      channel: CHANNEL,
      thread_ts: root.ts,
      text: 'bound',
      metadata: { event_type: 'kourier_session', event_payload: { session: 'abc' } },
    });
    f.postUserMessage({ channel: CHANNEL, user: USER, text: 'follow-up', threadTs: root.ts });

    // Metadata comes back only with include_all_metadata.
    const plain = await web.conversations.replies({ channel: CHANNEL, ts: root.ts });
    expect(plain.messages?.map((m) => m.text)).toEqual(['start', 'bound', 'follow-up']);
    expect(plain.messages?.some((m) => 'metadata' in m)).toBe(false);
    expect(plain.messages?.[0]).toMatchObject({ reply_count: 2, thread_ts: root.ts });

    const withMeta = await web.conversations.replies({
      channel: CHANNEL,
      ts: root.ts,
      include_all_metadata: true,
    });
    const own = withMeta.messages?.find(
      (m) => m.bot_id === f.botId && m.metadata?.event_type === 'kourier_session',
    );
    expect(own?.metadata?.event_payload).toEqual({ session: 'abc' });

    const page1 = await web.conversations.replies({ channel: CHANNEL, ts: root.ts, limit: 2 });
    expect(page1.messages?.length).toBe(2);
    expect(page1.has_more).toBe(true);
    const cursor = page1.response_metadata?.next_cursor;
    expect(cursor).toBeTruthy();
    const page2 = await web.conversations.replies({ channel: CHANNEL, ts: root.ts, limit: 2, cursor });
    expect(page2.messages?.map((m) => m.text)).toEqual(['follow-up']);
    expect(page2.has_more).toBe(false);
    expect(await slackError(web.conversations.replies({ channel: CHANNEL, ts: '1.000001' }))).toBe(
      'thread_not_found',
    );
  });
});

describe('signed inbound requests, verified by Bolt', () => {
  const secret = 'signing-secret-for-tests';

  it("signSlackRequest matches Bolt's verifier; stale and forged signatures fail it", () => {
    const body = JSON.stringify({ hello: 'world' });
    const now = Math.floor(Date.now() / 1000);
    const h = signSlackRequest(secret, body, now);
    const verify = (headers: typeof h, b = body) =>
      verifySlackRequest({
        signingSecret: secret,
        body: b,
        headers: {
          'x-slack-signature': headers['x-slack-signature'],
          'x-slack-request-timestamp': Number(headers['x-slack-request-timestamp']),
        },
      });
    expect(() => verify(h)).not.toThrow();
    expect(() => verify(h, `${body} `)).toThrow(/signature mismatch/);
    expect(() => verify(signSlackRequest('other', body, now))).toThrow(/signature mismatch/);
    expect(() => verify(signSlackRequest(secret, body, now - 301))).toThrow(/stale/);
  });

  it('a Bolt app on the fake: signed mention → reply in thread; forged → 401; button click acked', async () => {
    const f = await fake();
    const receiver = new HTTPReceiver({ signingSecret: secret, ...quiet });
    const app = new App({ token: f.botToken, receiver, clientOptions: { slackApiUrl: f.url }, ...quiet });
    const clicks: string[] = [];
    const heard: string[] = [];
    app.message(async ({ message }) => {
      if ('text' in message && typeof message.text === 'string') heard.push(message.text);
    });
    const retries: Array<number | undefined> = [];
    app.event('app_mention', async ({ event, say, context }) => {
      retries.push(context.retryNum);
      await say({ text: `echo: ${event.text}`, thread_ts: event.thread_ts ?? event.ts });
    });
    app.action('approve', async ({ ack, body }) => {
      await ack();
      clicks.push(body.user.id);
    });
    const server = await app.start({ port: 0, host: '127.0.0.1' });
    open.push({ close: async () => void (await app.stop()) });
    const appUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/slack/events`;

    const msg = f.postUserMessage({ channel: CHANNEL, user: USER, text: '<@U0BOT> ping' });
    const ev = mentionEvent({ channel: CHANNEL, user: USER, text: 'ping', ts: msg.ts });
    expect(ev.text).toBe('<@U0BOT> ping');
    const res = await sendSlackEvent(appUrl, secret, ev, { retryNum: 1, retryReason: 'http_timeout' });
    expect(res.status).toBe(200);
    await expect.poll(() => f.messages(CHANNEL, msg.ts).length).toBe(2);
    expect(f.messages(CHANNEL, msg.ts)[1]).toMatchObject({
      user: 'U0BOT',
      text: 'echo: <@U0BOT> ping',
      threadTs: msg.ts,
    });
    expect(retries).toEqual([1]);

    const forged = await sendSlackEvent(appUrl, secret, ev, { badSignature: true });
    expect(forged.status).toBe(401);
    const stale = await sendSlackEvent(appUrl, secret, ev, {
      timestampSeconds: Math.floor(Date.now() / 1000) - 600,
    });
    expect(stale.status).toBe(401);

    // The bot's own message event is ignored by Bolt's ignoreSelf (auth.test's bot_id / user_id).
    // A person's thread reply reaches app.message; the bot's own message is dropped by Bolt's ignoreSelf
    // (which compares against auth.test's user_id / bot_id).
    const followUp = f.postUserMessage({ channel: CHANNEL, user: USER, text: 'thanks', threadTs: msg.ts });
    const human = messageEvent({
      channel: CHANNEL,
      user: USER,
      text: 'thanks',
      ts: followUp.ts,
      threadTs: msg.ts,
    });
    expect((await sendSlackEvent(appUrl, secret, human)).status).toBe(200);
    await expect.poll(() => heard).toEqual(['thanks']);
    const replyTs = f.messages(CHANNEL, msg.ts)[1]?.ts ?? '';
    const own = messageEvent({ channel: CHANNEL, user: 'U0BOT', text: 'mine', ts: replyTs, botId: 'B0BOT' });
    expect((await sendSlackEvent(appUrl, secret, own, { eventId: 'Ev0OWN' })).status).toBe(200);
    await quietWindow(
      100,
      "the listener of a delivered event runs within this on loopback: the bot's own message would be heard",
    );
    expect(heard).toEqual(['thanks']);

    const click = blockActionsPayload({
      user: USER,
      channel: CHANNEL,
      messageTs: msg.ts,
      actionId: 'approve',
      value: 'a1',
    });
    const clicked = await sendSlackInteraction(appUrl, secret, click);
    expect(clicked.status).toBe(200);
    expect(clicks).toEqual([USER]);
    expect((await sendSlackInteraction(appUrl, secret, click, { badSignature: true })).status).toBe(401);
    expect(f.messages(CHANNEL).length).toBe(3);
  });

  it('a press’s response_url, through Bolt’s respond(): removes an ephemeral message, at most 5 uses, within 30 minutes', async () => {
    let now = 1_800_000_000_000;
    const f = await fake({ clock: () => now });
    const web = client(f);
    f.addChannelMember(CHANNEL, USER);
    const picker = [
      {
        type: 'actions',
        block_id: 'b',
        elements: [
          { type: 'button', action_id: 'pick', text: { type: 'plain_text', text: 'x' }, value: 'v' },
        ],
      },
    ];
    const eph = await web.chat.postEphemeral({
      channel: CHANNEL,
      user: USER,
      text: 'choose',
      blocks: picker,
    });
    // The answer waits for the listener, so the response_url call is done when the press returns.
    const receiver = new HTTPReceiver({ signingSecret: secret, processBeforeResponse: true, ...quiet });
    const app = new App({ token: f.botToken, receiver, clientOptions: { slackApiUrl: f.url }, ...quiet });
    const failures: string[] = [];
    app.action('pick', async ({ ack, respond }) => {
      await ack();
      await respond({ delete_original: true }).catch((e: Error) => failures.push(e.message));
    });
    const server = await app.start({ port: 0, host: '127.0.0.1' });
    open.push({ close: async () => void (await app.stop()) });
    const appUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/slack/events`;
    const url = f.responseUrl({
      channel: CHANNEL,
      user: USER,
      messageTs: String(eph.message_ts),
      ephemeral: true,
    });
    const press = blockActionsPayload({
      user: USER,
      channel: CHANNEL,
      messageTs: String(eph.message_ts),
      actionId: 'pick',
      value: 'v',
      ephemeral: true,
      responseUrl: url,
    });
    expect((await sendSlackInteraction(appUrl, secret, press)).status).toBe(200);
    expect(f.ephemerals[0]?.deleted).toBe(true);
    expect(f.responses).toEqual([
      { path: new URL(url).pathname, body: { delete_original: true }, status: 200, ok: true },
    ]);
    // A second press of the same (now gone) message: Slack has nothing left to delete.
    expect((await sendSlackInteraction(appUrl, secret, press)).status).toBe(200);
    expect(failures).toEqual(['Failed to respond to the response_url: 404 Not Found']);
    expect(f.responses[1]).toMatchObject({ status: 404, ok: false });

    const post = (to: string, body: unknown) =>
      fetch(to, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      }).then(async (r) => ({ status: r.status, body: (await r.json()) as Record<string, unknown> }));
    const other = f.responseUrl({
      channel: CHANNEL,
      user: USER,
      messageTs: String(eph.message_ts),
      ephemeral: true,
    });
    expect(await post(other, { replace_original: true })).toEqual({
      status: 400,
      body: { ok: false, error: 'no_text' },
    });
    expect((await post(other, { text: 'a new note' })).status).toBe(200);
    expect(f.ephemerals.at(-1)).toMatchObject({ channel: CHANNEL, user: USER, text: 'a new note' });
    expect((await post(other, 'not an object')).body.error).toBe('invalid_payload');
    expect((await post(other, { text: 'x', response_type: 'in_channel' })).status).toBe(501);
    expect((await post(other, { text: 'fifth' })).status).toBe(200);
    expect(await post(other, { text: 'sixth' })).toEqual({
      status: 404,
      body: { ok: false, error: 'used_url' },
    });
    const late = f.responseUrl({
      channel: CHANNEL,
      user: USER,
      messageTs: String(eph.message_ts),
      ephemeral: true,
    });
    now += 30 * 60_000 + 1;
    expect((await post(late, { text: 'late' })).body.error).toBe('expired_url');
    expect((await post(`${new URL(late).origin}/actions/T0001/99/nope`, { text: 'x' })).body.error).toBe(
      'no_service',
    );
  });
});
