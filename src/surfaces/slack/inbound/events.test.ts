import { describe, expect, it } from 'vitest';
import type { ChannelDirectory } from '../../../core/registry.js';
import { namedHandle, PICK_HINT } from './agent-picker.js';
import { CHANNEL_HINT, DM_HINT, route, type SlackEvent } from './events.js';

const BOT = 'U0BOT';
// Routes only what Slack asks of it: its own surface's channels and DMs.
const bindings: ChannelDirectory = {
  forChannel: (surface, channel) => (surface === 'slack' && channel === 'C1' ? { ref: 'team/a' } : undefined),
  forDirectMessages: (surface) => (surface === 'slack' ? { ref: 'team/dm' } : undefined),
};
const noDms: ChannelDirectory = { ...bindings, forDirectMessages: () => undefined };

function event(e: Partial<SlackEvent>): SlackEvent {
  return {
    type: 'message',
    user: 'U1',
    text: 'hi',
    ts: '100.000200',
    channel: 'C1',
    channel_type: 'channel',
    ...e,
  };
}

describe('route', () => {
  it("makes a mention in a Binding's channel a turn rooted at the mention (or its thread)", () => {
    const top = route(event({ type: 'app_mention', text: `<@${BOT}> restart api` }), 'T1', BOT, bindings);
    expect(top).toEqual({
      kind: 'turn',
      binding: 'team/a',
      key: { surface: 'slack', workspaceId: 'T1', channelId: 'C1', threadId: '100.000200' },
      user: 'U1',
      text: 'restart api',
      ts: '100.000200',
      addressed: true,
      needsSession: false,
    });
    const inThread = route(event({ type: 'app_mention', thread_ts: '99.000001' }), 'T1', BOT, bindings);
    expect(inThread.kind === 'turn' && inThread.key.threadId).toBe('99.000001');
  });

  it('gives a mention in a channel no Binding owns a hint', () => {
    expect(route(event({ type: 'app_mention', channel: 'C9' }), 'T1', BOT, bindings)).toEqual({
      kind: 'hint',
      channel: 'C9',
      user: 'U1',
      threadTs: undefined,
      text: CHANNEL_HINT('C9'),
    });
  });

  it('[S-7] carries a thread reply without a mention, if the thread has a session', () => {
    const reply = route(event({ thread_ts: '99.000001' }), 'T1', BOT, bindings);
    expect(reply).toMatchObject({ kind: 'turn', addressed: false, needsSession: true });
  });

  it('leaves the message copy of a mention to app_mention, and ignores top-level chatter', () => {
    expect(route(event({ text: `<@${BOT}> hi`, thread_ts: '99.000001' }), 'T1', BOT, bindings).kind).toBe(
      'ignore',
    );
    expect(route(event({}), 'T1', BOT, bindings).kind).toBe('ignore');
    expect(route(event({ thread_ts: '99.000001', channel: 'C9' }), 'T1', BOT, bindings).kind).toBe('ignore');
  });

  it('takes direct messages when a Binding allows them, and hints when none does', () => {
    const dm = event({ channel: 'D1', channel_type: 'im', text: 'hello' });
    expect(route(dm, 'T1', BOT, bindings)).toMatchObject({
      kind: 'turn',
      binding: 'team/dm',
      addressed: true,
    });
    expect(route(dm, 'T1', BOT, noDms)).toMatchObject({ kind: 'hint', text: DM_HINT });
  });

  it('reads "sign out" to the app (a mention, a DM) as the command, not a turn; anything more is a turn', () => {
    expect(
      route(
        event({ type: 'app_mention', text: `<@${BOT}> Sign out`, thread_ts: '99.000001' }),
        'T1',
        BOT,
        bindings,
      ),
    ).toEqual({
      kind: 'sign-out',
      channel: 'C1',
      user: 'U1',
      threadTs: '99.000001',
    });
    expect(
      route(event({ channel: 'D1', channel_type: 'im', text: 'signout!' }), 'T1', BOT, bindings).kind,
    ).toBe('sign-out');
    // Even where no agent is connected: the person's links are theirs to end.
    expect(route(event({ channel: 'D1', channel_type: 'im', text: 'sign out' }), 'T1', BOT, noDms).kind).toBe(
      'sign-out',
    );
    expect(
      route(event({ type: 'app_mention', text: `<@${BOT}> sign out of the VPN` }), 'T1', BOT, bindings).kind,
    ).toBe('turn');
    // Not addressed to the app: a thread's chatter, never a command.
    expect(route(event({ text: 'sign out', thread_ts: '99.000001' }), 'T1', BOT, bindings).kind).toBe('turn');
  });

  it('takes no turn from bots, itself, edits, deletions or other subtypes', () => {
    const ignored = [
      event({ type: 'app_mention', bot_id: 'B1' }),
      event({ type: 'app_mention', user: BOT }),
      event({ type: 'app_mention', user: undefined }),
      event({ thread_ts: '99.000001', subtype: 'message_changed' }),
      event({ thread_ts: '99.000001', subtype: 'message_deleted' }),
      event({ thread_ts: '99.000001', subtype: 'channel_join' }),
      event({ thread_ts: '99.000001', subtype: 'bot_message', bot_id: 'B2' }),
    ];
    for (const e of ignored) expect(route(e, 'T1', BOT, bindings).kind).toBe('ignore');
    expect(
      route(event({ thread_ts: '99.000001', subtype: 'thread_broadcast' }), 'T1', BOT, bindings).kind,
    ).toBe('turn');
  });
});

