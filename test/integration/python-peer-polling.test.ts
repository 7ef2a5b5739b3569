import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { A2AClient } from '../../src/a2a/client.js';
import { AgentBusyError, StreamingNotAdvertisedError } from '../../src/core/agent/errors.js';
import type { EngineEvent } from '../../src/core/events.js';
import { type Harness, startHarness } from '../helpers/engine-harness.js';
import { failureOf } from '../helpers/stream.js';
import { type PythonPeer, startPythonPeer } from '../peers/python-peer.js';

// The official Python SDK (a2a-sdk) run without streaming: its card says
// capabilities.streaming false and the SDK refuses the streaming methods. A Binding whose
// backend polls reaches it through SendMessage and GetTask alone (P rows), at both versions.
describe.each([
  { versions: '1.0,0.3', speaks: '1.0' },
  { versions: '0.3', speaks: '0.3' },
])(
  'the session engine polling the Python a2a-sdk server without streaming, speaking $speaks',
  ({ versions, speaks }) => {
    let peer: PythonPeer;
    let h: Harness;

    beforeAll(async () => {
      peer = await startPythonPeer(versions, { streaming: false });
      h = await startHarness({
        version: speaks === '1.0' ? '1.0' : '0.3',
        client: { endpoint: peer.endpoint, identity: { kind: 'user-id', userId: 'U123' } },
        settings: { polling: { intervalMs: 150, timeoutMs: 20_000 } },
      });
    });
    afterAll(async () => {
      await h?.close();
      await peer?.close();
    });

    const settledEvent = (turnId: string) =>
      h.events.find(
        (e): e is Extract<EngineEvent, { type: 'turn.settled' }> =>
          e.type === 'turn.settled' && e.turnId === turnId,
      );
    async function settled(turnId: string): Promise<Extract<EngineEvent, { type: 'turn.settled' }>> {
      await h.surface.waitFor(() => settledEvent(turnId) !== undefined, 20_000, `turn ${turnId} to settle`);
      const event = settledEvent(turnId);
      if (event === undefined) throw new Error('unreachable');
      return event;
    }

    it(`[P-1][DT-3] the peer refuses a streaming send, and its card is refused without polling (${speaks})`, async () => {
      const plain = new A2AClient({ endpoint: peer.endpoint, identity: { kind: 'user-id', userId: 'U123' } });
      await expect(plain.card()).rejects.toBeInstanceOf(StreamingNotAdvertisedError);
      const polling = new A2AClient({
        endpoint: peer.endpoint,
        identity: { kind: 'user-id', userId: 'U123' },
        polling: true,
      });
      expect(await polling.streams()).toBe(false);
      // What a broker that tried to stream would get: -32004, which E-3 reads as busy for ever.
      const { error } = await failureOf(
        polling.sendStreamingMessage({ messageId: `py-poll-${speaks}-0`, text: 'hi' }),
      );
      expect(error).toBeInstanceOf(AgentBusyError);
    });

    it(`[P-2][P-3] sends with SendMessage and shows the answer as GetTask reveals it (${speaks})`, async () => {
      const { turnId, sessionId } = await h.say(`t-slow-${speaks}`, '1', 'slow');
      const done = await settled(turnId);
      expect(done.outcome).toBe('completed');
      const [shown] = h.surface.of(sessionId, 'answer');
      expect(shown?.text).toBe('chunk 0 chunk 1 ');
      expect(shown?.final).toBe(true);
      // The first chunk was shown before the second arrived, three seconds later.
      expect(shown?.updates ?? 0).toBeGreaterThanOrEqual(2);
      const polls = h.events.filter((e) => e.type === 'task.polled');
      expect(polls.length).toBeGreaterThan(3);
      expect(h.events.some((e) => e.type === 'stream.lost' || e.type === 'task.resubscribed')).toBe(false);
    });

    it(`[P-5] pauses on the peer's question and sends the answer to the paused task (${speaks})`, async () => {
      const thread = `t-ask-${speaks}`;
      const { turnId, sessionId } = await h.say(thread, '1', 'ask');
      expect((await settled(turnId)).outcome).toBe('input-required');
      await h.surface.waitFor(() => h.surface.of(sessionId, 'question').length === 1, 5_000, 'the question');
      const answer = await h.say(thread, '2', 'Grace');
      expect((await settled(answer.turnId)).outcome).toBe('completed');
      const answers = h.surface.of(sessionId, 'answer');
      expect(answers.at(-1)?.text).toContain('hello');
      expect(answers.at(-1)?.text).toContain('Grace');
    });

    it(`[P-6] shows the peer's bare Message as the answer (${speaks})`, async () => {
      const { turnId, sessionId } = await h.say(`t-message-${speaks}`, '1', 'message');
      const done = await settled(turnId);
      expect(done).toMatchObject({ outcome: 'completed', taskId: null });
      expect(h.surface.of(sessionId, 'answer')[0]?.text).toBe('just a message');
    });

    it(`[P-3] tells the thread the peer's task failed (${speaks})`, async () => {
      const { turnId, sessionId } = await h.say(`t-fail-${speaks}`, '1', 'fail');
      const done = await settled(turnId);
      expect(done.outcome).toBe('failed');
      expect(h.surface.notices(sessionId)).toEqual(['task-failed']);
    });

    it(`[P-4] cancels the peer's task once the polling timeout passes (${speaks})`, async () => {
      h.registry.routes.set('team-a/support-short', {
        ...(h.registry.resolve('team-a/support') ?? ({} as never)),
        settings: { questionTimeoutMs: null, polling: { intervalMs: 150, timeoutMs: 1_000 } },
      });
      const { turnId, sessionId } = await h.engine.receive({
        kind: 'person',
        key: h.key(`t-timeout-${speaks}`),
        binding: 'team-a/support-short',
        chatMessageId: '1',
        actor: { id: 'U123', name: 'Ada', label: '[Test: Ada (U123)]' },
        text: 'slow',
        addressed: true,
      });
      const done = await settled(turnId);
      expect(done.outcome).toBe('canceled');
      expect(h.surface.notices(sessionId)).toEqual(['poll-timeout']);
      expect(h.events.some((e) => e.type === 'task.cancel' && e.ok && e.reason === 'poll-timeout')).toBe(
        true,
      );
    });
  },
);
