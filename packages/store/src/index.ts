export type {
  AcquireResult,
  BackfillCreate,
  BackfillsRepo,
  ChunkRange,
  OwedChunk,
  BudgetUsage,
  BudgetsRepo,
  ConnectorJobCounts,
  ConnectorsRepo,
  GapRecord,
  GapsRepo,
  JobCompletion,
  UnitLockResult,
  JobFilter,
  JobLeases,
  JobsRepo,
  JobStats,
  StateStore,
  StreamFilter,
  StreamsRepo,
  UniversesRepo,
} from './state-store.js';
export { mergeRanges } from './internal/merge-ranges.js';
export { openStore, type OpenStoreOptions } from './open-store.js';
export { dueUnitToken, UNIT_LOCK_TTL_MS } from './state-store.js';
export { SqliteStateStore, type SqliteStoreOptions } from './sqlite/sqlite-state-store.js';
export type { MongoStoreOptions } from './mongo/mongo-state-store.js';
export { CLOCK_SKEW_TOLERANCE_MS, PAUSED_RETRY_MS } from '@tickfleet/budget/acquire-math';
