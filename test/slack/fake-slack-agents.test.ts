import { type Logger, LogLevel } from '@slack/bolt';
import { WebAPIPlatformError, WebAPIRateLimitedError, WebClient } from '@slack/web-api';
import { afterEach, describe, expect, it } from 'vitest';
import { type FakeSlack, type FakeSlackOptions, startFakeSlack } from '../../testkit/slack/index.js';

/**
 * The fake's agent platform, through the real WebClient: agents.sessions.setStatus / rename,
 * assistant.threads.setSuggestedPrompts, conversations.members, and a person's stop press —
 * with the arguments, errors and tiers docs/reference/slack.md records.
 */

const CHANNEL = 'C0CHAN';
const USER = 'U0HUMAN';
const silent: Logger = {
  debug: () => {},
  info: () => {},
  warn: () => {},
  error: () => {},
  setLevel: () => {},
  getLevel: () => LogLevel.ERROR,
  setName: () => {},
};

const open: FakeSlack[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((f) => f.close()));
});

async function fake(options: FakeSlackOptions = {}): Promise<{ f: FakeSlack; web: WebClient }> {
  const f = await startFakeSlack(options);
  open.push(f);
  const web = new WebClient(f.botToken, {
    slackApiUrl: f.url,
    retryConfig: { retries: 0 },
    rejectRateLimitedCalls: true,
    logger: silent,
  });
  return { f, web };
}

/** The `ts` of a message a call answered with. */
function tsOf(answer: unknown): string {
  return String((answer as { ts?: unknown }).ts);
}

async function slackError(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (e) {
    if (e instanceof WebAPIPlatformError) return e.data.error;
    throw e;
  }
  throw new Error('expected the call to be refused');
}

