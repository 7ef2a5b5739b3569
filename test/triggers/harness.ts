import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import type { Clock } from '../../src/core/clock.js';
import type { Inbound, ReceiveResult } from '../../src/core/session/engine.js';
import type { SessionKey } from '../../src/core/store.js';
import type { TriggerStore } from '../../src/core/trigger-store.js';
import {
  type PostRef,
  type TriggerChat,
  type TriggerConfig,
  TriggerDirectory,
  type TriggerMessage,
  type TriggerObserver,
  type TriggerPlace,
  TriggerPostRefusedError,
  tokenDigest,
} from '../../src/core/triggers.js';
import { Triggers, type TriggersOptions } from '../../src/triggers/index.js';

/**
 * Triggers with their real store and HTTP routes, and the two ports they reach out through
 * recorded: the chat (roots and posts) and the engine (turns). The engine's own handling of a
 * trigger turn is proven elsewhere (engine tests, and the Alertmanager integration test with the
 * real engine and agent); here the question is what triggers ask of them, and how often.
 */

export const TOKEN = 'trigger-token-0123456789';
export const BINDING = 'team-a/support';

export function triggerConfig(overrides: Partial<TriggerConfig> = {}): TriggerConfig {
  return {
    binding: BINDING,
    name: 'alerts',
    kind: 'alertmanager',
    instruction: 'Investigate this alert.',
    onResolved: 'notice',
    target: {},
    threadsPerMinute: 5,
    tokenDigest: tokenDigest(TOKEN),
    ...overrides,
  };
}

export interface RecordedPost {
  kind: 'root' | 'post';
  key: SessionKey;
  message: TriggerMessage;
  ref: PostRef;
}

/** A chat that records what it is asked to show. `loseAnswers` posts, then fails as if the answer was lost. */
export class RecordingChat implements TriggerChat {
  readonly posts: RecordedPost[] = [];
  loseAnswers = 0;
  refuse = false;
  available = true;
  #threads = 0;
  readonly #prefix: string;

  /** `prefix`: thread ids of this chat (two replicas' chats must not hand out the same). */
  constructor(prefix = 't') {
    this.#prefix = prefix;
  }

  place(trigger: TriggerConfig): TriggerPlace | undefined {
    if (!this.available) return undefined;
    return { surface: 'webchat', workspaceId: 'local', channelId: trigger.binding };
  }

  async startThread(place: TriggerPlace, message: TriggerMessage, ref: PostRef): Promise<SessionKey> {
    const earlier = ref.recover
      ? this.posts.find((p) => p.kind === 'root' && p.ref.id === ref.id)
      : undefined;
    if (earlier !== undefined) return earlier.key;
    const key = {
      surface: place.surface,
      workspaceId: place.workspaceId,
      channelId: place.channelId,
      threadId: `${this.#prefix}${++this.#threads}`,
    };
    this.#record({ kind: 'root', key, message, ref });
    return key;
  }

  async postInThread(key: SessionKey, message: TriggerMessage, ref: PostRef): Promise<void> {
    if (ref.recover && this.posts.some((p) => p.kind === 'post' && p.ref.id === ref.id)) return;
    this.#record({ kind: 'post', key, message, ref });
  }

  roots(): RecordedPost[] {
    return this.posts.filter((p) => p.kind === 'root');
  }

  #record(post: RecordedPost): void {
    if (this.refuse) throw new TriggerPostRefusedError('the channel is gone');
    this.posts.push(post);
    if (this.loseAnswers > 0) {
      this.loseAnswers -= 1;
      throw new Error('the post landed but its answer was lost');
    }
  }
}

export class RecordingEngine {
  readonly turns: Extract<Inbound, { kind: 'trigger' }>[] = [];
  readonly #seen = new Set<string>();

  async receive(input: Inbound): Promise<ReceiveResult> {
    if (input.kind !== 'trigger') throw new Error('triggers send trigger turns only');
    const id = `${input.key.threadId}:${input.chatMessageId}`;
    const duplicate = this.#seen.has(id);
    this.#seen.add(id);
    if (!duplicate) this.turns.push(input);
    return { sessionId: input.key.threadId, turnId: input.chatMessageId, duplicate };
  }
}

