import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type Clock, systemClock } from '../../src/core/clock.js';
import type { EngineEvent } from '../../src/core/events.js';
import { SessionEngine } from '../../src/core/session/engine.js';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { startPostgres, type TestPostgres } from '../../testkit/postgres.js';
import { FAST_TIMINGS, type Harness, startHarness } from '../helpers/engine-harness.js';
import { FakeSurface } from '../helpers/fake-surface.js';
import { quietWindow } from '../helpers/quiet-window.js';
import { answer, script } from '../peers/contract-agent/contract-agent.js';
import { settledTurn } from './stages.js';
import { startTcpProxy, type TcpProxy } from './tcp-proxy.js';

/**
 * Fault matrix: PostgreSQL, the store of several replicas, misbehaving under a live engine —
 * restarted mid-turn, one replica cut off from it (a network partition), replicas whose clocks
 * disagree. What must hold: every turn completes once, every answer is shown once and exactly,
 * a replica that lost its leases stops driving those sessions, and none is taken from a live
 * replica.
 */

const CHUNKS = Array.from({ length: 8 }, (_, i) => `part ${i} `);
const SLOW = (chunkDelayMs = 120) => answer({ chunks: CHUNKS, chunkDelayMs });
const TIMINGS = { ...FAST_TIMINGS, leaseTtlMs: 600, scanIntervalMs: 100, giveUpAfterMs: 60_000 };

let schemas = 0;
const schema = () => `faults_${process.pid}_${++schemas}`;

