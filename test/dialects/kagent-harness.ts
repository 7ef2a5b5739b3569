import { A2AClient } from '../../src/a2a/client.js';
import type { Actor } from '../../src/core/compose.js';
import type { EngineEvent } from '../../src/core/events.js';
import type { BindingSettings } from '../../src/core/ports.js';
import { type AnswerResult, SessionEngine } from '../../src/core/session/engine.js';
import type { EngineTimings } from '../../src/core/session/timings.js';
import type { SessionKey, SessionStore } from '../../src/core/store.js';
import { dialectSpec } from '../../src/dialects/index.js';
import type { HitlReply } from '../../src/dialects/kagent-v1/index.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import {
  type CardOptions,
  type ContractAgent,
  startContractAgent,
  type WireVersion,
} from '../agents/contract-agent.js';
import { BINDING, FAST_TIMINGS, MapRegistry } from '../helpers/engine-harness.js';
import { FakeSurface } from '../helpers/fake-surface.js';

/**
 * The engine wired the way a kagent-v1 Binding is: the endpoint and extensions come from
 * `dialectSpec('kagent-v1')` (url plus /agents/<namespace>/<name>, the HITL extension asked for
 * when the card lists it), the dialect reads kagent's payloads, and the contract agent plays a
 * kagent runtime at that path.
 */

export const AGENT = { namespace: 'team-a', name: 'k8s-agent' } as const;
export const AGENT_PATH = `/agents/${AGENT.namespace}/${AGENT.name}`;

export const APPROVER: Actor = {
  id: 'U777',
  name: 'Grace',
  email: 'grace@example.com',
  label: '[Test: Grace (U777) <grace@example.com>]',
};

export interface KagentHarness {
  agent: ContractAgent;
  store: SessionStore;
  surface: FakeSurface;
  engine: SessionEngine;
  events: EngineEvent[];
  key(thread: string): SessionKey;
  say(thread: string, ts: string, text: string): Promise<{ sessionId: string; turnId: string }>;
  /** Answers the thread's pending question with a reply built by the dialect. */
  answer(thread: string, questionKey: string, reply: HitlReply, actor?: Actor): Promise<AnswerResult>;
  close(): Promise<void>;
}

export interface KagentHarnessOptions {
  version: WireVersion;
  card?: CardOptions;
  settings?: Partial<BindingSettings>;
  timings?: Partial<EngineTimings>;
}

export async function startKagentHarness(options: KagentHarnessOptions): Promise<KagentHarness> {
  const spec = dialectSpec('kagent-v1');
  const agent = await startContractAgent({
    version: options.version,
    path: AGENT_PATH,
    card: options.card ?? { extensions: [{ uri: spec.extensions[0] ?? '' }] },
  });
  const client = new A2AClient({
    endpoint: spec.endpoint(agent.origin, AGENT),
    identity: { kind: 'user-id', userId: 'ada@example.com' },
    extensions: spec.extensions,
    timeouts: { headersMs: 2_000, streamIdleMs: 2_000 },
  });
  const store = new SqliteStore(':memory:');
  await store.migrate();
  const surface = new FakeSurface();
  const registry = new MapRegistry();
  registry.routes.set(BINDING, {
    client,
    dialect: spec.dialect,
    settings: { questionTimeoutMs: null, ...options.settings },
  });
  const events: EngineEvent[] = [];
  const engine = new SessionEngine({
    store,
    registry,
    surface,
    events: { emit: (e) => events.push(e) },
    timings: { ...FAST_TIMINGS, ...options.timings },
  });
  await engine.start();
  const key = (thread: string): SessionKey => ({
    surface: 'test',
    workspaceId: 'T1',
    channelId: 'C1',
    threadId: thread,
  });
  return {
    agent,
    store,
    surface,
    engine,
    events,
    key,
    say: (thread, ts, text) =>
      engine.receive({
        kind: 'person',
        key: key(thread),
        binding: BINDING,
        chatMessageId: ts,
        actor: {
          id: 'U123',
          name: 'Ada',
          email: 'ada@example.com',
          label: '[Test: Ada (U123) <ada@example.com>]',
        },
        text,
        addressed: true,
      }),
    answer: (thread, questionKey, reply, actor = APPROVER) =>
      engine.answer({ key: key(thread), binding: BINDING, questionKey, actor, ...reply }),
    close: async () => {
      await engine.stop();
      await agent.close();
      await store.close();
    },
  };
}
