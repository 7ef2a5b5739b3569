import { afterEach, describe, expect, it } from 'vitest';
import { A2AClient } from '../../src/a2a/client.js';
import { SessionEngine } from '../../src/core/session/engine.js';
import type { SessionKey } from '../../src/core/store.js';
import { a2aDialect } from '../../src/dialects/a2a.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { BINDING, FAST_TIMINGS, MapRegistry } from '../helpers/engine-harness.js';
import { FakeSurface } from '../helpers/fake-surface.js';
import { quietWindow } from '../helpers/quiet-window.js';
import { startContractAgent } from '../peers/contract-agent/contract-agent.js';

/**
 * SQLite that says it is shared, so two engines in one process use session leases on it as
 * two replicas on PostgreSQL do. The lease SQL is the store's own either way; only the flag
 * the engine reads differs.
 */
function sharedSqlite(): SqliteStore {
  const store = new SqliteStore(':memory:');
  Object.defineProperty(store, 'sharedByReplicas', { value: true });
  return store;
}

const CHUNKS = Array.from({ length: 12 }, (_, i) => `part ${i} `);
/** Far longer than the test may take: a successor that waited for expiry would time out. */
const LEASE_TTL_MS = 120_000;

const key = (thread: string): SessionKey => ({
  surface: 'test',
  workspaceId: 'T1',
  channelId: 'C1',
  threadId: thread,
});

async function until<T>(what: string, probe: () => Promise<T | undefined>, ms = 10_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('SessionEngine.stop (SIGTERM drain)', () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  it('stops starting turns, cuts the stream after its writes, releases the session lease: a successor follows the task at once', async () => {
    const agent = await startContractAgent({
      version: '1.0',
      defaultAnswer: { chunks: CHUNKS, chunkDelayMs: 150 },
      workOn: true,
    });
    cleanups.push(() => agent.close());
    const store = sharedSqlite();
    await store.migrate();
    cleanups.push(() => store.close());
    const surface = new FakeSurface();
    const registry = new MapRegistry();
    registry.routes.set(BINDING, {
      client: new A2AClient({
        endpoint: agent.endpoint,
        identity: { kind: 'bearer', token: 'binding-token' },
        timeouts: { headersMs: 2_000, streamIdleMs: 2_000 },
      }),
      dialect: a2aDialect,
      settings: { questionTimeoutMs: null },
    });
    const engine = (owner: string) =>
      new SessionEngine({
        store,
        registry,
        surface,
        owner,
        timings: { ...FAST_TIMINGS, leaseTtlMs: LEASE_TTL_MS, scanIntervalMs: 100 },
      });
    const say = (e: SessionEngine, thread: string, ts: string) =>
      e.receive({
        kind: 'person',
        key: key(thread),
        binding: BINDING,
        chatMessageId: ts,
        actor: { id: 'U1', name: 'Ada', label: '[Test: Ada (U1)]' },
        text: `question in ${thread}`,
        addressed: true,
      });

    const a = engine('replica-a');
    await a.start();
    const first = await say(a, 't1', '1.0');
    await until('the turn to be accepted and streaming', async () => {
      const turn = await store.getTurn(first.turnId);
      const shown = surface.messages.find((m) => m.turnId === first.turnId);
      return turn?.state === 'accepted' && (shown?.updates ?? 0) > 0 ? true : undefined;
    });

    await a.stop();
    // Nothing was lost: the turn is still accepted, with its task, for whoever follows it.
    const cut = await store.getTurn(first.turnId);
    expect(cut?.state).toBe('accepted');
    expect(cut?.taskId).not.toBeNull();
    expect(surface.messages.find((m) => m.turnId === first.turnId)?.final).toBeUndefined();
    // A stopped engine starts no turn: a message it receives now is stored, not sent.
    const sendsAtStop = agent.rpc('SendStreamingMessage').length;
    const second = await say(a, 't2', '2.0');
    expect(second.duplicate).toBe(false);
    // A stopped engine has no driver left: nothing it holds can send.
    await a.idle();
    await quietWindow(
      300,
      'longer than a scan would take to start a driver: a stopped engine must start none',
    );
    expect(agent.rpc('SendStreamingMessage')).toHaveLength(sendsAtStop);
    expect((await store.getTurn(second.turnId))?.state).toBe('queued');

    // The successor finds both sessions free (their leases were released, not left to expire
    // in two minutes), follows the first task without sending it again, and sends the second.
    const b = engine('replica-b');
    await b.start();
    cleanups.push(() => b.stop());
    for (const turnId of [first.turnId, second.turnId]) {
      await until(`turn ${turnId} to settle on the successor`, async () =>
        (await store.getTurn(turnId))?.state === 'settled' ? true : undefined,
      );
      expect((await store.getTurn(turnId))?.outcome).toBe('completed');
    }
    expect(agent.runs.get(first.turnId)).toBe(1);
    expect(agent.rpc('SendStreamingMessage')).toHaveLength(sendsAtStop + 1);
    const answer = surface.messages.filter((m) => m.turnId === first.turnId && m.kind === 'answer');
    expect(answer).toHaveLength(1);
    expect(answer[0]?.final).toBe(true);
    expect(answer[0]?.text).toBe(CHUNKS.join(''));
  });
});
