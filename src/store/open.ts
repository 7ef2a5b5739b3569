import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { StoreConfig } from '../config/broker.js';
import { backoffDelay } from '../core/backoff.js';
import type { ChatAddressRows } from '../core/chat-address-store.js';
import type { FeedbackRows } from '../core/feedback-store.js';
import type { IdentityLinkStore } from '../core/identity-link-store.js';
import type { InstallationRows } from '../core/installation-store.js';
import type { RetentionStore } from '../core/retention-store.js';
import type { SessionStore } from '../core/store.js';
import type { TranscriptStore } from '../core/transcript-store.js';
import type { TriggerStore } from '../core/trigger-store.js';
import { PostgresStore } from './postgres/postgres-store.js';
import { SqliteStore } from './sqlite/sqlite-store.js';

/**
 * Every store the broker keeps, on one database and migrated together (`sessions.migrate()`):
 * the sessions and their turns, the triggers' state, the web chat's transcripts, Slack's
 * installations and the feedback on answers. Each is a core port; this bundle is the only place
 * that knows they share a database.
 */
export interface StoreBundle {
  sessions: SessionStore;
  triggers: TriggerStore;
  transcripts: TranscriptStore;
  installations: InstallationRows;
  feedback: FeedbackRows;
  retention: RetentionStore;
  identityLinks: IdentityLinkStore;
  addresses: ChatAddressRows;
}

/** The bundle over one database's store. */
export function bundleOf(store: SqliteStore | PostgresStore): StoreBundle {
  return {
    sessions: store,
    triggers: store.triggers(),
    transcripts: store.transcripts(),
    installations: store.installations(),
    feedback: store.feedback(),
    retention: store.retention(),
    identityLinks: store.identityLinks(),
    addresses: store.addresses(),
  };
}

/** The configured stores, not yet connected (SQLite creates its directory first). */
export function createStore(config: StoreConfig): StoreBundle {
  if (config.kind === 'sqlite') {
    if (config.path !== ':memory:') mkdirSync(dirname(config.path), { recursive: true });
    return bundleOf(new SqliteStore(config.path));
  }
  return bundleOf(new PostgresStore({ connectionString: config.url, schema: config.schema }));
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

/** Opens and migrates the configured stores, waiting for the database to be reachable. */
export async function openStore(config: StoreConfig, wait: StoreWait = {}): Promise<StoreBundle> {
  const stores = createStore(config);
  await migrateWhenReachable(stores.sessions, wait);
  return stores;
}

function codeOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' ? code : undefined;
}
