import { afterEach, describe, expect, it } from 'vitest';
import { TriggerPostRefusedError } from '../../../src/core/triggers.js';
import { answer } from '../../peers/contract-agent/contract-agent.js';
import { triggerConfig } from '../../triggers/harness.js';
import { BINDING, startTeamsHarness, type TeamsHarness } from './harness.js';

const SEND = 'SendStreamingMessage';

/**
 * Alerts' and schedules' threads in a Teams channel (the TriggerChat port the trigger machinery
 * calls; the machinery itself is proven with Slack and the web chat): the root is a new post in
 * the channel, its thread a session the agent answers in, and a channel the app was never added
 * to is refused for good.
 */
describe('Microsoft Teams trigger threads', () => {
  const open: TeamsHarness[] = [];
  afterEach(async () => {
    await Promise.all(open.splice(0).map((h) => h.close()));
  });

  it('posts the root in the channel the app was added to; the thread is a session the agent answers in; later posts reply in it', async () => {
    const h = await startTeamsHarness();
    open.push(h);
    // The app added to the team: Teams says so in the channel, and the broker keeps its address.
    const added = {
      ...h.connector.message({ conversation: h.channel, from: h.ada, text: '' }),
      type: 'conversationUpdate',
      membersAdded: [{ id: `28:${h.appId}` }],
      conversation: { id: h.channel.id, conversationType: 'channel', tenantId: h.tenantId, isGroup: true },
    };
    expect((await h.connector.deliver(h.endpoint, added)).status).toBe(200);

    const trigger = triggerConfig({
      target: { surface: 'teams', channel: h.channel.id, workspaceId: h.tenantId },
    });
    const place = h.teams.triggers.place(trigger);
    expect(place).toEqual({ surface: 'teams', workspaceId: h.tenantId, channelId: h.channel.id });
    const ref = { id: 'work-1', since: Date.now(), recover: false };
    const key = await h.teams.triggers.startThread(
      place as NonNullable<typeof place>,
      { title: 'HighErrorRate firing', lines: [{ label: 'service', text: 'api' }] },
      ref,
    );
    const root = h.connector.messages(h.channel.id).find((m) => m.id === key.threadId);
    expect(root?.conversationId).toBe(h.channel.id);
    expect(root?.text).toContain('**HighErrorRate firing**');

    h.agent.enqueueFor(SEND, answer({ chunks: ['Looking into it.'] }));
    await h.engine.receive({
      kind: 'trigger',
      key,
      binding: BINDING,
      chatMessageId: key.threadId,
      instruction: 'Investigate this alert.',
      fields: { service: 'api' },
    });
    await h.settled(1);
    await h.waitFor('the answer in the thread', () =>
      h.connector
        .messages(h.channel.id)
        .some(
          (m) =>
            m.text === 'Looking into it.' && m.conversationId === `${h.channel.id};messageid=${key.threadId}`,
        ),
    );
    await h.teams.triggers.postInThread(
      key,
      { title: 'HighErrorRate resolved', lines: [] },
      { ...ref, id: 'work-2' },
    );
    const resolved = h.connector.messages(h.channel.id).find((m) => m.text.includes('resolved'));
    expect(resolved?.conversationId).toBe(`${h.channel.id};messageid=${key.threadId}`);
  });

  it('refuses for good a channel the app has no address for, and places no trigger of another surface', async () => {
    const h = await startTeamsHarness();
    open.push(h);
    const trigger = triggerConfig({
      target: { surface: 'teams', channel: '19:never0seen@thread.tacv2', workspaceId: h.tenantId },
    });
    const place = h.teams.triggers.place(trigger);
    await expect(
      h.teams.triggers.startThread(
        place as NonNullable<typeof place>,
        { title: 'x', lines: [] },
        {
          id: 'w',
          since: Date.now(),
          recover: false,
        },
      ),
    ).rejects.toBeInstanceOf(TriggerPostRefusedError);
    expect(
      h.teams.triggers.place(triggerConfig({ target: { surface: 'slack', channel: 'C0ALERTS' } })),
    ).toBeUndefined();
    expect(h.teams.triggers.place(triggerConfig())).toBeUndefined();
  });
});
