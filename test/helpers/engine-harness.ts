import { A2AClient } from '../../src/a2a/client.js';
import type { AssertionSource, Identity, Limits, Timeouts } from '../../src/a2a/options.js';
import type { Clock } from '../../src/core/clock.js';
import type { Actor } from '../../src/core/compose.js';
import type { EngineEvent } from '../../src/core/events.js';
import type {
  AgentRegistry,
  AgentRoute,
  BindingSettings,
  Dialect,
  StructuredReply,
} from '../../src/core/ports.js';
import type { ForgottenMarks } from '../../src/core/retention-store.js';
import { type Inbound, SessionEngine } from '../../src/core/session/engine.js';
import type { EngineTimings } from '../../src/core/session/timings.js';
import type { SessionKey, SessionStore } from '../../src/core/store.js';
import { a2aDialect } from '../../src/dialects/a2a.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import {
  type ContractAgent,
  type ContractAgentOptions,
  startContractAgent,
  type WireVersion,
} from '../peers/contract-agent/contract-agent.js';
import { FakeSurface } from './fake-surface.js';

/**
 * The session engine on an in-memory store, one Binding routed to the contract agent through a
 * real A2A client, and a fake chat surface that records what the engine shows. The agent's and
 * the client's options shape it (a kagent runtime at its path, say: ../dialects/kagent-harness.ts).
 */

export const BINDING = 'team-a/support';

/** The person who answers questions when a test names nobody else. */
export const APPROVER: Actor = {
  id: 'U777',
  name: 'Grace',
  email: 'grace@example.com',
  label: '[Test: Grace (U777) <grace@example.com>]',
};

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
    options?: { addressed?: boolean; actor?: Actor },
  ): Promise<{ sessionId: string; turnId: string; duplicate: boolean }>;
  /** Answers the thread's pending question with a person's reply (default actor: APPROVER). */
  answer(
    thread: string,
    questionKey: string,
    reply: StructuredReply,
    actor?: Actor,
  ): ReturnType<SessionEngine['answer']>;
  key(thread: string): SessionKey;
  close(): Promise<void>;
}

/** The A2A client of the Binding: where it calls, as whom, and its bounds. */
export interface HarnessClientOptions {
  /** Default: the contract agent's endpoint; a function builds it from the agent (a path below it). */
  endpoint?: string | ((agent: ContractAgent) => string);
  /** Default: a bearer token. */
  identity?: Identity;
  /** Signs a per-person identity's assertions. */
  assertions?: AssertionSource;
  extensions?: readonly string[];
  /** Over the harness's 2 s header and stream idle bounds (body idle, call totals: slow agents). */
  timeouts?: Partial<Timeouts>;
  limits?: Partial<Limits>;
  /** P-1: the backend opted into polling (set by `settings.polling` unless given). */
  polling?: boolean;
}

export interface HarnessOptions {
  version: WireVersion;
  /** The contract agent's own options; by default it drops a repeated messageId and stops where its client left. */
  agent?: Omit<ContractAgentOptions, 'version'>;
  client?: HarnessClientOptions;
  settings?: Partial<BindingSettings>;
  timings?: Partial<EngineTimings>;
  dialect?: Dialect;
  store?: SessionStore;
  /** Threads the retention sweep forgot (the engine's `forgotten`). */
  forgotten?: ForgottenMarks;
  /** This replica's name in session leases. */
  owner?: string;
  clock?: Clock;
  surface?: FakeSurface;
  /** Whether the harness's event sink asks for `agent.event` (EventSink.agentEvents); default true. */
  agentEvents?: boolean;
}

export async function startHarness(options: HarnessOptions): Promise<Harness> {
  const agent = await startContractAgent({
    dedupe: true,
    workOn: false,
    ...options.agent,
    version: options.version,
  });
  const c = options.client ?? {};
  const client = new A2AClient({
    endpoint: typeof c.endpoint === 'function' ? c.endpoint(agent) : (c.endpoint ?? agent.endpoint),
    ...(c.limits === undefined ? {} : { limits: c.limits }),
    identity: c.identity ?? { kind: 'bearer', token: 'binding-token' },
    ...(c.assertions === undefined ? {} : { assertions: c.assertions }),
    ...(c.extensions === undefined ? {} : { extensions: c.extensions }),
    ...((c.polling ?? options.settings?.polling !== undefined) ? { polling: true } : {}),
    timeouts: { headersMs: 2_000, streamIdleMs: 2_000, ...c.timeouts },
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
    events: { agentEvents: options.agentEvents ?? true, emit: (e) => events.push(e) },
    timings: { ...FAST_TIMINGS, ...options.timings },
    ...(options.forgotten === undefined ? {} : { forgotten: options.forgotten }),
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
        actor: o.actor ?? {
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
    answer: (thread, questionKey, reply, actor = APPROVER) =>
      engine.answer({ key: key(thread), binding: BINDING, questionKey, actor, reply }),
    close: async () => {
      await engine.stop();
      await agent.close();
      await store.close();
    },
  };
}

/** A message as the agent received it in a send: the fields the tests read. */
export interface SentMessage {
  messageId: string;
  contextId?: string;
  taskId?: string;
  role?: string;
  parts: Array<Record<string, unknown>>;
  extensions?: string[];
  metadata?: Record<string, unknown>;
}

/** The message of every send the agent received (`sendMethod`: the streaming send of its version). */
export function sentMessages(h: Pick<Harness, 'agent'>, sendMethod: string): SentMessage[] {
  return h.agent.rpc(sendMethod).map((r) => (r.body as { params: { message: SentMessage } }).params.message);
}

/** The text of a sent message's first part ('' when it has none). */
export function sentText(m: SentMessage | undefined): string {
  const part = m?.parts[0];
  return typeof part?.text === 'string' ? part.text : '';
}

/** The first engine event `found` accepts, waited for (polled every 10 ms) up to `ms`. */
export async function untilEvent(
  h: Pick<Harness, 'events'>,
  found: (e: EngineEvent) => boolean,
  ms = 10_000,
): Promise<EngineEvent> {
  const deadline = Date.now() + ms;
  for (;;) {
    const event = h.events.find(found);
    if (event !== undefined) return event;
    if (Date.now() > deadline) throw new Error('the event did not come');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