describe('fake Slack: the agent platform', () => {
  it('setStatus creates the thread session with its title, takes only the four statuses, needs the thread', async () => {
    const { f, web } = await fake();
    const root = f.postUserMessage({ channel: CHANNEL, user: USER, text: 'hi' });
    const set = (args: Record<string, unknown>) => web.apiCall('agents.sessions.setStatus', args);
    const first = await set({
      channel_id: CHANNEL,
      thread_ts: root.ts,
      status: 'processing',
      title: 'hi there',
    });
    expect(first).toMatchObject({ ok: true, status: 'processing', title: 'hi there' });
    await set({ channel_id: CHANNEL, thread_ts: root.ts, status: 'suspended', title: 'ignored' });
    expect(f.session(CHANNEL, root.ts)).toMatchObject({ status: 'suspended', title: 'hi there' });
    expect(await slackError(set({ channel_id: CHANNEL, thread_ts: root.ts, status: 'is thinking…' }))).toBe(
      'invalid_arguments',
    );
    expect(await slackError(set({ channel_id: CHANNEL, thread_ts: root.ts, status: '' }))).toBe(
      'invalid_arguments',
    );
    expect(await slackError(set({ channel_id: CHANNEL, status: 'active' }))).toBe('thread_ts_required');
    expect(await slackError(set({ thread_ts: root.ts, status: 'active' }))).toBe('channel_not_found');
    expect(
      await slackError(
        set({ channel_id: CHANNEL, thread_ts: root.ts, status: 'active', title: 'x'.repeat(201) }),
      ),
    ).toBe('invalid_arguments');
    expect(f.session(CHANNEL, root.ts)?.history.map((h) => h.status)).toEqual(['processing', 'suspended']);
  });

  it('warns when the app does not subscribe to agent_session_stopped; refuses a non-agent app', async () => {
    const { f, web } = await fake({ subscribedToStop: false });
    const root = f.postUserMessage({ channel: CHANNEL, user: USER, text: 'hi' });
    const answer = await web.apiCall('agents.sessions.setStatus', {
      channel_id: CHANNEL,
      thread_ts: root.ts,
      status: 'processing',
    });
    expect(answer.response_metadata?.warnings).toEqual(['missing_agent_session_stopped_event_subscription']);
    const other = await fake({ agentApp: false });
    const otherRoot = other.f.postUserMessage({ channel: CHANNEL, user: USER, text: 'hi' });
    expect(
      await slackError(
        other.web.apiCall('agents.sessions.setStatus', {
          channel_id: CHANNEL,
          thread_ts: otherRoot.ts,
          status: 'processing',
        }),
      ),
    ).toBe('not_agent_app');
    expect(
      await slackError(
        other.web.apiCall('assistant.threads.setSuggestedPrompts', {
          channel_id: 'D0DM',
          prompts: [{ title: 'a', message: 'b' }],
        }),
      ),
    ).toBe('not_agent_app');
  });

  it('rename needs a session and a 1–200 character title', async () => {
    const { f, web } = await fake();
    const root = f.postUserMessage({ channel: CHANNEL, user: USER, text: 'hi' });
    const rename = (title: string) =>
      web.apiCall('agents.sessions.rename', { channel_id: CHANNEL, thread_ts: root.ts, title });
    expect(await slackError(rename('new'))).toBe('session_not_found');
    await web.apiCall('agents.sessions.setStatus', {
      channel_id: CHANNEL,
      thread_ts: root.ts,
      status: 'active',
    });
    expect(await rename('new')).toMatchObject({ ok: true, title: 'new' });
    expect(await slackError(rename(''))).toBe('invalid_arguments');
    expect(await slackError(rename('x'.repeat(201)))).toBe('invalid_arguments');
    expect(f.session(CHANNEL, root.ts)?.title).toBe('new');
  });

  it('setSuggestedPrompts takes one to four prompts for a DM, never a thread_ts', async () => {
    const { f, web } = await fake();
    const prompts = (n: number) =>
      Array.from({ length: n }, (_, i) => ({ title: `t${i}`, message: `m${i}` }));
    const set = (args: Record<string, unknown>) => web.apiCall('assistant.threads.setSuggestedPrompts', args);
    await set({ channel_id: 'D0DM', title: 'Try', prompts: prompts(4) });
    expect(f.suggestedPrompts).toEqual([{ channel: 'D0DM', title: 'Try', prompts: prompts(4) }]);
    expect(await slackError(set({ channel_id: 'D0DM', prompts: prompts(5) }))).toBe('invalid_arguments');
    expect(await slackError(set({ channel_id: 'D0DM', prompts: [] }))).toBe('invalid_arguments');
    expect(await slackError(set({ channel_id: 'D0DM', prompts: [{ title: 'a' }] }))).toBe(
      'invalid_arguments',
    );
    expect(await slackError(set({ channel_id: 'D0DM', thread_ts: '1.000001', prompts: prompts(1) }))).toBe(
      'invalid_thread_ts',
    );
  });

  it('a stop press stops the app’s streams in the thread: appends answer stopped_by_user, the event names them', async () => {
    const { f, web } = await fake();
    const root = f.postUserMessage({ channel: 'D0DM', user: USER, text: 'hi' });
    const started = await web.apiCall('chat.startStream', {
      channel: 'D0DM',
      thread_ts: root.ts,
      markdown_text: 'first',
    });
    expect(() => f.pressStop('D0DM', root.ts, USER)).toThrow(/no agent session/);
    await web.apiCall('agents.sessions.setStatus', {
      channel_id: 'D0DM',
      thread_ts: root.ts,
      status: 'processing',
    });
    const event = f.pressStop('D0DM', root.ts, USER);
    expect(event).toMatchObject({
      type: 'agent_session_stopped',
      channel: 'D0DM',
      user: USER,
      thread_ts: root.ts,
      streaming_message_ts: [tsOf(started)],
    });
    expect(
      await slackError(
        web.apiCall('chat.appendStream', { channel: 'D0DM', ts: tsOf(started), markdown_text: 'more' }),
      ),
    ).toBe('stopped_by_user');
    expect(await slackError(web.apiCall('chat.stopStream', { channel: 'D0DM', ts: tsOf(started) }))).toBe(
      'message_not_in_streaming_state',
    );
    // Slack leaves the status to the app.
    expect(f.session('D0DM', root.ts)?.status).toBe('processing');
    expect(f.message('D0DM', tsOf(started))?.text).toBe('first');
  });

  it('chat.stopStream sets the session status it is given, from the same closed list', async () => {
    const { f, web } = await fake();
    const root = f.postUserMessage({ channel: 'D0DM', user: USER, text: 'hi' });
    const a = await web.apiCall('chat.startStream', {
      channel: 'D0DM',
      thread_ts: root.ts,
      markdown_text: 'a',
    });
    expect(
      await slackError(
        web.apiCall('chat.stopStream', { channel: 'D0DM', ts: tsOf(a), session_status: 'done' }),
      ),
    ).toBe('invalid_arguments');
    await web.apiCall('chat.stopStream', { channel: 'D0DM', ts: tsOf(a), session_status: 'active' });
    expect(f.session('D0DM', root.ts)?.status).toBe('active');
  });

  it('conversations.members pages the channel’s members; the session methods keep Tier 3 on their own windows', async () => {
    let now = 1_800_000_000_000;
    const { f, web } = await fake({ clock: () => now, rateLimits: { 'agents.sessions.setStatus': 2 } });
    f.addChannelMember(CHANNEL, 'U0A');
    f.postUserMessage({ channel: CHANNEL, user: 'U0B', text: 'hi' });
    const page = await web.apiCall('conversations.members', { channel: CHANNEL, limit: 2 });
    expect((page as { members?: string[] }).members).toEqual(['U0BOT', 'U0A']);
    const next = await web.apiCall('conversations.members', {
      channel: CHANNEL,
      limit: 2,
      cursor: (page.response_metadata as { next_cursor: string }).next_cursor,
    });
    expect((next as { members?: string[] }).members).toEqual(['U0B']);
    expect(await slackError(web.apiCall('conversations.members', { channel: CHANNEL, limit: 0 }))).toBe(
      'invalid_limit',
    );
    const root = f.postUserMessage({ channel: CHANNEL, user: USER, text: 'hi' });
    const set = () =>
      web.apiCall('agents.sessions.setStatus', { channel_id: CHANNEL, thread_ts: root.ts, status: 'active' });
    await set();
    await set();
    const limited = await set().catch((e: unknown) => e);
    expect(limited).toBeInstanceOf(WebAPIRateLimitedError);
    // Not chat.update's budget: an edit still goes out.
    const posted = await web.chat.postMessage({ channel: CHANNEL, text: 'x' });
    await web.chat.update({ channel: CHANNEL, ts: String(posted.ts), text: 'y' });
    now += 60_000;
    await set();
  });
});
