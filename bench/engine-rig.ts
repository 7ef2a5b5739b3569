/**
 * What the engine benchmarks' child (engine-child.ts) builds its rounds from: an engine on a
 * store, wired as the composition root wires it, with a chat surface that shows nothing and a
 * sink that counts events; the inbound messages, the temporary database, and the small helpers
 * every mode shares (the JSON lines to the parent, forced collections, CPU time).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { trace } from '@opentelemetry/api';
import { A2AClient } from '../src/a2a/client.js';
import type { AnswerView } from '../src/core/answer.js';
import type { EngineEvent } from '../src/core/events.js';
import type {
  AgentRegistry,
  AgentRoute,
  AnswerSink,
  ChatSurface,
  ChatTarget,
  Notice,
  QuestionPrompt,
  ToolStep,
} from '../src/core/ports.js';
import { type Inbound, SessionEngine } from '../src/core/session/engine.js';
import type { SessionStore } from '../src/core/store.js';
import { a2aDialect } from '../src/dialects/a2a.js';
import { OtelTurnTracer } from '../src/observability/turn-tracer.js';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.js';

export const BINDING = 'bench/agent';

export function say(message: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify(message)}\n`);
}

export function gc(): void {
  const collect = (globalThis as { gc?: () => void }).gc;
  if (collect === undefined) throw new Error('run with --expose-gc');
  collect();
  collect();
}

/**
 * A chat surface that shows nothing: O(1) per update (never joins the answer text). Like a real
 * surface it reports the ref of the answer message it "posted", once, on the first update.
 */
export class NullSurface implements ChatSurface {
  updates = 0;
  finished = 0;
  readonly notices = new Map<string, number>();
  /** Called on a turn's first update (the latency benchmark reads its stamp there). */
  onFirstUpdate: ((view: AnswerView) => void) | undefined;

  openAnswer(
    _target: ChatTarget,
    turnId: string,
    ref: string | null,
    onRef: (ref: string) => void,
  ): AnswerSink {
    let posted = ref !== null;
    return {
      update: (view: AnswerView) => {
        this.updates++;
        if (!posted) {
          posted = true;
          this.onFirstUpdate?.(view);
          onRef(`answer:${turnId}`);
        }
      },
      finish: async (_view: AnswerView) => {
        this.finished++;
      },
    };
  }

  async postNotice(_target: ChatTarget, notice: Notice): Promise<void> {
    this.notices.set(notice.kind, (this.notices.get(notice.kind) ?? 0) + 1);
  }

  async askQuestion(_target: ChatTarget, _prompt: QuestionPrompt): Promise<string | null> {
    return null;
  }

  async showToolStep(_target: ChatTarget, _turnId: string, _step: ToolStep): Promise<void> {}
}

/**
 * Counts engine events by type and wakes whoever waits for a count. `agent.event`, one per
 * stream event, only when asked (`agentEvents`): the broker's own sinks do not take them, so
 * the engine builds none for them, and the timed modes measure that.
 */
export class EventCounter {
  readonly agentEvents: boolean;
  readonly counts = new Map<string, number>();
  readonly outcomes = new Map<string, number>();
  answerChars = 0;
  readonly #waiters: Array<{ type: string; n: number; resolve: () => void }> = [];

  constructor(agentEvents = false) {
    this.agentEvents = agentEvents;
  }

  emit(event: EngineEvent): void {
    const n = (this.counts.get(event.type) ?? 0) + 1;
    this.counts.set(event.type, n);
    if (event.type === 'turn.settled') {
      this.outcomes.set(event.outcome, (this.outcomes.get(event.outcome) ?? 0) + 1);
      this.answerChars += event.answerLength;
    }
    // Called for every agent event: allocates nothing unless a waiter is woken (the broker's
    // CPU is what the benchmarks time, and a new array per event was the harness's, not its).
    for (let i = this.#waiters.length - 1; i >= 0; i--) {
      const w = this.#waiters[i];
      if (w !== undefined && w.type === event.type && n >= w.n) {
        this.#waiters.splice(i, 1);
        w.resolve();
      }
    }
  }

