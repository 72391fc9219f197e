import { z } from 'zod';
import { ON_FULL_POLICIES } from '@tickfleet/sinks';
import { REDIS_PREFIX_EXPECTED, REDIS_PREFIX_PATTERN, REDIS_URL_EXPECTED, REDIS_URL_PATTERN } from '@tickfleet/core';

const port = z.coerce.number().int().min(0).max(65535);
const positiveMs = z.coerce.number().int().positive();

/** The worker's configuration, parsed once at start (`parseEnv`); a bad value names its variable. */
export const WorkerEnv = z.object({
  REDIS_URL: z.string().regex(REDIS_URL_PATTERN, REDIS_URL_EXPECTED),
  TICKFLEET_STORE_URL: z.string().default('sqlite://.tickfleet/state.db'),
  TICKFLEET_SINK_URL: z.string().default('sqlite://.tickfleet/data.db'),
  /** Base directory of worker spools; each process takes a free `worker-<n>` slot under it. */
  TICKFLEET_SPOOL_DIR: z.string().default('.tickfleet/spool'),
  /** What the spool does when its cap or its disk is full: drop_all, drop_book_keep_trades or block (docs/sinks.md). */
  TICKFLEET_SPOOL_ON_FULL: z.enum(ON_FULL_POLICIES).default('block'),
  /** Cap on this worker's spool segments together (bytes). */
  TICKFLEET_SPOOL_MAX_BYTES: z.coerce.number().int().positive().default(1024 * 1024 * 1024),
  /** A blocked spool append gives up after this long; its unit returns to the queue without burning an attempt. */
  TICKFLEET_SPOOL_BLOCK_TIMEOUT_MS: positiveMs.default(30_000),
  /** Comma-separated venues to serve; unset or empty serves every connector with an adapter. */
  TICKFLEET_VENUES: z
    .string()
    .regex(/^(|[a-z][a-z0-9_-]{1,31}(,[a-z][a-z0-9_-]{1,31})*)$/, 'venue names separated by commas, e.g. binance,polygon (empty: every venue)')
    .optional(),
  TICKFLEET_PREFIX: z.string().regex(REDIS_PREFIX_PATTERN, REDIS_PREFIX_EXPECTED).default('tickfleet'),
  TICKFLEET_HEALTH_PORT: port.default(0),
  TICKFLEET_HEALTH_HOST: z.string().default('127.0.0.1'),
  /** In-flight units get this long to finish on SIGTERM before they are returned to the queue. */
  TICKFLEET_GRACE_MS: positiveMs.default(25_000),
  TICKFLEET_HEARTBEAT_MS: positiveMs.default(30_000),
  TICKFLEET_CONNECTOR_POLL_MS: positiveMs.default(5000),
  /** BullMQ lock of a running unit; a dead worker's unit is recovered after about this long. */
  TICKFLEET_UNIT_LOCK_MS: positiveMs.default(30_000),
  TICKFLEET_STALLED_INTERVAL_MS: positiveMs.default(10_000),
  /** How far back a candle job with neither `since` nor a cursor starts. */
  TICKFLEET_INITIAL_LOOKBACK_MS: positiveMs.default(86_400_000),
  POLYGON_API_KEY: z.string().optional(),
});
export type WorkerEnv = z.infer<typeof WorkerEnv>;
