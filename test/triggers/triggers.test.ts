import { afterEach, describe, expect, it } from 'vitest';
import type { TriggerStore } from '../../src/core/trigger-store.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { TRIGGER_LIMITS } from '../../src/triggers/limits.js';
import { MORE_ALERTS_INSTRUCTION, RESOLVED_INSTRUCTION } from '../../src/triggers/worker.js';
import {
  BINDING,
  notification,
  startTriggerHarness,
  TOKEN,
  type TriggerHarness,
  triggerConfig,
  until,
} from './harness.js';

const PATH = `/triggers/${BINDING}/alerts`;

describe('trigger webhooks', () => {
  const open: Array<{ harness?: TriggerHarness; store: SqliteStore }> = [];
  afterEach(async () => {
    for (const o of open.splice(0)) {
      await o.harness?.close();
      await o.store.close();
    }
  });

  async function setup(
    ...args: Parameters<typeof startTriggerHarness> extends [unknown, ...infer R] ? R : never
  ) {
    const store = new SqliteStore(':memory:');
    await store.migrate();
    const harness = await startTriggerHarness(store.triggers(), ...args);
    open.push({ harness, store });
    return { harness, store, triggers: store.triggers() };
  }

  describe('what a request gets back', () => {
    it('without its token nothing tells a trigger from no trigger: an unknown path, a schedule, a trigger without a token, a missing or wrong token, any method — the same 401', async () => {
      const { harness, triggers } = await setup({
        configs: [
          triggerConfig(),
          triggerConfig({
            name: 'daily',
            kind: 'schedule',
            schedule: { cron: '0 9 * * *', timeZone: 'UTC' },
          }),
        ],
      });
      const body = notification('g', [{ fingerprint: 'a' }]);
      const answers: Array<{ status: number; json: unknown; auth: string | null }> = [];
      const wrong = `Bearer ${TOKEN.slice(0, -1)}x`;
      for (const path of [
        `/triggers/${BINDING}/nope`,
        `/triggers/${BINDING}/daily`,
        '/triggers/team-a/support',
        '/triggers/A/B/C',
      ])
        for (const authorization of ['', wrong, `Bearer ${TOKEN}`]) {
          const res = await harness.post(path, body, { authorization });
          answers.push({ status: res.status, json: res.json, auth: res.headers.get('www-authenticate') });
        }
      for (const authorization of ['', wrong]) {
        const res = await harness.post(PATH, body, { authorization });
        answers.push({ status: res.status, json: res.json, auth: res.headers.get('www-authenticate') });
        // The method is checked after the token: a GET learns nothing either.
        const get = await fetch(`${harness.url}${PATH}`, { headers: { authorization } });
        answers.push({
          status: get.status,
          json: await get.json(),
          auth: get.headers.get('www-authenticate'),
        });
      }
      const unknown = await fetch(`${harness.url}/triggers/${BINDING}/nope`);
      answers.push({
        status: unknown.status,
        json: await unknown.json(),
        auth: unknown.headers.get('www-authenticate'),
      });
      expect(new Set(answers.map((a) => JSON.stringify(a))).size).toBe(1);
      expect(answers[0]).toMatchObject({ status: 401, json: { error: { code: 'unauthorized' } } });
      expect(answers[0]?.auth).toContain('Bearer');
      expect(await triggers.triggerActivity()).toStrictEqual([]);
    });

    it('405 for another method once the token is right', async () => {
      const { harness } = await setup();
      const get = await fetch(`${harness.url}${PATH}`, { headers: { authorization: `Bearer ${TOKEN}` } });
      expect(get.status).toBe(405);
      expect(get.headers.get('allow')).toBe('POST');
      expect(harness.observer.get(`delivery ${BINDING} alertmanager refused`)).toBe(1);
    });

    it('503 with Retry-After while the trigger is not ready or no surface can take its threads', async () => {
      const { harness } = await setup({
        configs: [
          triggerConfig({ problem: { reason: 'SecretNotFound', message: 'Secret "alert-token" not found' } }),
        ],
      });
      const notReady = await harness.post(PATH, notification('g', [{ fingerprint: 'a' }]));
      expect(notReady.status).toBe(503);
      expect(notReady.headers.get('retry-after')).toBe('30');
      expect(notReady.json).toMatchObject({
        error: { code: 'not_ready', message: expect.stringContaining('SecretNotFound') },
      });
      // A webhook trigger with no token to compare against takes nothing, whatever is sent, and
      // answers as if it did not exist (its Binding's status says why).
      const { tokenDigest: _, ...tokenless } = triggerConfig();
      harness.directory.set(BINDING, [tokenless]);
      const noToken = await harness.post(PATH, notification('g', [{ fingerprint: 'a' }]));
      expect(noToken.status).toBe(401);
      expect(noToken.json).toMatchObject({ error: { code: 'unauthorized' } });
      harness.directory.set(BINDING, [triggerConfig()]);
      harness.chat.available = false;
      const noSurface = await harness.post(PATH, notification('g', [{ fingerprint: 'a' }]));
      expect(noSurface.status).toBe(503);
      expect(noSurface.json).toMatchObject({
        error: { code: 'not_ready', message: expect.stringContaining('surface') },
      });
    });

    it('415 for another content type, 413 over the body limit, 400 for bad JSON or a bad payload — nothing kept', async () => {
      const { harness, triggers } = await setup();
      expect((await harness.post(PATH, 'x', { 'content-type': 'text/plain' })).status).toBe(415);
      const big = await harness.post(PATH, JSON.stringify({ pad: 'x'.repeat(TRIGGER_LIMITS.bodyBytes) }));
      expect(big.status).toBe(413);
      expect((await harness.post(PATH, '{"version":')).json).toMatchObject({
        error: { code: 'invalid_json' },
      });
      const bad = await harness.post(PATH, { ...notification('g', [{ fingerprint: 'a' }]), alerts: [] });
      expect(bad.status).toBe(400);
      expect(bad.json).toMatchObject({
        error: { code: 'invalid_payload', message: expect.stringContaining('alerts') },
      });
      await harness.triggers.worker.idle();
      expect(harness.chat.posts).toStrictEqual([]);
      await until('the refusal recorded', async () => (await triggers.triggerActivity()).length === 1);
      expect((await triggers.triggerActivity())[0]).toMatchObject({ trigger: 'alerts', result: 'invalid' });
    });
  });

  describe('one thread per alert group', () => {
    it('opens a thread with a summary and a turn with no actor, the alert fields as data', async () => {
      const { harness } = await setup();
      const res = await harness.post(PATH, notification('{}:{alertname="HighCPU"}', [{ fingerprint: 'a' }]));
      expect(res.status).toBe(200);
      expect(res.json).toMatchObject({ outcome: 'opened', newAlerts: 1, resolvedAlerts: 0 });
      await until('the turn', () => harness.engine.turns.length === 1);
      const [root] = harness.chat.roots();
      expect(root?.message.title).toBe('Firing: HighCPU (critical)');
      const [turn] = harness.engine.turns;
      expect(turn).toMatchObject({
        kind: 'trigger',
        key: root?.key,
        binding: BINDING,
        instruction: 'Investigate this alert.',
        fields: { source: 'Alertmanager', 'alerts[0].labels.instance': 'a' },
      });
      expect(turn).not.toHaveProperty('actor');
      expect(harness.observer.get(`thread ${BINDING} alertmanager`)).toBe(1);
    });

    it('continues the group’s thread with a turn for new alerts, and does nothing for a repeat', async () => {
      const { harness } = await setup();
      const group = '{}:{alertname="HighCPU"}';
      await harness.post(PATH, notification(group, [{ fingerprint: 'a' }]));
      await until('the first turn', () => harness.engine.turns.length === 1);
      // Alertmanager's repeat_interval and its retries send the same again: no second run.
      for (let i = 0; i < 3; i++) {
        const repeat = await harness.post(PATH, notification(group, [{ fingerprint: 'a' }]));
        expect(repeat.json).toMatchObject({ outcome: 'duplicate' });
      }
      const more = await harness.post(
        PATH,
        notification(group, [{ fingerprint: 'a' }, { fingerprint: 'b' }]),
      );
      expect(more.json).toMatchObject({ outcome: 'continued', newAlerts: 1 });
      await until('the second turn', () => harness.engine.turns.length === 2);
      await harness.triggers.worker.idle();
      expect(harness.chat.roots()).toHaveLength(1);
      const second = harness.engine.turns[1];
      expect(second?.key).toStrictEqual(harness.chat.roots()[0]?.key);
      expect(second?.instruction).toBe(`${MORE_ALERTS_INSTRUCTION} Investigate this alert.`);
      expect(second?.fields['alerts[0].labels.instance']).toBe('b');
      expect(Object.values(second?.fields ?? {})).not.toContain('a');
      expect(harness.chat.posts.at(-1)?.message.title).toBe('1 more alert firing in this group: HighCPU');
      // A second group is a second thread.
      await harness.post(
        PATH,
        notification('{}:{alertname="DiskFull"}', [{ name: 'DiskFull', fingerprint: 'c' }]),
      );
      await until('the second thread', () => harness.chat.roots().length === 2);
    });

    it('posts resolutions in the thread, and one more turn when the trigger asks and the group has resolved', async () => {
      const { harness } = await setup({ configs: [triggerConfig({ onResolved: 'turn' })] });
      const g = 'group';
      await harness.post(PATH, notification(g, [{ fingerprint: 'a' }, { fingerprint: 'b' }]));
      await until('the turn', () => harness.engine.turns.length === 1);
      const partly = await harness.post(
        PATH,
        notification(g, [{ fingerprint: 'a', status: 'resolved' }, { fingerprint: 'b' }]),
      );
      expect(partly.json).toMatchObject({ outcome: 'resolved', resolvedAlerts: 1 });
      await until('the first resolution', () => harness.chat.posts.length === 2);
      const all = await harness.post(
        PATH,
        notification(g, [
          { fingerprint: 'a', status: 'resolved' },
          { fingerprint: 'b', status: 'resolved' },
        ]),
      );
      expect(all.json).toMatchObject({ outcome: 'resolved', resolvedAlerts: 1 });
      await until('the resolved turn', () => harness.engine.turns.length === 2);
      expect(harness.chat.posts.map((p) => p.message.title)).toStrictEqual([
        'Firing: HighCPU (critical) — 2 alerts',
        'Resolved: 1 alert of HighCPU',
        'Resolved: HighCPU — every alert of this group has resolved',
      ]);
      expect(harness.engine.turns[1]?.instruction).toBe(RESOLVED_INSTRUCTION);
      // Alertmanager sends a resolved notification once more on a retry: nothing more happens.
      await harness.post(
        PATH,
        notification(g, [
          { fingerprint: 'a', status: 'resolved' },
          { fingerprint: 'b', status: 'resolved' },
        ]),
      );
      await harness.triggers.worker.idle();
      expect(harness.engine.turns).toHaveLength(2);
    });

    it('throttles a storm: at most the limit of new threads a minute, the rest listed in one storm thread', async () => {
      const { harness } = await setup({ configs: [triggerConfig({ threadsPerMinute: 2 })] });
      for (let i = 0; i < 5; i++) {
        const res = await harness.post(
          PATH,
          notification(`g${i}`, [{ name: `Alert${i}`, fingerprint: `f${i}` }]),
        );
        expect(res.json).toMatchObject({ outcome: i < 2 ? 'opened' : 'throttled' });
      }
      await until('the storm entries', () => harness.chat.posts.length === 6);
      await harness.triggers.worker.idle();
      const roots = harness.chat.roots().map((r) => r.message.title);
      expect(roots).toStrictEqual([
        'Firing: Alert0 (critical)',
        'Firing: Alert1 (critical)',
        `Alert storm: more alert groups than ${BINDING} opens threads for`,
      ]);
      const storm = harness.chat.roots()[2]?.key;
      const entries = harness.chat.posts.filter((p) => p.kind === 'post');
      expect(entries.map((p) => [p.key, p.message.title])).toStrictEqual(
        [2, 3, 4].map((i) => [storm, `Firing: Alert${i} (critical)`]),
      );
      // The agent ran for the two threads only.
      expect(harness.engine.turns).toHaveLength(2);
      expect(harness.observer.get(`throttled ${BINDING}`)).toBe(3);
    });
  });

  describe('write before effect', () => {
    it('does not post a root twice when its answer was lost, nor run the agent twice', async () => {
      const { harness } = await setup();
      harness.chat.loseAnswers = 1;
      await harness.post(PATH, notification('g', [{ fingerprint: 'a' }]));
      await until('the turn', () => harness.engine.turns.length === 1);
      await harness.triggers.worker.idle();
      expect(harness.chat.roots()).toHaveLength(1);
      // The attempt that found it knew an earlier one may have posted.
      expect(harness.chat.posts[0]?.ref.recover).toBe(false);
    });

    it('finishes work a replica that died left, once its lease is gone', async () => {
      const store = new SqliteStore(':memory:');
      await store.migrate();
      open.push({ store });
      // A replica records the delivery, takes the group's lease, and dies before doing the work.
      const first = await startTriggerHarness(store.triggers(), { owner: 'replica-a' });
      await first.triggers.worker.stop();
      await first.post(PATH, notification('g', [{ fingerprint: 'a' }]));
      const leased = await store.triggers().claimTriggerWork('replica-a', Date.now(), 300, 10);
      expect(leased).toHaveLength(1);
      await first.close();
      const second = await startTriggerHarness(store.triggers(), { owner: 'replica-b' });
      open.push({ harness: second, store });
      await new Promise((r) => setTimeout(r, 150));
      expect(second.chat.posts).toStrictEqual([]);
      await until('the turn on the other replica', () => second.engine.turns.length === 1);
      expect(second.chat.roots()).toHaveLength(1);
      expect(first.chat.posts).toStrictEqual([]);
    });

    it('gives up work the chat refuses for good, counting it, and goes on with the next', async () => {
      const { harness } = await setup();
      harness.chat.refuse = true;
      await harness.post(PATH, notification('g1', [{ fingerprint: 'a' }]));
      await until(
        'the failure counted',
        () => harness.observer.get(`failed ${BINDING} trigger_post_refused`) === 1,
      );
      harness.chat.refuse = false;
      await harness.post(PATH, notification('g2', [{ fingerprint: 'b' }]));
      await until('the next thread', () => harness.chat.roots().length === 1);
    });
  });

  it('keeps the last delivery of each trigger for status', async () => {
    const { harness, triggers } = await setup();
    await harness.post(PATH, notification('g', [{ fingerprint: 'a' }]));
    await harness.post(PATH, notification('g', [{ fingerprint: 'a' }]));
    const [activity] = await (triggers as TriggerStore).triggerActivity();
    expect(activity).toMatchObject({ binding: BINDING, trigger: 'alerts', result: 'duplicate' });
  });
});
