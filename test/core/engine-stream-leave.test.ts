import { afterEach, describe, expect, it } from 'vitest';
import type { StreamEvent } from '../../src/core/agent/model.js';
import type { AgentClient } from '../../src/core/ports.js';
import type { Commit, SessionStore } from '../../src/core/store.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { BINDING, type Harness, startHarness, untilEvent } from '../helpers/engine-harness.js';
import { answer, script } from '../peers/contract-agent/behaviours.js';

/**
 * The engine reads a stream by hand (held events first, `next()` when none is held), not with
 * `for await`, so what `for await` did on leaving is its own to do: a stream it leaves early,
 * on a settled task or on an error of its own, is told with `return()`, which ends the call
 * (its report and span, its connection drained or closed).
 */

/**
 * `target` with some of its methods replaced; the others are called on `target` itself (the
 * client's streams keep private fields, which a call through a proxy could not reach).
 */
function overriding<T extends object>(target: T, overrides: Partial<T>): T {
  return new Proxy(target, {
    get(t, prop) {
      if (Object.hasOwn(overrides, prop)) return (overrides as Record<PropertyKey, unknown>)[prop];
      const value: unknown = Reflect.get(t, prop, t);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(t) : value;
    },
  });
}

/** The store, whose first write that records a task fails (the accept write of R-7). */
function failingFirstAccept(store: SessionStore): SessionStore {
  let failed = false;
  return overriding(store, {
    commit: (commit: Commit) => {
      if (!failed && commit.session?.task != null) {
        failed = true;
        return Promise.reject(new Error('the disk is full'));
      }
      return store.commit(commit);
    },
  });
}

/** The route's client, its streams watched: every `return()` the engine calls is counted. */
function watchStreams(h: Harness): { returned: number; opened: number } {
  const seen = { returned: 0, opened: 0 };
  const route = h.registry.routes.get(BINDING);
  if (route === undefined) throw new Error('no route');
  const inner = route.client;
  const watched = (stream: AsyncGenerator<StreamEvent>) =>
    overriding(stream, {
      return: (v: undefined) => {
        seen.returned++;
        return stream.return(v);
      },
    });
  const client = overriding(inner, {
    sendStreamingMessage: (...args: Parameters<AgentClient['sendStreamingMessage']>) => {
      seen.opened++;
      return watched(inner.sendStreamingMessage(...args));
    },
  });
  h.registry.routes.set(BINDING, { ...route, client });
  return seen;
}

describe('a stream the engine leaves early', () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  it('is returned when the engine leaves on an error of its own (the accept write failed), and the turn still settles', async () => {
    const h = await startHarness({ version: '1.0', store: failingFirstAccept(new SqliteStore(':memory:')) });
    cleanups.push(() => h.close());
    const seen = watchStreams(h);
    // A slow answer: the write fails while most of the stream is still to come.
    h.agent.enqueue(answer({ chunks: ['a', 'b', 'c', 'd'], chunkDelayMs: 30 }));
    const { turnId } = await h.say('t1', '1.0', 'hello');
    await untilEvent(h, (e) => e.type === 'turn.settled' && e.turnId === turnId);
    expect(seen.opened).toBe(1);
    expect(seen.returned).toBe(1);
  });

  it('is returned when the engine leaves on a settled task the agent sent before ending its stream', async () => {
    const h = await startHarness({ version: '1.0' });
    cleanups.push(() => h.close());
    const seen = watchStreams(h);
    // The full Task after the final status, then the agent keeps the stream open.
    h.agent.enqueue(
      script([{ event: 'chunk', text: 'done' }, { event: 'completed' }, { event: 'task' }], 'hang'),
    );
    const { turnId } = await h.say('t1', '1.0', 'hello');
    expect(await untilEvent(h, (e) => e.type === 'turn.settled' && e.turnId === turnId)).toMatchObject({
      outcome: 'completed',
    });
    expect(seen.opened).toBe(1);
    expect(seen.returned).toBe(1);
  });

  it('is not returned when it ended on its own', async () => {
    const h = await startHarness({ version: '1.0' });
    cleanups.push(() => h.close());
    const seen = watchStreams(h);
    h.agent.enqueue(answer({ chunks: ['a', 'b'], final: 'status-only' }));
    const { turnId } = await h.say('t1', '1.0', 'hello');
    await untilEvent(h, (e) => e.type === 'turn.settled' && e.turnId === turnId);
    expect(seen.opened).toBe(1);
    expect(seen.returned).toBe(0);
  });
});
