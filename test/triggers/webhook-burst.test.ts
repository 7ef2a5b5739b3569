import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildPageScript } from '../../scripts/build-webchat.js';
import { type RunningLocal, startLocal } from '../../src/app/local.js';
import { createLogger } from '../../src/observability/logging.js';
import { answer, type ContractAgent, startContractAgent } from '../peers/contract-agent/contract-agent.js';
import { until } from './harness.js';

/**
 * The probe sent ten webhook deliveries at once with the same dedupeKey and different fields:
 * one thread, but ten agent runs back to back. What arrives for a thread while its trigger turn
 * waits now goes with that turn: here the first delivery's turn runs, and the nine that came
 * meanwhile make one more, carrying all their fields. Through local mode's real webhook route,
 * trigger worker and engine, on SQLite.
 */

const TOKEN = 'burst-hook-token-0123456789';
const DELIVERIES = 10;

describe('a burst of webhook deliveries for one group', () => {
  let dir: string | undefined;
  let agent: ContractAgent | undefined;
  let local: RunningLocal | undefined;
  afterAll(async () => {
    await local?.stop();
    await agent?.close();
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  it('makes one thread and two agent runs, not ten; every delivery’s fields reach the agent', async () => {
    agent = await startContractAgent({ version: '1.0' });
    // Each run takes a while, so the deliveries all arrive while the first one runs.
    for (let i = 0; i < DELIVERIES; i++)
      agent.enqueueFor(
        'SendStreamingMessage',
        answer({ chunks: ['looking', ' into it'], chunkDelayMs: 300 }),
      );
    dir = await mkdtemp(join(tmpdir(), 'ak-burst-'));
    const config = join(dir, 'local.yaml');
    await writeFile(
      config,
      `apiVersion: agentkourier.dev/v1alpha1
kind: AgentBackend
metadata: {name: agents}
spec: {dialect: a2a, url: "${agent.endpoint}"}
---
apiVersion: v1
kind: Secret
metadata: {name: hook-token}
stringData: {token: ${TOKEN}}
---
apiVersion: agentkourier.dev/v1alpha1
kind: Binding
metadata: {name: alerts}
spec:
  backendRef: {name: agents}
  identity: {userId: local-user}
  triggers:
    - {name: hook, kind: webhook, instruction: Look into it., tokenSecretRef: {name: hook-token, key: token}}
`,
    );
    local = await startLocal({
      config,
      host: '127.0.0.1',
      port: 0,
      demo: false,
      env: { AGENTKOURIER_STORE: `sqlite:${join(dir, 'state.db')}` },
      out: () => undefined,
      pageScript: buildPageScript,
      logger: createLogger({ level: 'silent' }),
    });
    const url = `${local.url.replace(/\/$/, '')}/triggers/default/alerts/hook`;
    const delivered = await Promise.all(
      Array.from({ length: DELIVERIES }, (_, i) =>
        fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
          body: JSON.stringify({
            title: 'Queue backlog',
            fields: { depth: `depth-${i}` },
            dedupeKey: 'orders',
          }),
        }),
      ),
    );
    expect(delivered.map((r) => r.status)).toEqual(Array(DELIVERIES).fill(200));
    const sends = () => agent?.rpc('SendStreamingMessage') ?? [];
    const texts = () =>
      sends().map((r) => {
        const parts = (r.body as { params: { message: { parts: Array<{ text?: string }> } } }).params.message
          .parts;
        return parts.map((p) => p.text ?? '').join('');
      });
    await until(
      'every delivery sent to the agent',
      () =>
        Array.from({ length: DELIVERIES }, (_, i) => `depth-${i}`).every((d) =>
          texts().some((t) => t.includes(d)),
        ),
      30_000,
    );
    expect(sends()).toHaveLength(2);
    const contexts = new Set(
      sends().map(
        (r) =>
          (r.body as { params: { message: { contextId?: string } } }).params.message.contextId ?? 'first',
      ),
    );
    expect(contexts.size).toBe(2); // the first send opens the context, the second continues it
  });
});
