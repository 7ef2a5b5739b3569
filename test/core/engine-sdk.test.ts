import { afterEach, describe, expect, it } from 'vitest';
import { A2AClient } from '../../src/a2a/client.js';
import { BINDING, type Harness, startHarness } from '../helpers/engine-harness.js';
import { type SdkAgent, startSdkAgent } from '../peers/js-sdk-agent.js';

// The engine against the official JS SDK server: its answer streams open with a snapshot of the
// task still paused on the question answered, which must not read as a second question.
describe('session engine against the @a2a-js/sdk 1.3.0 server', () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0)) await c();
  });

  async function setup(): Promise<{ h: Harness; sdk: SdkAgent }> {
    const h = await startHarness({ version: '1.0' });
    const sdk = await startSdkAgent({ legacyCompat: false });
    cleanups.push(
      () => h.close(),
      () => sdk.close(),
    );
    const route = h.registry.routes.get(BINDING);
    if (route === undefined) throw new Error('no route');
    h.registry.routes.set(BINDING, {
      ...route,
      client: new A2AClient({ endpoint: sdk.endpoint, identity: { kind: 'user-id', userId: 'U1' } }),
    });
    return { h, sdk };
  }

  it('[Q-1][Q-2] asks, takes the reply, and finishes without a false notice', async () => {
    const { h } = await setup();
    const first = await h.say('t1', '1', 'ask');
    await h.surface.waitFor(
      () => h.surface.of(first.sessionId, 'question').length === 1,
      5_000,
      'the question',
    );
    expect(h.surface.of(first.sessionId, 'question')[0]?.text).toBe('What is your name?');
    const reply = await h.say('t1', '2', 'Ada');
    await h.surface.waitFor(
      () => h.events.some((e) => e.type === 'turn.settled' && e.turnId === reply.turnId),
      5_000,
      'the answer',
    );
    await h.engine.idle();
    // The answer's message shows what the agent added after the reply, not the question turn again.
    expect(h.surface.of(first.sessionId, 'answer').map((a) => a.text)).toEqual([
      'I need to know who you are.',
      'hello Ada',
    ]);
    expect(h.surface.notices(first.sessionId)).toEqual([]);
    expect(h.events.some((e) => e.type === 'task.cancel')).toBe(false);
  });

  it('[M-1] streams an answer and settles at once after the terminal status', async () => {
    const { h } = await setup();
    const { turnId, sessionId } = await h.say('t1', '1', 'hello');
    await h.surface.waitFor(
      () => h.events.some((e) => e.type === 'turn.settled' && e.turnId === turnId),
      5_000,
      'the turn',
    );
    expect(h.surface.of(sessionId, 'answer')[0]?.text).toBe('chunk 0 chunk 1 chunk 2 ');
    expect(h.surface.notices(sessionId)).toEqual([]);
  });
});
