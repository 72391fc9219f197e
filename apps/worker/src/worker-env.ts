import { z } from 'zod';

const port = z.coerce.number().int().min(0).max(65535);
const positiveMs = z.coerce.number().int().positive();

/** The worker's configuration, parsed once at start (`parseEnv`); a bad value names its variable. */
export const WorkerEnv = z.object({
  REDIS_URL: z.string().regex(/^rediss?(\+cluster)?:\/\/\S+$/, 'a redis://, rediss:// or redis+cluster://host:port,… URL'),
  TICKFLEET_STORE_URL: z.string().default('sqlite://.tickfleet/state.db'),
  TICKFLEET_SINK_URL: z.string().default('sqlite://.tickfleet/data.db'),
  /** Base directory of worker spools; each process takes a free `worker-<n>` slot under it. */
  TICKFLEET_SPOOL_DIR: z.string().default('.tickfleet/spool'),
  /** Comma-separated venues to serve; empty serves every connector with an adapter. */
  TICKFLEET_VENUES: z
    .string()
    .regex(/^([a-z][a-z0-9_-]{1,31})(,[a-z][a-z0-9_-]{1,31})*$/, 'venue names separated by commas, e.g. binance,polygon')
    .optional(),
  TICKFLEET_PREFIX: z.string().regex(/^[A-Za-z0-9_.-]+$/, 'a Redis key prefix of [A-Za-z0-9_.-]').default('tickfleet'),
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
