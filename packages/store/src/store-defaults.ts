/**
 * Defaults of the state store's options, in one place: `openStore` and both stores take them
 * from here, so a default changes once.
 */
export const STORE_DEFAULTS = Object.freeze({
  /** SQLite: how long one store call waits for another connection's write lock (`SqliteStoreOptions.busyTimeoutMs`). */
  sqliteBusyTimeoutMs: 5000,
  /** SQLite: the same for budget calls and unit locks, which have a fallback and so give up sooner. */
  sqliteBudgetBusyTimeoutMs: 300,
  /** MongoDB: how long to look for a server before failing with StoreUnavailableError. */
  mongoServerSelectionTimeoutMs: 10_000,
  /** MongoDB: the database of a URL without a path. */
  mongoDatabase: 'tickfleet',
  /** MongoDB: prefix of every collection name (tests and several fleets may share a database). */
  mongoCollectionPrefix: '',
});
