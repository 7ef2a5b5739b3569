/**
 * The sender's side of the benchmarks that drive the broker through Slack (ack,
 * freshness): a thread root posted in the fake Slack and its app_mention as Slack would deliver
 * it, a signed Events API request (Slack's v0 signature, HMAC-SHA256 over
 * `v0:<timestamp>:<body>` with the signing secret) ready to POST to Bolt's /slack/events.
 */
import { eventEnvelope, mentionEvent, signSlackRequest } from '../testkit/slack/events.js';
import type { FakeSlack } from '../testkit/slack/index.js';

export interface SignedEvent {
  channel: string;
  /** The thread root's ts. */
  root: string;
  body: string;
  headers: Record<string, string>;
}

/** Posts `text` as `user` in `channel` (a thread root) and signs the app_mention of it. */
export function signedMention(
  fake: FakeSlack,
  signingSecret: string,
  m: { channel: string; user: string; text: string },
): SignedEvent {
  const root = fake.postUserMessage({ channel: m.channel, user: m.user, text: m.text });
  const event = mentionEvent({
    channel: m.channel,
    user: m.user,
    text: m.text,
    ts: root.ts,
    botUserId: fake.botUserId,
  });
  const body = JSON.stringify(eventEnvelope(event, { teamId: fake.teamId }));
  return {
    channel: m.channel,
    root: root.ts,
    body,
    headers: { 'content-type': 'application/json', ...signSlackRequest(signingSecret, body) },
  };
}

/** POSTs a signed event; resolves with the HTTP status once the whole answer is read. */
export async function postEvent(url: string, event: SignedEvent): Promise<number> {
  const res = await fetch(url, { method: 'POST', headers: event.headers, body: event.body });
  await res.arrayBuffer();
  return res.status;
}