  count(type: string): number {
    return this.counts.get(type) ?? 0;
  }

  /** Resolves once `n` events of `type` have been seen in all. */
  until(type: string, n: number): Promise<void> {
    if (this.count(type) >= n) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.push({ type, n, resolve }));
  }

  reset(): void {
    this.counts.clear();
    this.outcomes.clear();
    this.answerChars = 0;
  }

  summary(): Record<string, unknown> {
    return { events: Object.fromEntries(this.counts), outcomes: Object.fromEntries(this.outcomes) };
  }
}

/** Counts store calls (and refused leases): recovery's diagnosis, not used where speed is timed. */
export function countingStore(store: SessionStore, calls: Map<string, number>): SessionStore {
  return new Proxy(store, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function') return value;
      return async (...args: unknown[]) => {
        const name = String(prop);
        calls.set(name, (calls.get(name) ?? 0) + 1);
        let result: unknown;
        try {
          result = await (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        } catch (error) {
          const key = `${name}:threw:${error instanceof Error ? error.name : 'error'}`;
          calls.set(key, (calls.get(key) ?? 0) + 1);
          throw error;
        }
        if (name === 'acquireLease' && result === false)
          calls.set('acquireLease:refused', (calls.get('acquireLease:refused') ?? 0) + 1);
        return result;
      };
    },
  });
}

export function newClient(endpoint: string): A2AClient {
  // undici's global dispatcher: an Agent with no connection cap per origin (1,000 streams need
  // 1,000 sockets), as the broker runs in production.
  return new A2AClient({ endpoint, identity: { kind: 'user-id', userId: 'bench' } });
}

export interface Rig {
  engine: SessionEngine;
  store: SessionStore;
  surface: NullSurface;
  events: EventCounter;
  client: A2AClient;
}

export async function rig(
  endpoint: string,
  dbPath: string,
  options: {
    wrap?: (s: SessionStore) => SessionStore;
    owner?: string;
    events?: EventCounter;
  } = {},
): Promise<Rig> {
  const { wrap, owner } = options;
  const client = newClient(endpoint);
  const base: SessionStore = new SqliteStore(dbPath);
  const store = wrap === undefined ? base : wrap(base);
  await store.migrate();
  const surface = new NullSurface();
  const events = options.events ?? new EventCounter();
  const route: AgentRoute = { client, dialect: a2aDialect, settings: { questionTimeoutMs: null } };
  const registry: AgentRegistry = { resolve: (binding) => (binding === BINDING ? route : undefined) };
  const engine = new SessionEngine({
    store,
    registry,
    surface,
    events,
    ...(owner === undefined ? {} : { owner }),
    // As the composition root wires it; no SDK is registered here, so the API is its no-op.
    tracer: new OtelTurnTracer(trace.getTracer('agentkourier.engine')),
  });
  return { engine, store, surface, events, client };
}

function inbound(thread: string, text: string): Inbound {
  return {
    kind: 'person',
    key: { surface: 'bench', workspaceId: 'T1', channelId: 'C1', threadId: thread },
    binding: BINDING,
    chatMessageId: `${thread}.1`,
    actor: { id: 'U1', name: 'Ada', label: '[Bench: Ada (U1)]' },
    text,
    addressed: true,
  };
}

/** Sends one message to each of `n` new threads, all at once; resolves when all are stored. */
export async function receiveAll(
  engine: SessionEngine,
  prefix: string,
  n: number,
  text: string,
): Promise<void> {
  const pending: Promise<unknown>[] = [];
  for (let i = 0; i < n; i++) pending.push(engine.receive(inbound(`${prefix}-${i}`, text)));
  await Promise.all(pending);
}

export function tempDb(): { path: string; remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'ak-bench-'));
  return { path: join(dir, 'sessions.db'), remove: () => rmSync(dir, { recursive: true, force: true }) };
}
