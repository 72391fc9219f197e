import { DEFAULT_LOG_LEVEL, DEFAULT_REDIS_PREFIX, LISTEN_DEFAULTS } from '@tickfleet/core';
import { duration, logLevel, port, positiveInt, redisPrefix, redisUrl, text } from './fields.js';

/**
 * Defaults of the settings several roles (and the CLI) share. Every role's schema and every CLI
 * option default takes them from here, so a default changes in one place.
 */
export const DEFAULTS = {
  prefix: DEFAULT_REDIS_PREFIX,
  storeUrl: 'sqlite://.tickfleet/state.db',
  sinkUrl: 'sqlite://.tickfleet/data.db',
  spoolDir: '.tickfleet/spool',
  healthPort: LISTEN_DEFAULTS.port,
  /** The dashboard's port (`tickfleet dashboard`, `tickfleet up`). */
  dashboardPort: 3000,
  /** Where every role's server listens unless told otherwise. */
  listenHost: LISTEN_DEFAULTS.host,
  graceMs: 25_000,
  /**
   * How long a running role tolerates an unreachable Redis before it exits non-zero. Long enough
   * for a Redis restart (ioredis and BullMQ reconnect by themselves), short enough that a fleet
   * whose Redis is gone for good does not retry forever unnoticed.
   */
  redisGiveUpMs: 60_000,
  logLevel: DEFAULT_LOG_LEVEL,
} as const;

/**
 * The variables several roles read, with their types and defaults. A role composes its schema
 * from these and its own (`z.object({ REDIS_URL: SHARED.REDIS_URL, …, TICKFLEET_X: duration() })`)
 * and parses it with parseConfig.
 */
export const SHARED = {
  /** The fleet's Redis; the Cluster form is `redis+cluster://host1:port1,host2:port2`. Required. */
  REDIS_URL: redisUrl(),
  /** Key prefix of queues, budgets and locks; the same for every role of one fleet. */
  TICKFLEET_PREFIX: redisPrefix().default(DEFAULTS.prefix),
  /** State store: `sqlite://path` or `mongodb://…`. */
  TICKFLEET_STORE_URL: text().default(DEFAULTS.storeUrl),
  /**
   * Where venue budgets live: unset, in the state store (the default); `redis://…`, `rediss://…`
   * or `redis+cluster://…`, in that Redis (rate-limiter-flexible; docs/reliability.md). Every role
   * of one fleet must use the same.
   */
  TICKFLEET_BUDGET_URL: redisUrl().optional(),
  /** Data sink: `sqlite://path`, `mongodb://…` or `jsonl://dir`. */
  TICKFLEET_SINK_URL: text().default(DEFAULTS.sinkUrl),
  /** Base directory of worker spools; each worker takes a free `worker-<n>` slot under it. */
  TICKFLEET_SPOOL_DIR: text().default(DEFAULTS.spoolDir),
  /** Port of a role's /metrics, /healthz, /readyz; 0 picks a free port. */
  TICKFLEET_HEALTH_PORT: port().default(DEFAULTS.healthPort),
  /**
   * Address of a role's health server. Loopback: /metrics and /status are not for the network
   * unless asked for (0.0.0.0 in a container, as the manifests set).
   */
  TICKFLEET_HEALTH_HOST: text().default(DEFAULTS.listenHost),
  /** In-flight work gets this long to finish on SIGTERM. */
  TICKFLEET_GRACE_MS: duration().default(DEFAULTS.graceMs),
  /** A running role exits 1 when its Redis has been unreachable this long (tests shorten it). */
  TICKFLEET_REDIS_GIVE_UP_MS: duration().default(DEFAULTS.redisGiveUpMs),
  LOG_LEVEL: logLevel().default(DEFAULTS.logLevel),
  /** Key of the Polygon API; it travels only in Polygon requests (never logged or stored). */
  POLYGON_API_KEY: text().optional(),
  /** Key of the Finnhub API; sent only to Finnhub, in the X-Finnhub-Token header (never logged or stored). */
  FINNHUB_API_KEY: text().optional(),
  /** Alpaca key id (`APCA-API-KEY-ID`); it and the secret travel only in Alpaca requests (never logged or stored). */
  ALPACA_API_KEY_ID: text().optional(),
  /** Alpaca secret key (`APCA-API-SECRET-KEY`). */
  ALPACA_API_SECRET_KEY: text().optional(),
  /** Key of the FRED API (`api_key`); it travels only in FRED requests (never logged or stored). */
  FRED_API_KEY: text().optional(),
  /** Set by `tickfleet up` on the roles it starts: the pid they belong to; they stop when it is gone. */
  TICKFLEET_PARENT_PID: positiveInt().optional(),
};
