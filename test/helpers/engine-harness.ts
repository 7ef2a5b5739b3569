import { A2AClient } from '../../src/a2a/client.js';
import type { Limits, Timeouts } from '../../src/a2a/options.js';
import type { EngineEvent } from '../../src/core/events.js';
import type { AgentRegistry, AgentRoute, BindingSettings, Clock, Dialect } from '../../src/core/ports.js';
import { type Inbound, SessionEngine } from '../../src/core/session/engine.js';
import type { EngineTimings } from '../../src/core/session/timings.js';
import type { SessionKey, SessionStore } from '../../src/core/store.js';
import { a2aDialect } from '../../src/dialects/a2a.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { type ContractAgent, startContractAgent, type WireVersion } from '../agents/contract-agent.js';
import { FakeSurface } from './fake-surface.js';

export const BINDING = 'team-a/support';

/** Contract timings shrunk to milliseconds: the same rules, run fast. */
export const FAST_TIMINGS: Partial<EngineTimings> = {
  retryBaseMs: 10,
  retryMaxMs: 80,
  giveUpAfterMs: 1_500,
  busyNoticeAfterMs: 150,
  settleDelayMs: 60,
  noSignOfLifeMs: 5_000,
  cancelAttempts: 3,
  leaseTtlMs: 2_000,
  scanIntervalMs: 200,
};

export class MapRegistry implements AgentRegistry {
  readonly routes = new Map<string, AgentRoute>();
  resolve(binding: string): AgentRoute | undefined {
    return this.routes.get(binding);
  }
}

export interface Harness {
  agent: ContractAgent;
  client: A2AClient;
  store: SessionStore;
  surface: FakeSurface;
  registry: MapRegistry;
  engine: SessionEngine;
  events: EngineEvent[];
  /** A person's message in thread `thread` (chat message id `ts`). */
  say(
    thread: string,
    ts: string,
    text: string,
    options?: { addressed?: boolean },
  ): Promise<{ sessionId: string; turnId: string; duplicate: boolean }>;
  key(thread: string): SessionKey;
  close(): Promise<void>;
}

export interface HarnessOptions {
  version: WireVersion;
  settings?: Partial<BindingSettings>;
  timings?: Partial<EngineTimings>;
  dialect?: Dialect;
  store?: SessionStore;
  dedupe?: boolean;
  streamIdleMs?: number;
  /** The client's other bounds (body idle, call totals), for tests of slow agents. */
  clientTimeouts?: Partial<Timeouts>;
  clientLimits?: Partial<Limits>;
  /** Where the client calls, when not the contract agent (an address that does not resolve). */
  endpoint?: string;
  /** The agent keeps working on a task its client left (as SDK agents do). */
  workOn?: boolean;
  /** This replica's name in session leases. */
  owner?: string;
  clock?: Clock;
  surface?: FakeSurface;
}

export async function startHarness(options: HarnessOptions): Promise<Harness> {
  const agent = await startContractAgent({
    version: options.version,
    dedupe: options.dedupe ?? true,
    workOn: options.workOn ?? false,
  });
  const client = new A2AClient({
    endpoint: options.endpoint ?? agent.endpoint,
    ...(options.clientLimits === undefined ? {} : { limits: options.clientLimits }),
    identity: { kind: 'bearer', token: 'binding-token' },
    timeouts: { headersMs: 2_000, streamIdleMs: options.streamIdleMs ?? 2_000, ...options.clientTimeouts },
  });
  const store = options.store ?? new SqliteStore(':memory:');
  await store.migrate();
  const surface = options.surface ?? new FakeSurface();
  const registry = new MapRegistry();
  registry.routes.set(BINDING, {
    client,
    dialect: options.dialect ?? a2aDialect,
    settings: { questionTimeoutMs: null, ...options.settings },
  });
  const events: EngineEvent[] = [];
  const engine = new SessionEngine({
    store,
    registry,
    surface,
    events: { emit: (e) => events.push(e) },
    timings: { ...FAST_TIMINGS, ...options.timings },
    ...(options.owner === undefined ? {} : { owner: options.owner }),
    ...(options.clock === undefined ? {} : { clock: options.clock }),
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
    client,
    store,
    surface,
    registry,
    engine,
    events,
    key,
    say: (thread, ts, text, o = {}) => {
      const input: Inbound = {
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
        addressed: o.addressed ?? true,
      };
      return engine.receive(input);
    },
    close: async () => {
      await engine.stop();
      await agent.close();
      await store.close();
    },
  };
}
