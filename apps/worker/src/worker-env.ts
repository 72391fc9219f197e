import { z } from 'zod';
import { duration, integer, matching, oneOf, positiveInt, SHARED } from '@tickfleet/config';
import { ON_FULL_POLICIES, PIPELINE_DEFAULTS, SINK_DEFAULTS, SPOOL_DEFAULTS } from '@tickfleet/sinks';
import { STREAM_DEFAULTS } from '@tickfleet/streams';
import { WORKER_DEFAULTS } from './worker-defaults.js';

/** The worker's configuration, parsed once at start with parseConfig; a bad value names its variable. */
export const WorkerEnv = z.object({
  REDIS_URL: SHARED.REDIS_URL,
  TICKFLEET_STORE_URL: SHARED.TICKFLEET_STORE_URL,
  TICKFLEET_BUDGET_URL: SHARED.TICKFLEET_BUDGET_URL,
  TICKFLEET_SINK_URL: SHARED.TICKFLEET_SINK_URL,
  TICKFLEET_SPOOL_DIR: SHARED.TICKFLEET_SPOOL_DIR,
  /** What the spool does when its cap or its disk is full: drop_all, drop_book_keep_trades or block (docs/sinks.md). */
  TICKFLEET_SPOOL_ON_FULL: oneOf(ON_FULL_POLICIES).default(SPOOL_DEFAULTS.onFull),
  /** Cap on this worker's spool segments together, in bytes. */
  TICKFLEET_SPOOL_MAX_BYTES: positiveInt().default(SPOOL_DEFAULTS.maxTotalBytes),
  /** A blocked spool append gives up after this long; its unit returns to the queue without burning an attempt. */
  TICKFLEET_SPOOL_BLOCK_TIMEOUT_MS: duration().default(SPOOL_DEFAULTS.blockTimeoutMs),
  /** A spool segment rotates when the next record would take it past this size, in bytes. */
  TICKFLEET_SPOOL_MAX_SEGMENT_BYTES: positiveInt().default(SPOOL_DEFAULTS.maxSegmentBytes),
  /**
   * Retries of a failed sink batch before it goes to the spool. Bounded: the pipeline writes one
   * batch at a time, so a long ladder holds every unit's records instead of spooling them.
   */
  TICKFLEET_SINK_MAX_RETRIES: integer(0, 10, 'a whole number of retries from 0 to 10').default(SINK_DEFAULTS.maxRetries),
  /** First backoff of a failed sink batch; retry n waits this times 2^n. */
  TICKFLEET_SINK_RETRY_BASE_MS: duration({ allowZero: true }).default(SINK_DEFAULTS.retryBaseMs),
  /** Consecutive batches that exhaust their retries before the sink reads `degraded` (`unavailable` before). */
  TICKFLEET_SINK_FAILURES_FOR_DEGRADED: positiveInt().default(SINK_DEFAULTS.failuresForDegraded),
  /** The pipeline's in-memory dedup window in front of the sink (docs/sinks.md, "Dedup window"): `off` (default) or `on`. */
  TICKFLEET_DEDUP: oneOf(['on', 'off'] as const).default('off'),
  /** How long the dedup window remembers a stored key. */
  TICKFLEET_DEDUP_WINDOW_MS: duration().default(PIPELINE_DEFAULTS.dedupWindowMs),
  /** Keys the dedup window holds at most (the oldest go first): its memory bound. */
  TICKFLEET_DEDUP_MAX_KEYS: positiveInt().default(PIPELINE_DEFAULTS.dedupMaxKeys),
  /** Comma-separated venues to serve; unset or empty serves every connector with an adapter. */
  TICKFLEET_VENUES: matching(
    /^[a-z][a-z0-9_-]{1,31}(,[a-z][a-z0-9_-]{1,31})*$/,
    'venue names separated by commas, e.g. binance,polygon (empty: every venue)',
  ).optional(),
  TICKFLEET_PREFIX: SHARED.TICKFLEET_PREFIX,
  TICKFLEET_HEALTH_PORT: SHARED.TICKFLEET_HEALTH_PORT,
  TICKFLEET_HEALTH_HOST: SHARED.TICKFLEET_HEALTH_HOST,
  /** In-flight units get this long to finish on SIGTERM before they are returned to the queue. */
  TICKFLEET_GRACE_MS: SHARED.TICKFLEET_GRACE_MS,
  TICKFLEET_HEARTBEAT_MS: duration().default(WORKER_DEFAULTS.heartbeatMs),
  TICKFLEET_CONNECTOR_POLL_MS: duration().default(WORKER_DEFAULTS.connectorPollMs),
  /** BullMQ lock of a running unit; a dead worker's unit is recovered after about this long. */
  TICKFLEET_UNIT_LOCK_MS: duration().default(WORKER_DEFAULTS.unitLockMs),
  TICKFLEET_STALLED_INTERVAL_MS: duration().default(WORKER_DEFAULTS.stalledIntervalMs),
  /** How far back a candle job with neither `since` nor a cursor starts. */
  TICKFLEET_INITIAL_LOOKBACK_MS: duration().default(WORKER_DEFAULTS.initialLookbackMs),
  /** Interval of the per-venue order-book poll statistics (`poll_stats` records and gauges). */
  TICKFLEET_POLL_STATS_MS: duration().default(WORKER_DEFAULTS.pollStatsMs),
  /** Whether this worker holds streams (docs/streams-fleet.md): `on` (default) or `off` for a units-only worker. */
  TICKFLEET_STREAMS: oneOf(['on', 'off'] as const).default('on'),
  /** Stream lease lifetime: a dead worker's streams move after about this long. */
  TICKFLEET_STREAM_LEASE_TTL_MS: duration().default(STREAM_DEFAULTS.leaseTtlMs),
  /** How often the stream definitions' version is read (one cheap query; the list only when it moved). */
  TICKFLEET_STREAMS_POLL_MS: duration().default(STREAM_DEFAULTS.definitionsPollMs),
  /** WebSocket roots of the stream venues (the emulation: `ws://127.0.0.1:<port>/binance`, `…/kraken/v2`). */
  TICKFLEET_BINANCE_WS_URL: matching(/^wss?:\/\/\S+$/, 'a ws:// or wss:// URL').default('wss://stream.binance.com:9443'),
  TICKFLEET_KRAKEN_WS_URL: matching(/^wss?:\/\/\S+$/, 'a ws:// or wss:// URL').default('wss://ws.kraken.com/v2'),
  /** A stream connection that received nothing for this long is reopened (raise it for illiquid Binance books). */
  TICKFLEET_STREAM_SILENCE_MS: duration().default(STREAM_DEFAULTS.silenceTimeoutMs),
  LOG_LEVEL: SHARED.LOG_LEVEL,
  POLYGON_API_KEY: SHARED.POLYGON_API_KEY,
  FINNHUB_API_KEY: SHARED.FINNHUB_API_KEY,
  ALPACA_API_KEY_ID: SHARED.ALPACA_API_KEY_ID,
  ALPACA_API_SECRET_KEY: SHARED.ALPACA_API_SECRET_KEY,
  FRED_API_KEY: SHARED.FRED_API_KEY,
});
export type WorkerEnv = z.infer<typeof WorkerEnv>;