export class CountingObserver implements TriggerObserver {
  readonly counts = new Map<string, number>();
  #add(key: string): void {
    this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
  }
  triggerDelivery(binding: string, kind: string, result: string): void {
    this.#add(`delivery ${binding} ${kind} ${result}`);
  }
  triggerThreadOpened(binding: string, kind: string): void {
    this.#add(`thread ${binding} ${kind}`);
  }
  triggerThrottled(binding: string): void {
    this.#add(`throttled ${binding}`);
  }
  triggerWorkFailed(binding: string, reason: string): void {
    this.#add(`failed ${binding} ${reason}`);
  }
  get(key: string): number {
    return this.counts.get(key) ?? 0;
  }
}

export interface TriggerHarness {
  url: string;
  triggers: Triggers;
  directory: TriggerDirectory;
  chat: RecordingChat;
  engine: RecordingEngine;
  observer: CountingObserver;
  post(
    path: string,
    body: unknown,
    headers?: Record<string, string>,
  ): Promise<{ status: number; json: unknown; headers: Headers }>;
  close(): Promise<void>;
}

export async function startTriggerHarness(
  store: TriggerStore,
  options: {
    configs?: TriggerConfig[];
    clock?: Clock;
    owner?: string;
    extra?: Partial<TriggersOptions>;
  } = {},
): Promise<TriggerHarness> {
  const directory = new TriggerDirectory();
  directory.set(BINDING, options.configs ?? [triggerConfig()]);
  const chat = new RecordingChat(`${options.owner ?? 'replica-a'}-t`);
  const engine = new RecordingEngine();
  const observer = new CountingObserver();
  const triggers = new Triggers({
    directory,
    store,
    chat,
    engine,
    owner: options.owner ?? 'replica-a',
    logger: pino({ level: 'silent' }),
    observer,
    worker: { scanIntervalMs: 40, retryBaseMs: 10, retryMaxMs: 40 },
    scheduler: { recheckMs: 50 },
    ...(options.clock === undefined ? {} : { clock: options.clock }),
    ...options.extra,
  });
  const server: Server = createServer((req, res) => {
    if (!triggers.routes(req, res)) {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  triggers.start();
  return {
    url,
    triggers,
    directory,
    chat,
    engine,
    observer,
    async post(path, body, headers = {}) {
      const res = await fetch(`${url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}`, ...headers },
        body: typeof body === 'string' ? body : JSON.stringify(body),
      });
      const text = await res.text();
      return {
        status: res.status,
        json: text === '' ? undefined : (JSON.parse(text) as unknown),
        headers: res.headers,
      };
    },
    async close() {
      await triggers.stop();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export async function until(
  what: string,
  check: () => boolean | Promise<boolean>,
  timeoutMs = 5_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** An Alertmanager v4 notification of `alerts` (name, fingerprint, status), as its notifier sends it. */
export function notification(
  groupKey: string,
  alerts: Array<{ name?: string; fingerprint: string; status?: 'firing' | 'resolved'; startsAt?: string }>,
): Record<string, unknown> {
  const all = alerts.map((a) => ({
    status: a.status ?? 'firing',
    labels: { alertname: a.name ?? 'HighCPU', severity: 'critical', instance: a.fingerprint },
    annotations: { summary: `${a.name ?? 'HighCPU'} on ${a.fingerprint}` },
    startsAt: a.startsAt ?? '2026-11-30T10:00:00Z',
    endsAt: a.status === 'resolved' ? '2026-11-30T10:30:00Z' : '0001-01-01T00:00:00Z',
    generatorURL: 'http://prometheus.example/graph',
    fingerprint: a.fingerprint,
  }));
  return {
    version: '4',
    groupKey,
    truncatedAlerts: 0,
    status: all.every((a) => a.status === 'resolved') ? 'resolved' : 'firing',
    receiver: 'kourier',
    groupLabels: { alertname: alerts[0]?.name ?? 'HighCPU' },
    commonLabels: {},
    commonAnnotations: {},
    externalURL: 'http://alertmanager.example:9093',
    alerts: all,
  };
}
