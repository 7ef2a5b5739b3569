import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { A2AClient } from '../../src/a2a/client.js';
import { SessionEngine } from '../../src/core/session/engine.js';
import { a2aDialect } from '../../src/dialects/a2a.js';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { startPostgres, type TestPostgres } from '../../testkit/postgres.js';
import { FAST_TIMINGS, MapRegistry } from '../helpers/engine-harness.js';
import { FakeSurface } from '../helpers/fake-surface.js';
import { type ContractAgent, startContractAgent } from '../peers/contract-agent/contract-agent.js';
import { BINDING, notification, startTriggerHarness, type TriggerHarness, until } from './harness.js';

/**
 * Two replicas — each its own PostgreSQL pool, session engine and trigger worker, one shared
 * database and agent — given the same Alertmanager notifications (as a retried or a duplicated
 * delivery lands on either): one thread, one agent run per alert.
 */

const PATH = `/triggers/${BINDING}/alerts`;

describe('trigger deliveries on two replicas of one PostgreSQL', () => {
  let server: TestPostgres | undefined;
  let agent: ContractAgent | undefined;
  const open: Array<() => Promise<void>> = [];

  beforeAll(async () => {
    server = await startPostgres();
    agent = await startContractAgent({ version: '1.0' });
  }, 60_000);
  afterAll(async () => {
    await agent?.close();
    await server?.stop();
  });
  afterEach(async () => {
    for (const close of open.splice(0).reverse()) await close();
  });

  async function replica(
    schema: string,
    owner: string,
  ): Promise<{ harness: TriggerHarness; surface: FakeSurface }> {
    const store = new PostgresStore({ connectionString: server?.connectionString ?? '', schema });
    open.push(() => store.close());
    await store.migrate();
    const registry = new MapRegistry();
    registry.routes.set(BINDING, {
      client: new A2AClient({
        endpoint: agent?.endpoint ?? '',
        identity: { kind: 'user-id', userId: 'replicas' },
      }),
      dialect: a2aDialect,
      settings: { questionTimeoutMs: null },
    });
    const surface = new FakeSurface();
    const engine = new SessionEngine({ store, registry, surface, owner, timings: FAST_TIMINGS });
    await engine.start();
    open.push(() => engine.stop());
    const harness = await startTriggerHarness(store.triggers(), { owner, extra: { engine } });
    open.push(() => harness.close());
    return { harness, surface };
  }

  it('opens one thread and runs the agent once per alert, whichever replica gets which delivery', async () => {
    const schema = `trig_replicas_${process.pid}`;
    const a = await replica(schema, 'replica-a');
    const b = await replica(schema, 'replica-b');
    const sends = () => agent?.rpc('SendStreamingMessage').length ?? 0;
    const before = sends();
    const first = notification('{}:{alertname="HighCPU"}', [{ fingerprint: 'web-1' }]);
    // The same notification five times to each, at once: a retry, a duplicate, HA Alertmanagers.
    const answers = await Promise.all(
      Array.from({ length: 10 }, (_, i) => (i % 2 === 0 ? a : b).harness.post(PATH, first)),
    );
    expect(answers.map((r) => r.status)).toStrictEqual(Array(10).fill(200));
    expect(answers.map((r) => (r.json as { outcome: string }).outcome).sort()).toStrictEqual([
      ...Array(9).fill('duplicate'),
      'opened',
    ]);
    await until('the first run', () => sends() === before + 1, 15_000);
    // A new alert in the group, to the other replicas: a second run, in the same thread.
    const more = notification('{}:{alertname="HighCPU"}', [
      { fingerprint: 'web-1' },
      { fingerprint: 'web-2' },
    ]);
    await Promise.all([a.harness.post(PATH, more), b.harness.post(PATH, more), b.harness.post(PATH, more)]);
    await until('the second run', () => sends() === before + 2, 15_000);
    await Promise.all([a.harness.triggers.worker.idle(), b.harness.triggers.worker.idle()]);
    await new Promise((r) => setTimeout(r, 300));
    expect(sends()).toBe(before + 2);
    const roots = [...a.harness.chat.roots(), ...b.harness.chat.roots()];
    expect(roots).toHaveLength(1);
    const runs = agent?.rpc('SendStreamingMessage').slice(before) ?? [];
    expect(runs).toHaveLength(2);
    const contextOf = (i: number): string | undefined =>
      (runs[i]?.body as { params: { message: { contextId?: string } } } | undefined)?.params.message
        .contextId;
    // The second run continues the first one's context: the same thread, the same session.
    expect(contextOf(0)).toBeUndefined();
    expect(contextOf(1)).toBeDefined();
    const shown = [...a.surface.messages, ...b.surface.messages].filter(
      (m) => m.kind === 'answer' && m.final,
    );
    expect(new Set(shown.map((m) => m.sessionId)).size).toBe(1);
  }, 60_000);
});
