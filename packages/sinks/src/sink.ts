import type { KeyedEnvelope } from './records.js';
import type { Channel, Envelope, Timeframe, ValidationError } from '@tickfleet/core';

/**
 * Health of a sink, driven by its bounded retries:
 * `ok` -> `unavailable` (first batch whose retries were exhausted) -> `degraded`
 * (`failuresForDegraded` consecutive exhausted batches) -> `ok` on the next success.
 */
export type SinkState = 'ok' | 'unavailable' | 'degraded';

export type SinkAdapter = 'sqlite' | 'mongodb' | 'jsonl';

/** The retry settings a sink runs with: its `RetryOptions` over `SINK_DEFAULTS`. */
export interface RetrySettings {
  readonly maxRetries: number;
  readonly retryBaseMs: number;
  readonly failuresForDegraded: number;
}

/** One backoff a sink is about to wait: after failed attempt `attempt` (0 = the first) it waits `delayMs`. */
export interface SinkRetry {
  attempt: number;
  delayMs: number;
  error: unknown;
}

export interface RejectedRecord {
  /** Index of the record in the batch given to `write`. */
  index: number;
  error: ValidationError;
}

export interface WriteResult {
  /** Records stored by this call. */
  inserted: number;
  /** Valid records already stored (same key), counted, not fatal. */
  duplicates: number;
  /** Malformed records, not stored; the rest of the batch is. */
  rejected: RejectedRecord[];
}

export interface WriteOptions {
  /** Overrides the sink's `maxRetries` for this call (the replay worker probes with 0). */
  maxRetries?: number;
}

/** A malformed record, sampled to the sink's errors stream. */
export interface ErrorSample {
  atMs: number;
  venue: string | null;
  channel: string | null;
  /** Field path the validation error named, e.g. `envelope.payload.openTime`. */
  field: string;
  message: string;
  /** The record as JSON, truncated. */
  sample: string;
}

export interface CandleQuery {
  venue: string;
  symbol: string;
  timeframe: Timeframe;
  /** Inclusive open time. */
  fromMs?: number;
  /** Exclusive open time. */
  toMs?: number;
}

export interface CandleSummary {
  count: number;
  firstOpenTime: number | null;
  lastOpenTime: number | null;
}

/** A stored candle with its envelope times. */
export interface StoredCandle {
  venue: string;
  symbol: string;
  timeframe: Timeframe;
  openTime: number;
  open: string;
  high: string;
  low: string;
  close: string;
  volume: string;
  trades: number | null;
  receivedAtMs: number;
  serverTimeMs: number | null;
}

export interface EnvelopeQuery {
  venue?: string;
  channel?: Exclude<Channel, 'candles'>;
  symbol?: string;
  /** Inclusive receive time. */
  fromMs?: number;
  /** Exclusive receive time. */
  toMs?: number;
}

/** A half-open interval [fromMs, toMs) of candle open times. */
export interface Interval {
  fromMs: number;
  toMs: number;
}

/** Read access to stored data (SQLite and MongoDB; JSONL has none). */
export interface DataReader {
  countCandles(query: CandleQuery): Promise<CandleSummary>;
  /** Candles in open-time order, fetched in pages. */
  streamCandles(query: CandleQuery): AsyncIterable<StoredCandle>;
  /** Missing runs of candles between stored candles of the query's range (not before the first nor after the last). */
  missingIntervals(query: CandleQuery): Promise<Interval[]>;
  countEnvelopes(query: EnvelopeQuery): Promise<number>;
  /** Non-candle envelopes in receive-time order, each with its key. */
  streamEnvelopes(query: EnvelopeQuery): AsyncIterable<{ key: string; envelope: Envelope }>;
  countErrors(): Promise<number>;
}

/** A primary sink: idempotent writes keyed by dedup key (envelopes) and candle key (candles). */
export interface Sink {
  readonly adapter: SinkAdapter;
  readonly state: SinkState;
  /** Consecutive batches whose retries were exhausted. */
  readonly consecutiveFailures: number;
  /** Retries per batch, first backoff and the exhausted batches that make it `degraded`. */
  readonly retry: RetrySettings;
  /**
   * Validates and stores `records`. Malformed ones are returned in `rejected`, the rest stored.
   * Throws SinkUnavailableError when the sink failed `maxRetries + 1` times.
   */
  write(records: readonly unknown[], options?: WriteOptions): Promise<WriteResult>;
  /**
   * {@link write} for records already validated and keyed (the pipeline's batches: `push`
   * validated them, `pushValidated` took them from a validating adapter): the same storage,
   * retries and states, without validating every record again.
   */
  writeKeyed(records: readonly KeyedEnvelope[], options?: WriteOptions): Promise<WriteResult>;
  /** Appends samples to the errors stream (best effort: failures are swallowed and counted by the caller). */
  writeErrors(samples: readonly ErrorSample[]): Promise<void>;
  /**
   * JSONL only (the sink with a directory tree): keeps a venue's state snapshot as the file
   * `<root>/<venue>/state/<name>`, replaced atomically, never by an older `version`; false when a
   * later version is already there. The databases have no such file: their records say the same.
   */
  writeState?(venue: string, name: string, doc: { version: number }): Promise<boolean>;
  /** Reader over the stored data; undefined for JSONL (a raw append-only sink has no index to read). */
  readonly reader: DataReader | undefined;
  /** Called with each state change. */
  onStateChange(listener: (state: SinkState) => void): void;
  /** Called before each backoff wait of a failed attempt (`delayMs` = `retryBaseMs * 2^attempt`). */
  onRetry(listener: (retry: SinkRetry) => void): void;
  close(): Promise<void>;
}