describe('route, a channel several agents share', () => {
  const claims = [
    { ref: 'fin/billing', handle: 'billing' },
    { ref: 'ops/k8s', handle: 'k8s' },
  ];
  const shared: ChannelDirectory = {
    forChannel: () => undefined,
    forDirectMessages: () => undefined,
    sharedChannel: (surface, channel) => (surface === 'slack' && channel === 'C2' ? claims : undefined),
  };

  it('gives a new thread to the agent its first message names, without the handle', () => {
    for (const text of [
      `<@${BOT}> billing: why did the invoice fail?`,
      `<@${BOT}> Billing, why did the invoice fail?`,
    ]) {
      const r = route(event({ type: 'app_mention', channel: 'C2', text }), 'T1', BOT, shared);
      expect(r).toMatchObject({
        kind: 'turn',
        binding: 'fin/billing',
        text: 'why did the invoice fail?',
        needsSession: false,
      });
    }
    const k8s = route(
      event({ type: 'app_mention', channel: 'C2', text: `<@${BOT}> k8s pods crash` }),
      'T1',
      BOT,
      shared,
    );
    expect(k8s).toMatchObject({ kind: 'turn', binding: 'ops/k8s', text: 'pods crash' });
  });

  it('asks a new thread that names no agent to name one, listing the handles', () => {
    const r = route(
      event({ type: 'app_mention', channel: 'C2', text: `<@${BOT}> why did it fail?` }),
      'T1',
      BOT,
      shared,
    );
    expect(r).toMatchObject({
      kind: 'hint',
      channel: 'C2',
      user: 'U1',
      threadTs: undefined,
      text: PICK_HINT(['billing', 'k8s']),
    });
    expect(PICK_HINT(['billing', 'k8s'])).toContain('`billing`, `k8s`');
    // With the agents the picker offers, for the author to choose.
    expect(r.kind === 'hint' ? r.picker?.map((c) => c.handle) : undefined).toEqual(['billing', 'k8s']);
  });

  it('sends replies in a thread to the thread’s agent, read from its session', () => {
    const reply = route(
      event({ channel: 'C2', text: 'more detail', thread_ts: '99.000001' }),
      'T1',
      BOT,
      shared,
    );
    expect(reply).toMatchObject({ kind: 'turn', needsSession: true, addressed: false, shared: { claims } });
    const mention = route(
      event({ type: 'app_mention', channel: 'C2', text: `<@${BOT}> and now?`, thread_ts: '99.000001' }),
      'T1',
      BOT,
      shared,
    );
    expect(mention).toMatchObject({ kind: 'turn', needsSession: true, addressed: true });
  });

  it('reads a handle only at the start, as a whole word', () => {
    expect(namedHandle('billing', claims)).toEqual({
      ref: 'fin/billing',
      handle: 'billing',
      rest: 'billing',
    });
    expect(namedHandle('billingx: hi', claims)).toBeUndefined();
    expect(namedHandle('ask billing: hi', claims)).toBeUndefined();
  });
});
