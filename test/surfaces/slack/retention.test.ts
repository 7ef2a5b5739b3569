import { afterEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../../src/core/clock.js';
import { RetentionSweeper } from '../../../src/core/retention-sweeper.js';
import { sessionIdOf } from '../../../src/core/store.js';
import { SqliteStore } from '../../../src/store/sqlite/sqlite-store.js';
import { ADA, CHANNEL, type SlackHarness, startSlackHarness } from './e2e-harness.js';

/**
 * A Slack thread the retention sweep forgot: a reply there, even one that does not mention the
 * app (which in a known thread is carried as context, and in an unknown one starts nothing),
 * starts a new conversation with the agent, and the thread is told why first. A person Slack
 * deactivates is erased.
 */

const DAY = 24 * 60 * 60 * 1000;
const FORGOTTEN = /^This thread was idle longer than conversations are kept here, so it was forgotten/;
const open: SlackHarness[] = [];

afterEach(async () => {
  for (const h of open.splice(0)) await h.close();
});

describe('retention in Slack', () => {
  it('a reply without a mention in a forgotten thread starts a new conversation, told so', async () => {
    const store = new SqliteStore(':memory:');
    const h = await startSlackHarness({ store });
    open.push(h);
    const asked = await h.mention('what broke last night?');
    await h.settled(1);
    const sweep = new RetentionSweeper(
      store.retention(),
      { days: 30 },
      { ...systemClock, now: () => Date.now() + 31 * DAY },
      { swept: () => undefined, measured: () => undefined, failed: (e) => Promise.reject(e) },
    );
    expect((await sweep.sweep()).threads).toBe(1);

    const sends = () => h.agent.rpc('SendStreamingMessage').length;
    expect(sends()).toBe(1);
    await h.reply(asked.ts, 'and is it fixed now?');
    await h.waitFor('the agent asked again', () => sends() === 2);
    await h.settled(1);
    const notices = h.botMessages(asked.ts).filter((m) => FORGOTTEN.test(m.text ?? ''));
    expect(notices).toHaveLength(1);
    // A new conversation: the second send names no context of the first.
    const second = h.agent.rpc('SendStreamingMessage')[1]?.body as {
      params?: { message?: { contextId?: string } };
    };
    expect(second.params?.message?.contextId).toBeUndefined();
  });

  it('a person deactivated in Slack (user_change, deleted) is erased: the threads they started go', async () => {
    const store = new SqliteStore(':memory:');
    const h = await startSlackHarness({ store });
    open.push(h);
    const asked = await h.mention('a question of mine');
    await h.settled(1);
    const id = sessionIdOf({
      surface: 'slack',
      workspaceId: 'T0001',
      channelId: CHANNEL,
      threadId: asked.ts,
    });
    expect(await store.getSession(id)).toBeDefined();
    // A profile change that is not a deactivation changes nothing.
    await h.deliver({ type: 'user_change', user: { id: ADA, deleted: false, real_name: 'Ada L.' } });
    expect(await store.getSession(id)).toBeDefined();
    const delivered = await h.deliver({ type: 'user_change', user: { id: ADA, deleted: true } });
    expect(delivered.status).toBe(200);
    await h.waitFor('her thread erased', () =>
      h.logs.some((l) => l.msg === 'a person deactivated in Slack was erased'),
    );
    expect(await store.getSession(id)).toBeUndefined();
    expect(h.logs.find((l) => l.msg === 'a person deactivated in Slack was erased')).toMatchObject({
      user: ADA,
      threads: 1,
    });
  });
});
