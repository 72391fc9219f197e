export { keyEnvelope, parseEnvelope, type KeyedEnvelope } from './records.js';
export { candleEnvelope } from '@tickfleet/core';
export {
  type CandleQuery,
  type CandleSummary,
  type DataReader,
  type EnvelopeQuery,
  type ErrorSample,
  type Interval,
  type RejectedRecord,
  type RetrySettings,
  type Sink,
  type SinkAdapter,
  type SinkRetry,
  type SinkState,
  type StoredCandle,
  type WriteOptions,
  type WriteResult,
} from './sink.js';
export type { RetryOptions } from './internal/sink-health.js';
export { openSink, type OpenSinkOptions } from './open-sink.js';
export { SqliteSink, type SqliteSinkOptions } from './adapters/sqlite-sink.js';
export type { MongoSinkOptions } from './adapters/mongo-sink.js';
export { JsonlSink, utcDate, type JsonlSinkOptions } from './adapters/jsonl-sink.js';
export { migrateJsonlLayout, type JsonlMigration } from './adapters/jsonl-migrate.js';
export { Batcher, type BatcherOptions } from './batcher.js';
export { DedupWindow, type DedupWindowOptions } from './dedup-window.js';
export { ErrorSampler, type ErrorSamplerOptions } from './error-sampler.js';
export { ON_FULL_POLICIES, type OnFullPolicy, type SpoolOptions } from './spool-options.js';
export { PIPELINE_DEFAULTS, SINK_DEFAULTS, SPOOL_DEFAULTS } from './sink-defaults.js';
export {
  Spool,
  inspectSpool,
  listSegments,
  oldestReceivedAtMs,
  type AppendResult,
  type SpoolInspection,
  type SpoolRecovery,
  type SpoolSegmentInfo,
} from './spool.js';
export { ReplayWorker, type DrainResult, type ReplayWorkerOptions } from './replay-worker.js';
export { PipelineMetrics } from './pipeline-metrics.js';
export { Pipeline, type DedupStatus, type PipelineOptions, type PushResult, type RecordOutcome } from './pipeline.js';
export { expectedCandleCount, findGaps, gapsToRanges, gridRuns, type GapQuery } from './gaps.js';
export { GapLedger, withNeighbours, type GapLedgerOptions, type LedgerStore, type ScanResult, type SpooledRecords } from './gap-ledger.js';
export { splitByRequest, type CandleSeries, type RequestSources, type RequestSplit } from './requested-ranges.js';
