import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { Registry } from 'prom-client';
import { afterAll, describe, expect, it } from 'vitest';
import { createLogger } from '../observability/logging.js';
import { BrokerMetrics } from '../observability/metrics.js';
import { CheckpointerError } from '../store/sqlite/checkpointer.js';
import { SqliteStore } from '../store/sqlite/sqlite-store.js';
import { sqliteCheckpointObserver } from './sqlite-checkpoints.js';

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function logLines() {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      chunks.push(String(chunk));
      done();
    },
  });
  const lines = () =>
    chunks
      .join('')
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  return { logger: createLogger({ destination: stream, level: 'debug' }), lines };
}

describe('sqliteCheckpointObserver', () => {
  it('counts and times each checkpoint and logs it at debug with the frames it copied', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ak-ckpt-obs-'));
    dirs.push(dir);
    const registry = new Registry();
    const metrics = new BrokerMetrics(registry, { version: 't' });
    const { logger, lines } = logLines();
    const store = new SqliteStore(join(dir, 'store.db'), {
      synchronous: 'normal',
      checkpoints: { thresholdFrames: 100, pollMs: 10, startDelayMs: 0 },
    });
    store.observeCheckpoints(sqliteCheckpointObserver(logger, metrics));
    try {
      await store.migrate();
      for (let i = 0; i < 200; i++)
        await store.openSession({
          key: { surface: 'slack', workspaceId: 'T1', channelId: 'C1', threadId: `${i}` },
          binding: `ns/${'b'.repeat(300)}`,
          now: i,
        });
      const deadline = Date.now() + 10_000;
      while (!lines().some((l) => l.msg === 'sqlite checkpoint') && Date.now() < deadline)
        await new Promise((resolve) => setTimeout(resolve, 10));
    } finally {
      await store.close();
    }
    const line = lines().find((l) => l.msg === 'sqlite checkpoint');
    expect(line).toMatchObject({ level: 20, mode: 'PASSIVE', reason: 'threshold', busy: false });
    expect(line?.framesBackfilled).toBeGreaterThanOrEqual(100);
    const text = await registry.metrics();
    expect(text).toMatch(/agentkourier_sqlite_checkpoints_total\{mode="PASSIVE",result="ok"\} [1-9]/);
    expect(text).toMatch(/agentkourier_sqlite_checkpoint_duration_seconds_count\{mode="PASSIVE"\} [1-9]/);
  });

  it('logs a failed checkpoint as a warning and a failed checkpointer as an error', () => {
    const metrics = new BrokerMetrics(new Registry(), { version: 't' });
    const { logger, lines } = logLines();
    const observer = sqliteCheckpointObserver(logger, metrics);
    observer.failed?.(new CheckpointerError('sqlite_checkpoint_failed', 'disk full', { mode: 'restart' }));
    observer.failed?.(new CheckpointerError('sqlite_checkpointer_failed', 'thread gone'));
    expect(lines().map((l) => [l.level, (l.err as { code?: string }).code])).toEqual([
      [40, 'sqlite_checkpoint_failed'],
      [50, 'sqlite_checkpointer_failed'],
    ]);
  });
});
