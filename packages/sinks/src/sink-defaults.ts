import type { OnFullPolicy } from './spool-options.js';

/**
 * Defaults of the sinks package, one object per concern: the options of each part and the
 * worker's environment schema take them from here, so a default changes once.
 */

/** Defaults of the spool (`SpoolOptions`); the worker's TICKFLEET_SPOOL_* variables default to them too. */
export const SPOOL_DEFAULTS = Object.freeze({
  maxSegmentBytes: 64 * 1024 * 1024,
  maxTotalBytes: 1024 * 1024 * 1024,
  onFull: 'block' as OnFullPolicy,
  fsync: true,
  blockTimeoutMs: 30_000,
  diskRetryMs: 1000,
  retryAfterMs: 5000,
});

/** Defaults of the replay of spooled records into the sink (`ReplayWorkerOptions`). */
export const REPLAY_DEFAULTS = Object.freeze({
  batchSize: 500,
  paceMs: 0,
  retryIntervalMs: 1000,
});

/** Defaults of every sink adapter's writes (`RetryOptions`) and of the SQLite and MongoDB adapters' own options. */
export const SINK_DEFAULTS = Object.freeze({
  maxRetries: 3,
  retryBaseMs: 100,
  failuresForDegraded: 3,
  sqliteBusyTimeoutMs: 2000,
  sqliteSynchronous: 'NORMAL' as 'NORMAL' | 'FULL',
  mongoDatabase: 'tickfleet',
  mongoServerSelectionTimeoutMs: 2000,
  mongoSocketTimeoutMs: 5000,
  mongoConnectTimeoutMs: 2000,
});

/** Defaults of the JSONL sink (`JsonlSinkOptions`). */
export const JSONL_SINK_DEFAULTS = Object.freeze({
  fsyncIntervalMs: 1000,
  maxOpenPartitions: 8,
  lockTimeoutMs: 5000,
});

/** Defaults of the write pipeline: its batcher, its dedup window and its error sampler. */
export const PIPELINE_DEFAULTS = Object.freeze({
  maxBatchSize: 2000,
  maxBatchAgeMs: 0,
  maxPendingRecords: 10_000,
  dedupWindowMs: 300_000,
  dedupMaxKeys: 100_000,
  errorSamplesPerMinute: 10,
});

/** Defaults of the gap ledger (`GapLedgerOptions`). */
export const GAP_LEDGER_DEFAULTS = Object.freeze({
  holeAfterAttempts: 2,
});
