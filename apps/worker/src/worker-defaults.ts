import { CANDLE_CLOSE_DELAY_MS } from '@tickfleet/core';

/**
 * Defaults of the worker's units and their telemetry, in one place: the runner's and the
 * executor's options and the worker's environment schema take them from here, so a default
 * changes once.
 */
export const WORKER_DEFAULTS = Object.freeze({
  /** BullMQ lock of a running unit, renewed while it runs; a dead worker's unit is recovered after about this long. */
  unitLockMs: 30_000,
  /** How often stalled units (their worker died) are looked for. */
  stalledIntervalMs: 10_000,
  /** How far back a candle job with neither `since` nor a cursor starts: one day. */
  initialLookbackMs: 86_400_000,
  /** How far back a trades job with neither `since` nor a cursor starts: one minute (a venue's trades of a day are many pages). */
  tradesLookbackMs: 60_000,
  /** A candle job collects up to the last candle closed this long ago. */
  closeDelayMs: CANDLE_CLOSE_DELAY_MS,
  /** How often a worker logs its `venue heartbeat` line per venue and refreshes its heartbeat gauges. */
  heartbeatMs: 30_000,
  /** How often connectors are re-read (new venues, cap changes). */
  connectorPollMs: 5000,
  /** Interval of the per-venue order-book poll statistics (`poll_stats` records and gauges). */
  pollStatsMs: 10_000,
  /** Polls the rolling latency window of a venue's poll statistics holds. */
  pollLatencyWindow: 512,
  /** Poll error records kept per venue and interval; the rest are only counted. */
  pollMaxErrorsPerInterval: 10,
  /** `/healthz` reuses its per-venue read of Redis and the budget store for this long, however often it is polled. */
  healthzCacheMs: 1000,
  /** `/healthz` waits this long for that read, then answers with what the process knows without it (a liveness probe must not hang on Redis). */
  healthzReadTimeoutMs: 1000,
  /** Lease of a book poll loop's share: a dead worker's shares move to the others within this long. */
  bookLoopLeaseTtlMs: 5000,
  /** The book loop's last-stored markers (per venue, for the next holder of a share) outlive the loop's last write by this long. */
  bookLoopLastStoredTtlMs: 600_000,
  /** A store unreachable at start is tried again for this long before the process gives up (a pod started beside a busy or restarting store). */
  storeOpenTimeoutMs: 180_000,
  /** First wait between those tries; doubled up to {@link WORKER_DEFAULTS.storeOpenRetryMaxMs}. */
  storeOpenRetryMs: 1000,
  storeOpenRetryMaxMs: 10_000,
});
