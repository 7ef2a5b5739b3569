import { afterEach, describe, expect, it } from 'vitest';
import type { Commit, SessionStore } from '../../src/core/store.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { type Harness, startHarness, untilEvent } from '../helpers/engine-harness.js';
import { answer } from '../peers/contract-agent/behaviours.js';
import type { WireVersion } from '../peers/contract-agent/contract-agent.js';

/**
 * The ref of the message that shows a turn's answer is saved so that a later driver (after a
 * crash, on another replica) updates that message instead of posting another. It is written on
 * its own, never before an effect, but when a commit of its turn is asked for before the event
 * loop turns (a short answer's settle, right after its first update), that commit carries it:
 * one write instead of two, in the same group commit.
 */

interface Watched {
  store: SessionStore;
  refWrites: string[];
  /** The answer ref each commit carried, by the turn state it wrote. */
  carried: Array<{ state: string; answerRef: string | null }>;
  /** Makes the next commit that settles a turn fail, once. */
  failNextSettle(): void;
}

function watched(store: SessionStore): Watched {
  const refWrites: string[] = [];
  const carried: Watched['carried'] = [];
  let failSettle = false;
  const proxy = new Proxy(store, {
    get(target, prop) {
      if (prop === 'setAnswerRef') {
        return (turnId: string, ref: string, now: number) => {
          refWrites.push(ref);
          return target.setAnswerRef(turnId, ref, now);
        };
      }
      if (prop === 'commit') {
        return (commit: Commit) => {
          for (const t of commit.turns ?? []) carried.push({ state: t.state, answerRef: t.answerRef });
          if (failSettle && commit.turns?.some((t) => t.state === 'settled')) {
            failSettle = false;
            return Promise.reject(new Error('the disk is full'));
          }
          return target.commit(commit);
        };
      }
      const value: unknown = Reflect.get(target, prop, target);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
  return {
    store: proxy,
    refWrites,
    carried,
    failNextSettle: () => {
      failSettle = true;
    },
  };
}

const answers = (h: Harness) => h.surface.messages.filter((m) => m.kind === 'answer');

describe.each<WireVersion>(['1.0', '0.3'])('the answer ref (%s)', (version) => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  it('travels with the settle of a short answer: no write of its own, and it is recorded', async () => {
    const w = watched(new SqliteStore(':memory:'));
    const h = await startHarness({ version, store: w.store });
    cleanups.push(() => h.close());
    h.agent.enqueue(answer({ chunks: ['short ', 'answer'] }));
    const { turnId } = await h.say('t1', '1.0', 'hello');
    await untilEvent(h, (e) => e.type === 'turn.settled' && e.turnId === turnId);
    await h.engine.idle();
    const [shown] = answers(h);
    expect(shown).toMatchObject({ text: 'short answer', final: true });
    expect(w.refWrites).toEqual([]);
    expect(w.carried.find((c) => c.state === 'settled')?.answerRef).toBe(shown?.ref);
    expect((await h.store.getTurn(turnId))?.answerRef).toBe(shown?.ref);
  });

  it('is written on its own when no commit of its turn comes before the loop turns (a long answer)', async () => {
    const w = watched(new SqliteStore(':memory:'));
    const h = await startHarness({ version, store: w.store });
    cleanups.push(() => h.close());
    h.agent.enqueue(answer({ chunks: ['first ', 'second ', 'third'], chunkDelayMs: 100 }));
    const { turnId } = await h.say('t1', '1.0', 'hello');
    // Recorded while the answer is still streaming.
    await expect
      .poll(async () => (await h.store.getTurn(turnId))?.answerRef, { timeout: 2_000, interval: 10 })
      .toBe('answer-1');
    expect(h.events.some((e) => e.type === 'turn.settled')).toBe(false);
    await untilEvent(h, (e) => e.type === 'turn.settled' && e.turnId === turnId);
    await h.engine.idle();
    expect(w.refWrites).toEqual(['answer-1']);
    expect(answers(h)).toMatchObject([{ ref: 'answer-1', text: 'first second third', final: true }]);
  });

  it('is not lost with a commit that carried it and failed: written on its own, and the next driver updates the same message', async () => {
    const w = watched(new SqliteStore(':memory:'));
    const h = await startHarness({ version, store: w.store });
    cleanups.push(() => h.close());
    w.failNextSettle();
    h.agent.enqueue(answer({ chunks: ['short ', 'answer'] }));
    const { turnId } = await h.say('t1', '1.0', 'hello');
    // The settle failed; the scan drives the session again, which follows the task to its end.
    await untilEvent(h, (e) => e.type === 'turn.settled' && e.turnId === turnId);
    await h.engine.idle();
    expect(w.refWrites).toEqual(['answer-1']);
    expect(answers(h)).toMatchObject([{ ref: 'answer-1', text: 'short answer', final: true }]);
    expect((await h.store.getTurn(turnId))?.answerRef).toBe('answer-1');
  });
});
