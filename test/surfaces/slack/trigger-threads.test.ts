import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../../src/core/clock.js';
import type { TriggerStore } from '../../../src/core/trigger-store.js';
import { TriggerPostRefusedError } from '../../../src/core/triggers.js';
import { SqliteStore } from '../../../src/store/sqlite/sqlite-store.js';
import {
  renderTriggerMessage,
  SlackTriggerThreads,
  TRIGGER_EVENT_TYPE,
} from '../../../src/surfaces/slack/answer/trigger-threads.js';
import { BudgetBook } from '../../../src/surfaces/slack/web-api/budget.js';
import { createWebApiCaller, SlackApi } from '../../../src/surfaces/slack/web-api/client.js';
import { type FakeSlack, startFakeSlack } from '../../../testkit/slack/index.js';
import { BINDING, notification, startTriggerHarness, triggerConfig, until } from '../../triggers/harness.js';

/** Threads triggers start in Slack, against the fake Web API through the WebClient. */

const silent = pino({ level: 'silent' });
const MESSAGE = {
  title: 'Firing: HighCPU (critical)',
  lines: [
    { label: 'Labels', text: 'namespace=payments' },
    { label: 'Source', text: 'http://prometheus.example/graph?g0.expr=`up`', verbatim: true },
  ],
};

describe('trigger messages in Slack', () => {
  it('shows alert text as text: no mention, no disguised link, the source as a code span', () => {
    const rendered = renderTriggerMessage({
      title: 'Firing: <!channel> <http://evil.example|Grafana> & co',
      lines: [
        { label: 'Summary', text: 'see <@U0ADMIN> at <https://evil.example|the runbook>' },
        { label: 'Source', text: 'http://prometheus.example/?q=`x`<y>', verbatim: true },
      ],
    });
    const body = (rendered.blocks[0] as { text: { text: string } }).text.text;
    expect(rendered.text).toBe('Firing: &lt;!channel&gt; &lt;http://evil.example|Grafana&gt; &amp; co');
    expect(body).not.toMatch(/<[!@h]/);
    expect(body).toContain('*Summary:* see &lt;@U0ADMIN&gt; at &lt;https://evil.example|the runbook&gt;');
    expect(body).toContain("*Source:* `http://prometheus.example/?q='x'&lt;y&gt;`");
  });
});