describe('PostgreSQL faults under a live engine', () => {
  let pg: TestPostgres;
  const cleanups: Array<() => Promise<unknown>> = [];
  beforeAll(async () => {
    // Durable: the restart is a crash, and real PostgreSQL keeps what it acknowledged.
    pg = await startPostgres({ durable: true });
  });
  afterAll(async () => pg?.stop());
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
  });

  async function replica(options: {
    name: string;
    url?: string;
    schemaName: string;
    clock?: Clock;
    surface?: FakeSurface;
    /** The client's bound on a silent stream (the harness's default: 2 s). */
    streamIdleMs?: number;
  }): Promise<Harness> {
    // The schema is made first with the default timeouts: on a loaded machine a migration's DDL
    // (fsynced, the cluster is durable) can outlast the short query timeout below, which is there
    // so that a partitioned replica notices quickly. The replica's own migrate then finds it done.
    const maker = new PostgresStore({
      connectionString: pg.connectionString,
      schema: options.schemaName,
    });
    await maker.migrate().finally(() => maker.close());
    const store = new PostgresStore({
      connectionString: options.url ?? pg.connectionString,
      schema: options.schemaName,
      timeouts: { queryMs: 1_500, connectMs: 1_000 },
    });
    const h = await startHarness({
      version: '1.0',
      store,
      owner: options.name,
      agent: { workOn: true },
      timings: TIMINGS,
      ...(options.streamIdleMs === undefined
        ? {}
        : { client: { timeouts: { streamIdleMs: options.streamIdleMs } } }),
      ...(options.clock === undefined ? {} : { clock: options.clock }),
      ...(options.surface === undefined ? {} : { surface: options.surface }),
    });
    cleanups.push(() => h.close());
    return h;
  }

  /** A second engine on the first one's agent, client, surface and events: another replica. */
  async function peer(
    first: Harness,
    name: string,
    store: PostgresStore,
    clock: Clock = systemClock,
  ): Promise<{ engine: SessionEngine; events: EngineEvent[] }> {
    await store.migrate();
    const events: EngineEvent[] = [];
    const engine = new SessionEngine({
      store,
      registry: first.registry,
      surface: first.surface,
      events: {
        emit: (e) => {
          events.push(e);
          first.events.push(e);
        },
      },
      timings: TIMINGS,
      owner: name,
      clock,
    });
    await engine.start();
    cleanups.push(async () => {
      await engine.stop();
      await store.close();
    });
    return { engine, events };
  }

  async function turns(h: Harness, n: number, chunkDelayMs?: number) {
    for (let i = 0; i < n; i++) h.agent.enqueueFor('SendStreamingMessage', SLOW(chunkDelayMs));
    return Promise.all(Array.from({ length: n }, (_, i) => h.say(`t${i}`, '1.0', `question ${i}`)));
  }

  function answeredOnce(h: Harness, said: Array<{ sessionId: string; turnId: string }>): void {
    for (const { sessionId, turnId } of said) {
      expect(h.agent.runs.get(turnId), `runs of ${turnId}`).toBe(1);
      const shown = h.surface.of(sessionId, 'answer');
      expect(shown, `answers of ${turnId}`).toHaveLength(1);
      expect(shown[0]?.final).toBe(true);
      expect(shown[0]?.text).toBe(CHUNKS.join(''));
    }
  }

  async function accepted(h: Harness, said: Array<{ turnId: string }>): Promise<void> {
    await h.surface.waitFor(
      () => said.every((s) => h.events.some((e) => e.type === 'turn.accepted' && e.turnId === s.turnId)),
      10_000,
      'every turn to be accepted',
    );
  }

  it('[M-2][M-3] restarted mid-turn: the engine waits for it, then finishes every turn once', async () => {
    const h = await replica({ name: 'replica-a', schemaName: schema() });
    const said = await turns(h, 3);
    await accepted(h, said);
    await pg.restart(800);
    for (const s of said) await settledTurn(h, s.turnId, 30_000);
    answeredOnce(h, said);
    expect(h.surface.messages.filter((m) => m.kind === 'notice')).toEqual([]);
  });

  it('[M-2] a replica cut off from PostgreSQL: its leases expire, the other takes over, and it writes nothing when it comes back', async () => {
    const name = schema();
    const proxy: TcpProxy = await startTcpProxy({ host: pg.host, port: pg.port }, 'postgresql');
    cleanups.push(() => proxy.close());
    // The partitioned replica may have shown an answer whose ref it could not record: replica B
    // finds that message by its turn, as the Slack surface does by its metadata.
    const a = await replica({
      name: 'replica-a',
      url: `postgresql://postgres@127.0.0.1:${proxy.port}/kourier`,
      schemaName: name,
      surface: new FakeSurface({ relinkByTurn: true }),
    });
    const b = await peer(
      a,
      'replica-b',
      new PostgresStore({ connectionString: pg.connectionString, schema: name }),
    );
    // Answers that take about 3 s: long enough to see whether replica A stops in time.
    const said = await turns(a, 3, 400);
    await accepted(a, said);
    const sendsBefore = a.agent.rpc('SendStreamingMessage').length;
    proxy.mode('partition');
    const cutAt = Date.now();
    for (const s of said) await settledTurn(a, s.turnId, 30_000);
    // Replica B finished them, following the tasks: nothing was sent again.
    expect(b.events.filter((e) => e.type === 'turn.settled')).toHaveLength(3);
    // Replica A stopped driving them once it could not renew its leases for a lease's length,
    // well before its answers would have ended: it did not keep streaming them to the chat.
    const fromB = new Set(b.events);
    const lastOfA = a.events.filter((e) => !fromB.has(e) && e.type === 'agent.event').at(-1);
    expect((lastOfA?.at ?? 0) - cutAt).toBeLessThan(TIMINGS.leaseTtlMs + 900);
    expect(a.agent.rpc('SendStreamingMessage')).toHaveLength(sendsBefore);
    const reader = new PostgresStore({ connectionString: pg.connectionString, schema: name });
    cleanups.push(() => reader.close());
    const before = await Promise.all(said.map((s) => reader.getSession(s.sessionId)));
    proxy.mode('pass');
    await quietWindow(
      1_500,
      'longer than a lease (600 ms) and a scan (100 ms): a replica that still wrote would have',
    );
    const after = await Promise.all(said.map((s) => reader.getSession(s.sessionId)));
    expect(after.map((s) => s?.version)).toEqual(before.map((s) => s?.version));
    answeredOnce(a, said);
  });

  it('[M-2] replicas whose clocks are an hour apart either way take no session from a live replica', async () => {
    const name = schema();
    const behind: Clock = { now: () => Date.now() - 3_600_000, sleep: systemClock.sleep };
    const ahead: Clock = { now: () => Date.now() + 3_600_000, sleep: systemClock.sleep };
    const a = await replica({ name: 'replica-slow-clock', schemaName: name, clock: behind });
    const b = await peer(
      a,
      'replica-fast-clock',
      new PostgresStore({ connectionString: pg.connectionString, schema: name }),
      ahead,
    );
    const said = await turns(a, 3);
    for (const s of said) await settledTurn(a, s.turnId, 30_000);
    // Every session was driven by the replica that took its message, from start to end.
    const ids = new Set(said.map((s) => s.sessionId));
    expect(b.events.filter((e) => ids.has(e.sessionId))).toEqual([]);
    answeredOnce(a, said);
  });

  it('[M-4][T-4] a stop taken by the replica that does not drive the thread, from an agent that keeps its stream open after the cancel: settled at once, once', async () => {
    const name = schema();
    // The stream's idle bound is far beyond the wait below: only the cancel's answer ends it.
    const a = await replica({ name: 'replica-driving', schemaName: name, streamIdleMs: 120_000 });
    const b = await peer(
      a,
      'replica-stopping',
      new PostgresStore({ connectionString: pg.connectionString, schema: name }),
    );
    a.agent.enqueueFor(
      'SendStreamingMessage',
      script([{ event: 'task' }, { event: 'chunk', text: 'started: ' }], 'hang'),
    );
    const said = await a.say('t-stop', '1.0', 'a long job');
    await accepted(a, [said]);
    await a.surface.waitFor(
      () => a.surface.of(said.sessionId, 'answer').some((m) => m.text === 'started: '),
      10_000,
      'the partial answer',
    );
    const result = await b.engine.cancel(a.key('t-stop'), { actor: { id: 'U123' } });
    expect(result).toMatchObject({ status: 'canceled', turnId: said.turnId });
    const settled = await settledTurn(a, said.turnId, 5_000);
    expect(settled).toMatchObject({ outcome: 'canceled' });
    await a.engine.idle();
    await b.engine.idle();
    expect(a.events.filter((e) => e.type === 'turn.settled' && e.turnId === said.turnId)).toHaveLength(1);
    expect(a.surface.notices(said.sessionId)).toEqual(['task-canceled']);
    const shown = a.surface.of(said.sessionId, 'answer');
    expect(shown).toHaveLength(1);
    expect(shown[0]).toMatchObject({ text: 'started: ', final: true });
  });
});
