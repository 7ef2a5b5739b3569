import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type { StoreConfig } from '../config/broker.js';
import { InvalidConfigError } from '../core/errors.js';
import type { SessionStore } from '../core/store.js';
import type { TriggerStore } from '../core/trigger-store.js';
import { PostgresStore } from './postgres/postgres-store.js';
import { SqliteStore } from './sqlite/sqlite-store.js';

/** Opens and migrates the configured store (SQLite creates its directory first). */
export async function openStore(config: StoreConfig): Promise<SessionStore> {
  let store: SessionStore;
  if (config.kind === 'sqlite') {
    if (config.path !== ':memory:') mkdirSync(dirname(config.path), { recursive: true });
    store = new SqliteStore(config.path);
  } else {
    store = new PostgresStore({ connectionString: config.url, schema: config.schema });
  }
  await store.migrate();
  return store;
}

/** The trigger store on the same database as a store `openStore` opened (migrated with it). */
export function triggerStoreOf(store: SessionStore): TriggerStore {
  if (store instanceof SqliteStore || store instanceof PostgresStore) return store.triggers();
  throw new InvalidConfigError('this session store keeps no trigger state');
}