describe('SlackTriggerThreads', () => {
  const open: Array<{ fake: FakeSlack; budgets: BudgetBook }> = [];
  afterEach(async () => {
    for (const { fake, budgets } of open.splice(0)) {
      budgets.close();
      await fake.close();
    }
  });

  async function setup() {
    const fake = await startFakeSlack({ channels: ['C0ALERTS', 'C0OTHER'] });
    const budgets = new BudgetBook(systemClock);
    open.push({ fake, budgets });
    const api = new SlackApi(
      createWebApiCaller({ token: fake.botToken, apiUrl: fake.url, logger: silent }),
      budgets,
    );
    const threads = new SlackTriggerThreads({ api, clock: systemClock, logger: silent, teamId: fake.teamId });
    return { fake, threads };
  }

  const place = { surface: 'slack', workspaceId: 'T0001', channelId: 'C0ALERTS' };

  it('places a trigger in its Slack channel, in the Binding’s workspace or the bot’s', async () => {
    const { threads } = await setup();
    const base = {
      binding: 'a/b',
      name: 't',
      kind: 'alertmanager' as const,
      instruction: 'x',
      onResolved: 'notice' as const,
      threadsPerMinute: 5,
    };
    expect(threads.place({ ...base, target: { surface: 'slack', channel: 'C0ALERTS' } })).toStrictEqual(
      place,
    );
    expect(
      threads.place({ ...base, target: { surface: 'slack', channel: 'C0ALERTS', workspaceId: 'T0TWO' } })
        ?.workspaceId,
    ).toBe('T0TWO');
    expect(threads.place({ ...base, target: {} })).toBeUndefined();
  });

  it('posts a root stamped with its work, and after a crash finds it instead of posting again', async () => {
    const { fake, threads } = await setup();
    fake.postUserMessage({ channel: 'C0ALERTS', user: 'U0ADA', text: 'unrelated' });
    const since = Date.now();
    const key = await threads.startThread(place, MESSAGE, { id: 'g1.1', since, recover: false });
    expect(key).toMatchObject({ surface: 'slack', workspaceId: 'T0001', channelId: 'C0ALERTS' });
    const root = fake.message('C0ALERTS', key.threadId);
    expect(root?.threadTs).toBeUndefined();
    expect(root?.metadata).toStrictEqual({ event_type: TRIGGER_EVENT_TYPE, event_payload: { post: 'g1.1' } });
    // Another root in between, then the same work again as after a crash: the first root is found.
    await threads.startThread(place, MESSAGE, { id: 'g2.1', since, recover: false });
    const again = await threads.startThread(place, MESSAGE, { id: 'g1.1', since, recover: true });
    expect(again).toStrictEqual(key);
    expect(fake.callsOf('chat.postMessage')).toHaveLength(2);
    expect(fake.callsOf('conversations.history')).toHaveLength(1);
    // Work that never posted looks, finds nothing, and posts.
    const fresh = await threads.startThread(place, MESSAGE, { id: 'g3.1', since, recover: true });
    expect(fresh.threadId).not.toBe(key.threadId);
    expect(fake.callsOf('chat.postMessage')).toHaveLength(3);
  });

  it('posts in the thread once, looking in its replies when an attempt may have posted', async () => {
    const { fake, threads } = await setup();
    const key = await threads.startThread(place, MESSAGE, { id: 'g1.1', since: 0, recover: false });
    const entry = { title: 'Resolved: HighCPU', lines: [] };
    await threads.postInThread(key, entry, { id: 'g1.2', since: 0, recover: false });
    await threads.postInThread(key, entry, { id: 'g1.2', since: 0, recover: true });
    const replies = fake.messages('C0ALERTS', key.threadId).filter((m) => m.ts !== key.threadId);
    expect(replies.map((m) => m.text)).toStrictEqual(['Resolved: HighCPU']);
    expect(fake.callsOf('conversations.replies')).toHaveLength(1);
  });

  it('does not post a root twice nor lose the alert when the process dies between posting it and recording it', async () => {
    const { fake, threads } = await setup();
    const sqlite = new SqliteStore(':memory:');
    await sqlite.migrate();
    const real = sqlite.triggers();
    // The store fails the write that records the thread once, as a crash right after the post would.
    let crashes = 1;
    const store = new Proxy(real, {
      get(target, name) {
        if (name === 'setTriggerThread')
          return async (...args: Parameters<TriggerStore['setTriggerThread']>) => {
            if (crashes-- > 0) throw new Error('the process died here');
            return target.setTriggerThread(...args);
          };
        const value: unknown = Reflect.get(target, name);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const harness = await startTriggerHarness(store, {
      configs: [triggerConfig({ target: { surface: 'slack', channel: 'C0ALERTS' } })],
      extra: { chat: threads },
    });
    try {
      const res = await harness.post(
        `/triggers/${BINDING}/alerts`,
        notification('g', [{ fingerprint: 'a' }]),
      );
      expect(res.status).toBe(200);
      await until('the turn', () => harness.engine.turns.length === 1);
      await harness.triggers.worker.idle();
      const roots = fake.messages('C0ALERTS').filter((m) => m.threadTs === undefined);
      expect(roots).toHaveLength(1);
      expect(harness.engine.turns[0]?.key.threadId).toBe(roots[0]?.ts);
      // The second attempt looked for the root in the channel's history and found it.
      expect(fake.callsOf('conversations.history')).toHaveLength(1);
      expect(fake.callsOf('chat.postMessage')).toHaveLength(1);
    } finally {
      await harness.close();
      await sqlite.close();
    }
  });

  it('gives up on a channel Slack refuses (TriggerPostRefusedError), and waits out a 429', async () => {
    const { fake, threads } = await setup();
    await expect(
      threads.startThread({ ...place, channelId: 'C0MISSING' }, MESSAGE, {
        id: 'g1.1',
        since: 0,
        recover: false,
      }),
    ).rejects.toBeInstanceOf(TriggerPostRefusedError);
    // A 429 is waited out and tried again (Slack posted nothing)…
    fake.rateLimitNext('chat.postMessage', 1);
    await threads.startThread(place, MESSAGE, { id: 'g2.1', since: 0, recover: false });
    expect(fake.callsOf('chat.postMessage').filter((c) => c.ok)).toHaveLength(1);
  }, 10_000);
});
