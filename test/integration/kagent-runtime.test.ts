import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { A2AClient } from '../../src/a2a/client.js';
import { decodeResponse } from '../../src/a2a/jsonrpc.js';
import { SseParser } from '../../src/a2a/sse.js';
import * as v03 from '../../src/a2a/wire/v0_3/codec.js';
import type { EngineEvent } from '../../src/core/events.js';
import { SessionEngine } from '../../src/core/session/engine.js';
import type { SessionKey } from '../../src/core/store.js';
import { dialectSpec } from '../../src/dialects/index.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { BINDING, FAST_TIMINGS, MapRegistry } from '../helpers/engine-harness.js';
import { FakeSurface } from '../helpers/fake-surface.js';
import { type KagentRuntime, startKagentRuntime } from '../peers/kagent/runtime.js';

/**
 * kagent's real ADK runtime (kagent-adk 0.10.4 from PyPI, pinned in
 * test/peers/kagent/requirements.txt) with a scripted model, driven through the session engine
 * and the kagent-v1 dialect.
 *
 * No published runtime speaks the HITL v1 extension: every 1.0 alpha of kagent-adk needs
 * kagent-proto, which is not on PyPI (see requirements.txt). So this checks what the newest
 * installable runtime does: its tool calls and results become step cards and its answer is
 * shown, and its legacy approval pause (DataParts, no extension) is a pause the dialect cannot
 * show: the task is cancelled, the thread told, and neither tool runs. The v1 approval flow is
 * proved against the kagent-shaped contract agent (test/dialects/kagent-v1-engine.test.ts).
 *
 * The runtime pod serves JSON-RPC at its root, not at the gateway's /agents/<ns>/<name>, so the
 * client is given the pod's URL as the endpoint; the rest is dialectSpec('kagent-v1').
 */
describe('kagent-v1 dialect against kagent’s ADK runtime 0.10.4', () => {
  let runtime: KagentRuntime;
  let engine: SessionEngine;
  let store: SqliteStore;
  const surface = new FakeSurface();
  const events: EngineEvent[] = [];
  const key = (thread: string): SessionKey => ({
    surface: 'test',
    workspaceId: 'T1',
    channelId: 'C1',
    threadId: thread,
  });
  const say = (thread: string, text: string) =>
    engine.receive({
      kind: 'person',
      key: key(thread),
      binding: BINDING,
      chatMessageId: `${thread}-1`,
      actor: { id: 'U123', name: 'Ada', label: '[Test: Ada (U123)]' },
      text,
      addressed: true,
    });

  beforeAll(async () => {
    execFileSync('bash', ['scripts/kagent-peer.sh'], { stdio: 'inherit' });
    runtime = await startKagentRuntime();
    const spec = dialectSpec('kagent-v1');
    const client = new A2AClient({
      endpoint: runtime.endpoint,
      identity: { kind: 'user-id', userId: 'ada@example.com' },
      extensions: spec.extensions,
      timeouts: { headersMs: 10_000, streamIdleMs: 30_000 },
    });
    store = new SqliteStore(':memory:');
    await store.migrate();
    const registry = new MapRegistry();
    registry.routes.set(BINDING, { client, dialect: spec.dialect, settings: { questionTimeoutMs: null } });
    engine = new SessionEngine({
      store,
      registry,
      surface,
      events: { emit: (e) => events.push(e) },
      timings: { ...FAST_TIMINGS, giveUpAfterMs: 30_000, leaseTtlMs: 10_000 },
    });
    await engine.start();
  }, 600_000);

  afterAll(async () => {
    await engine?.stop();
    await store?.close();
    await runtime?.close();
  });

  it('[R-9][R-4] shows the runtime’s tool call and result as step cards, and its answer', async () => {
    const { sessionId } = await say('steps', 'show me the steps');
    await surface.waitFor(
      () => surface.of(sessionId, 'answer').some((m) => m.final === true),
      30_000,
      'the answer',
    );
    expect(surface.of(sessionId, 'step').map((m) => m.text)).toEqual([
      'call echo_text {"text":"hello"}',
      'result echo_text {"echo":"hello"}',
    ]);
    expect(surface.of(sessionId, 'answer').at(-1)?.text).toContain('Done:');
    expect(surface.notices(sessionId)).toEqual([]);
    expect(runtime.ran().map((r) => r.tool)).toEqual(['echo_text']);
  });

  it('[Q-1][Q-3][M-4] cancels the runtime’s legacy two-tool approval pause and tells the thread; no tool runs', async () => {
    const { sessionId } = await say('approve', 'please approve both');
    await surface.waitFor(
      () => surface.notices(sessionId).includes('question-unsupported'),
      30_000,
      'the notice',
    );
    await engine.idle();
    expect(surface.of(sessionId, 'question')).toHaveLength(0);
    // The model's own calls are shown; the pause's confirmation calls are not.
    expect(surface.of(sessionId, 'step').map((m) => m.text)).toEqual([
      'call add_numbers {"a":2,"b":3}',
      'call check_status {"service":"payments"}',
    ]);
    expect(runtime.ran().map((r) => r.tool)).not.toContain('add_numbers');
    expect(runtime.ran().map((r) => r.tool)).not.toContain('check_status');
    // kagent's Python runtime does not implement tasks/cancel: the thread is told that too.
    expect(events.filter((e) => e.type === 'task.cancel').map((e) => 'ok' in e && e.ok)).toEqual([false]);
    expect(surface.notices(sessionId)).toEqual(['cancel-failed', 'question-unsupported']);
  });

  it('reads every event of the runtime’s stream on the fast path as zod reads it, and its text updates take it', async () => {
    // The stream as the runtime writes it, read here by hand so each event can be given to both
    // readers (the client would give it to one).
    const response = await fetch(runtime.endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream', 'x-user-id': 'ada' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 'raw-1',
        method: 'message/stream',
        params: {
          message: {
            kind: 'message',
            messageId: 'raw-steps-1',
            role: 'user',
            parts: [{ kind: 'text', text: 'show me the steps' }],
          },
        },
      }),
    });
    const parser = new SseParser(1 << 22);
    const sse = [...parser.push(await response.text()), ...parser.end()];
    const taken = { fast: [] as string[], zod: [] as string[] };
    for (const event of sse) {
      const reply = decodeResponse(event.data, 'raw-1');
      if (!reply.ok) throw new Error(`the runtime sent an error: ${JSON.stringify(reply.error)}`);
      const bySchema = v03.readEventBySchema(reply.result);
      const fast = v03.readFastEvent(reply.result);
      const parts = bySchema.kind === 'status-update' ? (bySchema.status.message?.parts ?? []) : [];
      const name = `${bySchema.kind}${parts.length > 0 ? ` (${parts.map((p) => p.kind).join(', ')})` : ''}`;
      if (fast === undefined) {
        taken.zod.push(name);
      } else {
        taken.fast.push(name);
        expect(JSON.stringify(fast)).toBe(JSON.stringify(bySchema));
        expect(fast).toStrictEqual(bySchema);
      }
    }
    // Its statuses with text or none, and its answer, on the fast path; its tool steps (data
    // parts) through zod.
    expect(taken.fast).toContain('status-update (text)');
    expect(taken.fast).toContain('status-update');
    expect(taken.fast).toContain('artifact-update');
    expect(taken.zod.length).toBeGreaterThan(0);
    expect(taken.zod.every((name) => name.includes('data'))).toBe(true);
  });
});
