import { Readable } from 'node:stream';
import { request } from 'undici';
import { buildPageScript } from '../../../scripts/build-webchat.js';
import { A2AClient } from '../../../src/a2a/client.js';
import type { Part, TaskStatus } from '../../../src/core/agent/model.js';
import type { ApprovalAudit } from '../../../src/core/approval-audit.js';
import type { Dialect, PauseReading, StructuredReply } from '../../../src/core/ports.js';
import { LiveRegistry } from '../../../src/core/registry.js';
import { SessionEngine } from '../../../src/core/session/engine.js';
import type { SessionStore } from '../../../src/core/store.js';
import { a2aDialect } from '../../../src/dialects/a2a.js';
import { formOf, hitlRequestOf } from '../../../src/dialects/kagent-v1/index.js';
import { toolStepsOf } from '../../../src/dialects/tool-steps.js';
import { createLogger } from '../../../src/observability/logging.js';
import { bundleOf } from '../../../src/store/open.js';
import { SqliteStore } from '../../../src/store/sqlite/sqlite-store.js';
import {
  createWebChat,
  type ThreadEvent,
  type ThreadView,
  type WebChat,
  WebChatSurface,
} from '../../../src/surfaces/webchat/index.js';
import { FAST_TIMINGS } from '../../helpers/engine-harness.js';
import { type ContractAgent, startContractAgent } from '../../peers/contract-agent/contract-agent.js';

/**
 * The web chat over real HTTP with the real engine, SQLite in memory and the contract test
 * agent. Structured questions come from a small stand-in for the kagent-v1 dialect (another
 * module's job): an input-required status with a kagent HITL request in a data part.
 */

export const BINDING = 'team-a/support';
export const TOKEN = 'a-test-token-of-32-characters-xx';
export const HITL_METADATA_KEY = 'test/hitl-reply';

/** Reads kagent's request from a data part; everything else as the a2a dialect does. */
/** What the stand-in dialect was asked to build: the question's data and the person's reply. */
export interface BuiltFor {
  payload: unknown;
  reply: StructuredReply;
}

/**
 * Reads kagent's request from a data part (its form as the kagent-v1 dialect makes it);
 * everything else as the a2a dialect does. Builds a reply that carries the person's reply as
 * metadata, recording what it was asked to build.
 */
export function hitlTestDialect(built: BuiltFor[] = []): Dialect {
  return {
    name: 'hitl-test',
    readPause(status: TaskStatus, lastQuestionKey: string | null): PauseReading {
      const data = status.message?.parts.find((p: Part) => p.kind === 'data');
      const request = data?.kind === 'data' ? hitlRequestOf(data.data) : undefined;
      if (request !== undefined) {
        const key = `m:${status.message?.messageId ?? ''}`;
        if (key === lastQuestionKey) return { kind: 'unsupported', reason: 'asked again' };
        return {
          kind: 'question',
          question: { kind: 'structured', text: '', key, form: formOf(request), reply: request },
        };
      }
      return a2aDialect.readPause(status, lastQuestionKey);
    },
    toolSteps: toolStepsOf,
    messageExtensions: () => [],
    buildReply(payload: unknown, reply: StructuredReply) {
      built.push({ payload, reply });
      return { text: `a ${reply.type} reply`, metadata: { [HITL_METADATA_KEY]: reply } };
    },
  };
}

export interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  json: unknown;
  text: string;
}

export interface WebChatHarness {
  agent: ContractAgent;
  store: SessionStore;
  surface: WebChatSurface;
  engine: SessionEngine;
  chat: WebChat;
  /** What the Binding's dialect was asked to build from a person's reply. */
  answered: BuiltFor[];
  /** The approval audit records the web chat wrote. */
  audits: ApprovalAudit[];
  origin: string;
  /** A request with exactly the headers given (no Origin unless set). */
  call(
    method: string,
    path: string,
    options?: { body?: unknown; raw?: string; headers?: Record<string, string> },
  ): Promise<Reply>;
  /** Authorised, same-origin request (the token added when one is configured). */
  api(method: string, path: string, body?: unknown): Promise<Reply>;
  thread(id: string): Promise<ThreadView>;
  /** Polls the thread until `predicate` holds. */
  waitForThread(
    id: string,
    predicate: (t: ThreadView) => boolean,
    what: string,
    timeoutMs?: number,
  ): Promise<ThreadView>;
  /** Opens the thread's event stream; events arrive in `events`. */
  follow(id: string): Promise<{ events: ThreadEvent[]; close(): void; done: Promise<void> }>;
  close(): Promise<void>;
}

export interface WebChatHarnessOptions {
  token?: string;
  /** The client's bound on a silent stream (default 5 s): longer, so a test sees what ends a stream before it. */
  streamIdleMs?: number;
  answerIntervalMs?: number;
  bodyLimitBytes?: number;
  /**
   * A restart: the store (SQLite) in this file, the web chat's threads kept in it and read back,
   * and this agent, kept running (the harness's close leaves it up).
   */
  restart?: { file: string; agent?: ContractAgent };
}

