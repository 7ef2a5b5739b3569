import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { StoreConfig } from '../config/broker.js';
import { backoffDelay } from '../core/backoff.js';
import { InvalidConfigError } from '../core/errors.js';
import type { FeedbackRows } from '../core/feedback-store.js';
import type { InstallationRows } from '../core/installation-store.js';
import type { SessionStore } from '../core/store.js';
import type { TranscriptStore } from '../core/transcript-store.js';
import type { TriggerStore } from '../core/trigger-store.js';
import { PostgresStore } from './postgres/postgres-store.js';
import type { CheckpointObserver } from './sqlite/checkpointer.js';
import { SqliteStore } from './sqlite/sqlite-store.js';

/** The configured store, not yet connected (SQLite creates its directory first). */
export function createStore(config: StoreConfig): SessionStore {
  if (config.kind === 'sqlite') {
    if (config.path !== ':memory:') mkdirSync(dirname(config.path), { recursive: true });
    return new SqliteStore(config.path);
  }
  return new PostgresStore({ connectionString: config.url, schema: config.schema });
}

export interface StoreWait {
  logger?: Logger;
  retryBaseMs?: number;
  retryMaxMs?: number;
  signal?: AbortSignal;
}

/**
 * Migrates the store, waiting as long as it takes for it to be reachable: a broker started
 * while PostgreSQL is down (or not up yet, as often on a fresh cluster) keeps trying, with a
 * capped backoff and a log line per try, instead of exiting. The caller reports itself not
 * ready meanwhile. Throws only when `signal` aborts.
 */
export async function migrateWhenReachable(store: SessionStore, wait: StoreWait = {}): Promise<void> {
  const base = wait.retryBaseMs ?? 500;
  const max = wait.retryMaxMs ?? 30_000;
  for (let attempt = 0; ; attempt++) {
    wait.signal?.throwIfAborted();
    try {
      await store.migrate();
      if (attempt > 0) wait.logger?.info({ attempts: attempt + 1 }, 'the store is reachable; migrated');
      return;
    } catch (error) {
      const delayMs = backoffDelay(attempt, { baseMs: base, maxMs: max });
      // The error's own words may hold a connection string: only its class and code are logged.
      wait.logger?.warn(
        {
          err: { name: error instanceof Error ? error.name : typeof error, code: codeOf(error) },
          retryInMs: delayMs,
        },
        'the store is not reachable; waiting for it',
      );
      // Cut short when the signal aborts; the loop then throws its reason.
      await sleep(delayMs, undefined, wait.signal === undefined ? {} : { signal: wait.signal }).catch(
        () => undefined,
      );
    }
  }
}

/** Opens and migrates the configured store, waiting for it to be reachable. */
export async function openStore(config: StoreConfig, wait: StoreWait = {}): Promise<SessionStore> {
  const store = createStore(config);
  await migrateWhenReachable(store, wait);
  return store;
}

function codeOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** Tells `observer` of the SQLite store's WAL checkpoints (no other store has any). */
export function observeCheckpoints(store: SessionStore, observer: CheckpointObserver): void {
  if (store instanceof SqliteStore) store.observeCheckpoints(observer);
}

/** The trigger store on the same database as a store `openStore` opened (migrated with it). */
export function triggerStoreOf(store: SessionStore): TriggerStore {
  if (store instanceof SqliteStore || store instanceof PostgresStore) return store.triggers();
  throw new InvalidConfigError('this session store keeps no trigger state');
}

/** The transcript store on the same database as a store `openStore` opened (migrated with it). */
export function transcriptStoreOf(store: SessionStore): TranscriptStore {
  if (store instanceof SqliteStore || store instanceof PostgresStore) return store.transcripts();
  throw new InvalidConfigError('this session store keeps no transcripts');
}

/** The Slack installations on the same database as a store `openStore` opened (migrated with it). */
export function installationRowsOf(store: SessionStore): InstallationRows {
  if (store instanceof SqliteStore || store instanceof PostgresStore) return store.installations();
  throw new InvalidConfigError('this session store keeps no Slack installations');
}

/** Feedback on answers on the same database as a store `openStore` opened (migrated with it). */
export function feedbackRowsOf(store: SessionStore): FeedbackRows | undefined {
  if (store instanceof SqliteStore || store instanceof PostgresStore) return store.feedback();
  return undefined;
}
