import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { TriggerDirectory, tokenDigest } from '../core/triggers.js';
import { triggerRoutes } from '../triggers/http.js';
import { eventsListener, type ListeningServer, listen } from './controller-http.js';

describe("the controller's events port", () => {
  let server: ListeningServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it('hands POST /slack/events to Slack, refuses it with 503 while draining, serves nothing else', async () => {
    let draining = false;
    const seen: string[] = [];
    server = await listen(
      eventsListener({
        slack: () => (req, res) => {
          seen.push(req.url ?? '');
          res.end('ok');
        },
        draining: () => draining,
      }),
      0,
    );
    const base = `http://127.0.0.1:${server.port}`;
    expect((await fetch(`${base}/slack/events`, { method: 'POST', body: '{}' })).status).toBe(200);
    expect((await fetch(`${base}/slack/events`)).status).toBe(404);
    for (const path of ['/metrics', '/healthz', '/readyz', '/'])
      expect((await fetch(`${base}${path}`)).status, path).toBe(404);
    draining = true;
    const refused = await fetch(`${base}/slack/events`, { method: 'POST', body: '{}' });
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('5');
    expect(seen).toEqual(['/slack/events']);
  });

  it('hands /triggers/… to the trigger routes, with or without Slack, and 503s them while draining', async () => {
    let draining = false;
    const directory = new TriggerDirectory();
    directory.set('team-a/ops', [
      {
        binding: 'team-a/ops',
        name: 'hook',
        kind: 'webhook',
        instruction: 'x',
        onResolved: 'notice',
        target: {},
        threadsPerMinute: 5,
        tokenDigest: tokenDigest('hook-token'),
      },
    ]);
    const routes = triggerRoutes({
      directory,
      place: () => undefined,
      deliver: async () => ({ outcome: 'opened', group: 'g', newAlerts: 1, resolvedAlerts: 0 }),
      refused: () => undefined,
      draining: () => draining,
      logger: pino({ level: 'silent' }),
    });
    server = await listen(
      eventsListener({ slack: () => undefined, triggers: routes, draining: () => draining }),
      0,
    );
    const post = (path: string) =>
      fetch(`http://127.0.0.1:${server?.port}${path}`, {
        method: 'POST',
        headers: { authorization: 'Bearer hook-token', 'content-type': 'application/json' },
        body: '{"title":"x"}',
      });
    // No surface can take the threads here: the trigger answers, not the Slack fallback's 404.
    expect((await post('/triggers/team-a/ops/hook')).status).toBe(503);
    // A path naming no trigger is answered as a wrong token is: nothing tells them apart.
    expect((await post('/triggers/team-a/ops/other')).status).toBe(401);
    draining = true;
    const refused = await post('/triggers/team-a/ops/hook');
    expect(refused.status).toBe(503);
    expect(await refused.json()).toMatchObject({ error: { code: 'shutting_down' } });
    expect(refused.headers.get('retry-after')).toBe('5');
  });

  it('answers 404 on the events path when Slack is not configured (Socket Mode or no Slack)', async () => {
    server = await listen(eventsListener({ slack: () => undefined, draining: () => false }), 0);
    expect((await fetch(`http://127.0.0.1:${server.port}/slack/events`, { method: 'POST' })).status).toBe(
      404,
    );
  });

  it('lets a request in flight finish when it closes, within the grace', async () => {
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const s = await listen(
      eventsListener({
        slack: () => (_req, res) => {
          void held.then(() => res.end('stored'));
        },
        draining: () => false,
      }),
      0,
    );
    const inFlight = fetch(`http://127.0.0.1:${s.port}/slack/events`, { method: 'POST', body: '{}' });
    await new Promise((resolve) => setTimeout(resolve, 50));
    const closed = s.close(5_000);
    setTimeout(release, 100);
    const res = await inFlight;
    expect(await res.text()).toBe('stored');
    await closed;
  });
});