export async function startWebChatHarness(options: WebChatHarnessOptions = {}): Promise<WebChatHarness> {
  const agent = options.restart?.agent ?? (await startContractAgent({ version: '1.0' }));
  const client = new A2AClient({
    endpoint: agent.endpoint,
    identity: { kind: 'bearer', token: 'binding-token' },
    timeouts: { headersMs: 2_000, streamIdleMs: options.streamIdleMs ?? 5_000 },
  });
  const store = new SqliteStore(options.restart?.file ?? ':memory:');
  await store.migrate();
  const surface = new WebChatSurface({
    ...(options.answerIntervalMs === undefined ? {} : { answerIntervalMs: options.answerIntervalMs }),
    ...(options.restart === undefined
      ? {}
      : { transcripts: bundleOf(store).transcripts, logger: createLogger({ level: 'silent' }) }),
  });
  if (options.restart !== undefined) await surface.restore();
  const answered: BuiltFor[] = [];
  const registry = new LiveRegistry();
  registry.upsert({
    ref: BINDING,
    client,
    dialect: hitlTestDialect(answered),
    settings: { questionTimeoutMs: null },
    // The web chat routes by the Binding the person picks, not by channel.
    routes: {},
    toolApprovals: { enabled: true, approverGroups: [], approvers: [] },
  });
  const engine = new SessionEngine({
    store,
    registry,
    surface,
    events: surface.activity,
    timings: FAST_TIMINGS,
  });
  await engine.start();
  const audits: ApprovalAudit[] = [];
  const chat = await createWebChat({
    audit: { record: (a) => audits.push(a) },
    engine,
    surface,
    registry,
    port: 0,
    pageScript: buildPageScript,
    ...(options.token === undefined ? {} : { token: options.token }),
    ...(options.bodyLimitBytes === undefined ? {} : { bodyLimitBytes: options.bodyLimitBytes }),
    logger: createLogger({ level: 'silent' }),
  });
  const origin = chat.url.replace(/\/$/, '');

  const call: WebChatHarness['call'] = async (method, path, o = {}) => {
    const headers: Record<string, string> = { ...o.headers };
    let body: string | undefined = o.raw;
    if (o.body !== undefined) {
      body = JSON.stringify(o.body);
      headers['content-type'] ??= 'application/json';
    }
    const res = await request(`${origin}${path}`, { method: method as 'GET', headers, body });
    const text = await res.body.text();
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { status: res.statusCode, headers: res.headers, json, text };
  };
  const auth = (): Record<string, string> =>
    options.token === undefined ? {} : { authorization: `Bearer ${options.token}` };
  const api: WebChatHarness['api'] = (method, path, body) =>
    call(method, path, { body, headers: { ...auth(), ...(method === 'GET' ? {} : { origin }) } });

  const thread = async (id: string): Promise<ThreadView> => {
    const res = await api('GET', `/api/threads/${id}`);
    if (res.status !== 200) throw new Error(`GET thread: ${res.status} ${res.text}`);
    return res.json as ThreadView;
  };

  return {
    agent,
    store,
    surface,
    engine,
    chat,
    answered,
    audits,
    origin,
    call,
    api,
    thread,
    waitForThread: async (id, predicate, what, timeoutMs = 5_000) => {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const t = await thread(id);
        if (predicate(t)) return t;
        if (Date.now() > deadline) {
          throw new Error(
            `timed out waiting for ${what}: ${JSON.stringify(t.messages.map((m) => [m.kind, m.text]))}`,
          );
        }
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    },
    follow: async (id) => {
      const controller = new AbortController();
      const res = await request(`${origin}/api/threads/${id}/events`, {
        headers: auth(),
        signal: controller.signal,
      });
      if (res.statusCode !== 200) throw new Error(`events: ${res.statusCode}`);
      const events: ThreadEvent[] = [];
      const done = (async () => {
        let buffer = '';
        try {
          for await (const chunk of Readable.from(res.body)) {
            buffer += String(chunk);
            let end = buffer.indexOf('\n\n');
            while (end !== -1) {
              const frame = buffer.slice(0, end);
              buffer = buffer.slice(end + 2);
              const name = /^event: (.*)$/m.exec(frame)?.[1];
              const data = /^data: (.*)$/m.exec(frame)?.[1];
              if (name !== undefined && data !== undefined) {
                events.push({ event: name, data: JSON.parse(data) } as ThreadEvent);
              }
              end = buffer.indexOf('\n\n');
            }
          }
        } catch {
          // aborted by close()
        }
      })();
      return { events, close: () => controller.abort(), done };
    },
    close: async () => {
      await chat.close();
      await engine.stop();
      await surface.close();
      if (options.restart?.agent === undefined) await agent.close();
      await store.close();
    },
  };
}
