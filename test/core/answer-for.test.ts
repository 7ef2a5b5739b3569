import { afterEach, describe, expect, it } from 'vitest';
import { ACTOR_METADATA_KEY, messageIdFor } from '../../src/core/compose.js';
import type { AnswerFor, AnswerSink, ChatTarget } from '../../src/core/ports.js';
import { BINDING, type Harness, startHarness } from '../helpers/engine-harness.js';
import { FakeSurface } from '../helpers/fake-surface.js';

/** The fake surface, noting whom each answer it opens is for. */
class RecordingSurface extends FakeSurface {
  readonly opened: Array<{ turnId: string } & Partial<AnswerFor>> = [];
  override openAnswer(
    target: ChatTarget,
    turnId: string,
    ref: string | null,
    onRef: (ref: string) => void,
    // Optional only so the override fits the fake's own signature, which ignores it.
    answering?: AnswerFor,
  ): AnswerSink {
    this.opened.push({ turnId, ...answering });
    return super.openAnswer(target, turnId, ref, onRef);
  }
}

/**
 * The turn id is the engine's alone: a surface learns whom an answer is for, and whether an
 * earlier process can have shown it, when the engine opens it — it never works the id out.
 */
describe('whom an answer is for', () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  async function settled(harness: Harness, turnId: string): Promise<void> {
    const deadline = Date.now() + 8_000;
    while ((await harness.store.getTurn(turnId))?.state !== 'settled') {
      if (Date.now() > deadline) throw new Error(`turn ${turnId} did not settle`);
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  it('a turn this process stored: for its actor, and fresh', async () => {
    const surface = new RecordingSurface();
    h = await startHarness({ version: '1.0', surface });
    const { turnId } = await h.say('t1', '1', 'hello');
    await settled(h, turnId);
    expect(surface.opened).toStrictEqual([{ turnId, actorId: 'U123', fresh: true }]);
  });

  it('a turn another process stored: for its actor, not fresh (its answer may be shown already)', async () => {
    const surface = new RecordingSurface();
    h = await startHarness({ version: '1.0', surface });
    // Stored by another process sharing the store (a replica, or this one before a restart).
    const session = await h.store.openSession({ key: h.key('t2'), binding: BINDING, now: Date.now() });
    const id = messageIdFor(session.id, '2', 'message');
    await h.store.addTurn({
      id,
      sessionId: session.id,
      kind: 'message',
      chatMessageId: '2',
      text: 'hello from before',
      label: '[Test: Bob (U777)]',
      metadata: { [ACTOR_METADATA_KEY]: { id: 'U777' } },
      taskId: null,
      state: 'queued',
      outcome: null,
      attempts: 0,
      firstSentAt: null,
      busyNoticeAt: null,
      answerRef: null,
      traceContext: null,
      now: Date.now(),
    });
    await h.engine.scan();
    await settled(h, id);
    expect(surface.opened).toStrictEqual([{ turnId: id, actorId: 'U777', fresh: false }]);
  });
});
