/**
 * The engine benchmarks' memory mode, run in the child (engine-child.ts): the resident memory and
 * heap each held streaming session adds, for the bare client and for the engine.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { getHeapSpaceStatistics } from 'node:v8';
import type { A2AClient } from '../src/a2a/client.js';
import { answerAsked } from './agent-server.js';
import { EventCounter, gc, newClient, receiveAll, rig, say, tempDb } from './engine-rig.js';

/** `n` turns of `chunks` chunks read by the bare client at once; the events it saw. */
async function bareRound(client: A2AClient, n: number, chunks: number): Promise<number> {
  let events = 0;
  const streams: Promise<void>[] = [];
  for (let i = 0; i < n; i++) {
    streams.push(
      (async () => {
        for await (const _ of client.sendStreamingMessage({
          messageId: randomUUID(),
          text: answerAsked(chunks),
        }))
          events++;
      })(),
    );
  }
  await Promise.all(streams);
  return events;
}

// ---- 2. memory ----------------------------------------------------------------------------------

export function memory(): Record<string, number> {
  const m = process.memoryUsage();
  const spaces = Object.fromEntries(
    getHeapSpaceStatistics().map((s) => [s.space_name, s.space_size] as const),
  );
  return {
    rss: m.rss,
    heapUsed: m.heapUsed,
    heapTotal: m.heapTotal,
    external: m.external,
    arrayBuffers: m.arrayBuffers,
    newSpace: spaces.new_space ?? 0,
    oldSpace: spaces.old_space ?? 0,
    ...statusRss(),
  };
}

/** The kernel's split of resident memory: anonymous (heap, malloc) and file-backed (mapped files). */
function statusRss(): Record<string, number> {
  const out: Record<string, number> = { RssAnon: 0, RssFile: 0, RssShmem: 0 };
  let status = '';
  try {
    status = readFileSync('/proc/self/status', 'utf8');
  } catch {
    return out; // not Linux
  }
  for (const line of status.split('\n')) {
    const m = /^(RssAnon|RssFile|RssShmem):\s+(\d+) kB/.exec(line);
    if (m) out[m[1] as string] = Number(m[2]) * 1024;
  }
  return out;
}

/**
 * Memory as a reading under load takes it: collected, then a pause and collected again before
 * it is read. V8 returns the pages a full collection empties to the system from a background task
 * (its unmapper), so a reading right after `gc()` may still count some: in three pairs of runs
 * alternated in one sitting, 47-49 KiB per held engine session read at once against 40-45 KiB
 * after the pause, the heap figures alike.
 */
async function settledMemory(): Promise<Record<string, number>> {
  gc();
  await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
  gc();
  return memory();
}

const SETTLE_MS = 500;

/** Waits (polling) until `done()` holds; the parent's server holds the streams meanwhile. */
export async function waitUntil(done: () => boolean, what: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * Memory is read twice under load, with half the sessions held and with all of them, and the
 * figure is the difference divided by the sessions added in between: what each more session
 * costs. Read against the process before any session started instead, the figure also carried
 * what grows once, not per session, as load arrives: V8's young generation (the child runs with
 * it at a fixed size, see bench/engine-resources.ts; left to grow, its pages are touched only as allocation
 * reaches them), SQLite's page cache (bounded per connection), undici's and the allocator's pools.
 */
export async function memoryBare(
  endpoint: string,
  n: number,
  chunks: number,
  holdAfter: number,
): Promise<void> {
  const client = newClient(endpoint);
  await client.card();
  await bareRound(client, 50, 20); // warm-up
  gc();
  const before = memory();
  let events = 0;
  const text = `[chunks:${chunks}][hold-after:${holdAfter}]`;
  const streams: Promise<void>[] = [];
  const open = (count: number): void => {
    for (let i = 0; i < count; i++) {
      streams.push(
        (async () => {
          for await (const _ of client.sendStreamingMessage({ messageId: randomUUID(), text })) events++;
        })(),
      );
    }
  };
  const half = Math.floor(n / 2);
  open(half);
  // task + working + holdAfter chunks each
  await waitUntil(
    () => events >= half * (2 + holdAfter),
    'the first half of the bare streams to reach the hold',
  );
  const halfway = await settledMemory();
  open(n - half);
  await waitUntil(() => events >= n * (2 + holdAfter), 'the bare streams to reach the hold');
  const during = await settledMemory();
  say({ type: 'release' });
  await Promise.all(streams);
  gc();
  const after = memory();
  say({
    type: 'result',
    mode: 'memory',
    kind: 'bare',
    sessions: n,
    half,
    before,
    halfway,
    during,
    after,
    events,
  });
}

export async function memoryEngine(
  endpoint: string,
  n: number,
  chunks: number,
  holdAfter: number,
): Promise<void> {
  const db = tempDb();
  // With agent.event, to tell when every held stream has read up to its hold: garbage as soon as
  // counted, so not part of what a held session keeps.
  const r = await rig(endpoint, db.path, { events: new EventCounter(true) });
  try {
    await r.client.card();
    await r.engine.start();
    // Warm-up: a few whole turns, so compiled code and SQLite's first pages are in the baseline.
    await receiveAll(r.engine, 'warm', 50, '[chunks:20]');
    await r.events.until('turn.settled', 50);
    await r.engine.idle();
    r.events.reset();
    const updatesBefore = r.surface.updates;
    // `held` sessions have read every event before their hold (the task, its working status and
    // holdAfter chunks) and shown their answer: once at least, as the chunks read while the
    // task's record was on its way are shown in one update.
    const reachedHold = (held: number): boolean =>
      r.events.count('agent.event') >= held * (holdAfter + 2) && r.surface.updates - updatesBefore >= held;
    gc();
    const before = memory();
    const text = `[chunks:${chunks}][hold-after:${holdAfter}]`;
    const half = Math.floor(n / 2);
    await receiveAll(r.engine, 'held-a', half, text);
    await r.events.until('turn.accepted', half);
    await waitUntil(() => reachedHold(half), 'the first half of the sessions to reach the hold');
    const halfway = await settledMemory();
    await receiveAll(r.engine, 'held-b', n - half, text);
    await r.events.until('turn.accepted', n);
    await waitUntil(() => reachedHold(n), 'the sessions to reach the hold');
    const during = await settledMemory();
    say({ type: 'release' });
    await r.events.until('turn.settled', n);
    await r.engine.idle();
    gc();
    const after = memory();
    say({
      type: 'result',
      mode: 'memory',
      kind: 'engine',
      sessions: n,
      half,
      before,
      halfway,
      during,
      after,
      ...r.events.summary(),
    });
  } finally {
    await r.engine.stop();
    await r.store.close();
    db.remove();
  }
}
