import { type Clock, systemClock } from '@tickfleet/core';
import type { StateStore } from './state-store.js';
import { parseStoreUrl } from './internal/store-url.js';
import { SqliteStateStore } from './sqlite/sqlite-state-store.js';
import { STORE_DEFAULTS } from './store-defaults.js';

export interface OpenStoreOptions {
  /**
   * Time for timestamps (createdAt, stats) and, on SQLite, budget decisions. MongoDB budgets use
   * the server's `$$NOW` instead so worker clock skew cannot move windows.
   * @defaultValue systemClock
   */
  clock?: Clock;
  /**
   * MongoDB only: prefix of every collection name, so tests and several fleets can share a database.
   * @defaultValue {@link STORE_DEFAULTS.mongoCollectionPrefix}
   */
  collectionPrefix?: string;
  /**
   * MongoDB only: how long to look for a server before failing with StoreUnavailableError.
   * @defaultValue {@link STORE_DEFAULTS.mongoServerSelectionTimeoutMs}
   */
  serverSelectionTimeoutMs?: number;
  /**
   * SQLite only: how long one store call keeps retrying (asynchronously, in short attempts) while
   * another process holds the write lock, before it fails with StoreUnavailableError.
   * @defaultValue {@link STORE_DEFAULTS.sqliteBusyTimeoutMs}
   */
  busyTimeoutMs?: number;
}

/**
 * Opens the state store a URL names: `sqlite://<path>` (relative to the working directory;
 * parent directories are created) or `mongodb://…` / `mongodb+srv://…` (database from the path,
 * default {@link STORE_DEFAULTS.mongoDatabase}). Any other URL throws a ValidationError naming `store URL`.
 */
export async function openStore(url: string, options: OpenStoreOptions = {}): Promise<StateStore> {
  const target = parseStoreUrl(url);
  const clock = options.clock ?? systemClock;
  switch (target.kind) {
    case 'sqlite':
      return SqliteStateStore.open(target.path, { clock, ...(options.busyTimeoutMs === undefined ? {} : { busyTimeoutMs: options.busyTimeoutMs }) });
    case 'mongodb': {
      // Loaded only for a MongoDB store: the driver costs every SQLite process (each CLI call) ~0.25 s of startup.
      const { MongoStateStore } = await import('./mongo/mongo-state-store.js');
      return MongoStateStore.open(target.url, {
        database: target.database,
        clock,
        collectionPrefix: options.collectionPrefix ?? STORE_DEFAULTS.mongoCollectionPrefix,
        serverSelectionTimeoutMs: options.serverSelectionTimeoutMs ?? STORE_DEFAULTS.mongoServerSelectionTimeoutMs,
      });
    }
  }
}
