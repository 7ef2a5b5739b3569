import { afterEach, describe, expect, it } from 'vitest';
import type { Commit, SessionStore } from '../../src/core/store.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { type Harness, startHarness, untilEvent } from '../helpers/engine-harness.js';
import { FakeSurface } from '../helpers/fake-surface.js';
import { answer, script } from '../peers/contract-agent/behaviours.js';
import type { WireVersion } from '../peers/contract-agent/contract-agent.js';

/**
 * the task a send's stream names is recorded at once, and the engine reads the stream on
 * while that write goes to disk (a stream that stood still for every group commit piled its
 * bytes up in its body). What arrives meanwhile reaches the thread only once the record is
 * durable: the write still comes before every effect it guards.
 */

/** A store whose first write recording a task is applied at once but answered only at open(). */
function heldAccept(store: SessionStore): {
  store: SessionStore;
  open: () => void;
  asked: Promise<void>;
  log: string[];
} {
  let open = (): void => undefined;
  const gate = new Promise<void>((resolve) => {
    open = resolve;
  });
  let asked = (): void => undefined;
  const askedPromise = new Promise<void>((resolve) => {
    asked = resolve;
  });
  const log: string[] = [];
  let held = false;
  const wrapped = new Proxy(store, {
    get(target, prop) {
      if (prop === 'commit') {
        return (commit: Commit) => {
          const written = target.commit(commit);
          if (!held && commit.session?.task != null) {
            held = true;
            log.push('accept asked');
            asked();
            return gate.then(async () => {
              const session = await written;
              log.push('accept durable');
              return session;
            });
          }
          log.push(`commit asked: ${commit.turns?.map((t) => t.state).join(',') ?? ''}`);
          return written;
        };
      }
      const value: unknown = Reflect.get(target, prop, target);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { store: wrapped, open, asked: askedPromise, log };
}

const artifactEvents = (h: Harness, turnId: string): number =>
  h.events.filter((e) => e.type === 'agent.event' && e.turnId === turnId && e.kind === 'artifact-update')
    .length;

/** A surface whose first answer update throws (an update must not, but one that does is not left unheard). */
class ThrowingOnce extends FakeSurface {
  thrown = 0;
  override openAnswer(...args: Parameters<FakeSurface['openAnswer']>): ReturnType<FakeSurface['openAnswer']> {
    const sink = super.openAnswer(...args);
    return {
      update: (view) => {
        if (this.thrown === 0) {
          this.thrown++;
          throw new Error('the surface broke');
        }
        sink.update(view);
      },
      finish: (view, end) => sink.finish(view, end),
    };
  }
}

/** The first words, a pause of `pauseMs`, then the rest and the end. */
const firstWordsThenTheRest = (pauseMs: number) =>
  script([
    { event: 'working' },
    { event: 'chunk', text: 'first words' },
    { waitMs: pauseMs },
    { event: 'chunk', text: ', then the rest', append: true },
    { event: 'completed' },
  ]);

const answers = (h: Harness) => h.surface.messages.filter((m) => m.kind === 'answer');

describe.each<WireVersion>(['1.0', '0.3'])('the task record and the stream (%s)', (version) => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  /** A harness on a store that holds the task record's answer until `held.open()`. */
  async function heldHarness(
    surface?: FakeSurface,
  ): Promise<{ h: Harness; held: ReturnType<typeof heldAccept> }> {
    const held = heldAccept(new SqliteStore(':memory:'));
    const h = await startHarness({
      version,
      store: held.store,
      ...(surface === undefined ? {} : { surface }),
    });
    cleanups.push(async () => {
      held.open();
      await h.close();
    });
    return { h, held };
  }

  it('[R-7] reads the stream on while the task is being recorded, and shows none of it before the record is durable', async () => {
    const { h, held } = await heldHarness();
    h.agent.enqueue(answer({ chunks: ['alpha ', 'beta ', 'gamma'], final: 'status-only' }));
    const { turnId } = await h.say('t1', '1.0', 'hello');
    await held.asked;
    // Every chunk is read while the record is still on its way…
    await untilEvent(h, () => artifactEvents(h, turnId) === 3, 5_000);
    // …and none of it is shown, nor is the turn settled.
    expect(answers(h)).toEqual([]);
    expect(h.events.some((e) => e.type === 'turn.accepted')).toBe(false);
    expect(held.log).toEqual(['accept asked']);
    held.open();
    await untilEvent(h, (e) => e.type === 'turn.settled' && e.turnId === turnId);
    expect(answers(h)).toMatchObject([{ text: 'alpha beta gamma', final: true }]);
    // The settle is asked for only once the record is durable.
    expect(held.log).toEqual(['accept asked', 'accept durable', 'commit asked: settled']);
    expect(await h.store.getTurn(turnId)).toMatchObject({ state: 'settled', outcome: 'completed' });
  });

  it('[R-7] holds back a full Task that rewrites the answer while the task is being recorded', async () => {
    const { h, held } = await heldHarness();
    h.agent.enqueue(
      script([
        { event: 'working' },
        { event: 'chunk', text: 'first draft' },
        { waitMs: 200 },
        { event: 'task' },
        { event: 'completed' },
      ]),
    );
    const { turnId } = await h.say('t1', '1.0', 'hello');
    await held.asked;
    await untilEvent(h, () => artifactEvents(h, turnId) === 1, 5_000);
    // The agent rewrites its answer, then sends the full Task while it still works.
    for (const task of h.agent.tasks.values())
      task.artifacts = [{ artifactId: 'answer', parts: [{ text: 'the final answer' }] }];
    await untilEvent(h, (e) => e.type === 'agent.event' && e.turnId === turnId && e.kind === 'task', 5_000);
    expect(answers(h)).toEqual([]);
    held.open();
    await untilEvent(h, (e) => e.type === 'turn.settled' && e.turnId === turnId);
    expect(answers(h)).toMatchObject([{ text: 'the final answer', final: true }]);
  });

  it('[R-7][R-9] shows a tool step only once the task is recorded', async () => {
    const { h, held } = await heldHarness();
    h.agent.enqueue(
      script([
        { event: 'working' },
        {
          event: 'working',
          parts: [{ data: { name: 'lookup', args: { q: 'x' } }, metadata: { adk_type: 'function_call' } }],
        },
        { event: 'chunk', text: 'found it' },
        { event: 'completed' },
        { event: 'task' },
      ]),
    );
    const { turnId } = await h.say('t1', '1.0', 'hello');
    await held.asked;
    // The step's event is read, and waits behind the record: nothing is shown.
    await untilEvent(
      h,
      () => h.events.filter((e) => e.type === 'agent.event' && e.turnId === turnId).length >= 2,
      5_000,
    );
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(h.surface.messages).toEqual([]);
    held.open();
    await untilEvent(h, (e) => e.type === 'turn.settled' && e.turnId === turnId);
    expect(h.surface.messages.map((m) => m.kind)).toEqual(['step', 'answer']);
    expect(answers(h)).toMatchObject([{ text: 'found it', final: true }]);
  });

  it('[R-7] shows what was read meanwhile as soon as the record is durable, while the agent is still working', async () => {
    const { h, held } = await heldHarness();
    // The first words, then a long pause before the rest: the update must not wait for them.
    h.agent.enqueue(firstWordsThenTheRest(1_500));
    const { turnId } = await h.say('t1', '1.0', 'hello');
    await held.asked;
    await untilEvent(h, () => artifactEvents(h, turnId) === 1, 5_000);
    expect(answers(h)).toEqual([]);
    held.open();
    await expect
      .poll(() => answers(h).map((m) => m.text), { timeout: 1_000, interval: 10 })
      .toEqual(['first words']);
    expect(artifactEvents(h, turnId)).toBe(1);
    await untilEvent(h, (e) => e.type === 'turn.settled' && e.turnId === turnId);
    expect(answers(h)).toMatchObject([{ text: 'first words, then the rest', final: true }]);
  });

  it('[R-7] an update held behind the record that throws when shown is thrown to the reader, not left unheard: the task is followed to its end', async () => {
    const surface = new ThrowingOnce();
    const { h, held } = await heldHarness(surface);
    h.agent.enqueue(firstWordsThenTheRest(300));
    const { turnId } = await h.say('t1', '1.0', 'hello');
    await held.asked;
    await untilEvent(h, () => artifactEvents(h, turnId) === 1, 5_000);
    // Shown from the write's callback while the stream is quiet: it throws there.
    held.open();
    expect(await untilEvent(h, (e) => e.type === 'turn.settled' && e.turnId === turnId)).toMatchObject({
      outcome: 'completed',
    });
    expect(surface.thrown).toBe(1);
    expect(h.events.some((e) => e.type === 'stream.lost' && e.turnId === turnId)).toBe(true);
    expect(answers(h)).toMatchObject([{ text: 'first words, then the rest', final: true }]);
  });
});
