import { z } from 'zod';
import { duration, port, positiveInt, SHARED } from '@tickfleet/config';
import { DEFAULT_SESSION_DAY_STARTS, SESSION_DAY_VENUES } from '@tickfleet/core';
import { CADENCE_DEFAULTS } from './cadence.js';
import { SCHEDULER_DEFAULTS } from './scheduler-defaults.js';

/** The scheduler's configuration, parsed once at start with parseConfig; a bad value names its variable. */
export const SchedulerEnv = z.object({
  REDIS_URL: SHARED.REDIS_URL,
  TICKFLEET_STORE_URL: SHARED.TICKFLEET_STORE_URL,
  TICKFLEET_PREFIX: SHARED.TICKFLEET_PREFIX,
  TICKFLEET_SCHEDULER_TICK_MS: duration().default(SCHEDULER_DEFAULTS.tickMs),
  TICKFLEET_SCHEDULER_BATCH: positiveInt().default(SCHEDULER_DEFAULTS.batchSize),
  TICKFLEET_SCHEDULER_LEASE_MS: duration().default(SCHEDULER_DEFAULTS.leaseMs),
  TICKFLEET_SCHEDULER_LEADER_TTL_MS: duration().default(SCHEDULER_DEFAULTS.leaderTtlMs),
  /** How often the leader re-creates lost backfill units and missing queue concurrency from the store. */
  TICKFLEET_SCHEDULER_REPAIR_MS: duration().default(SCHEDULER_DEFAULTS.repairEveryMs),
  TICKFLEET_SCHEDULER_JITTER_MS: duration({ allowZero: true }).default(CADENCE_DEFAULTS.jitterMs),
  TICKFLEET_SCHEDULER_CLOSE_DELAY_MS: duration({ allowZero: true }).default(CADENCE_DEFAULTS.closeDelayMs),
  TICKFLEET_SCHEDULER_BOOK_EVERY_MS: duration().default(CADENCE_DEFAULTS.bookEveryMs),
  TICKFLEET_SCHEDULER_TRADES_EVERY_MS: duration().default(CADENCE_DEFAULTS.tradesEveryMs),
  TICKFLEET_SCHEDULER_DISCOVERY_EVERY_MS: duration().default(CADENCE_DEFAULTS.discoveryEveryMs),
  /** Cycle of option-chain jobs: each cycle refreshes a job's next `perCycle` underliers. */
  TICKFLEET_SCHEDULER_OPTIONS_EVERY_MS: duration().default(CADENCE_DEFAULTS.optionsEveryMs),
  TICKFLEET_SCHEDULER_FILES_DELAY_MS: duration().default(CADENCE_DEFAULTS.filesDelayMs),
  /** Alpaca minute bars of a job without `since` start this many days back (day bars: DEFAULT_SESSION_DAY_STARTS.dayStartDays). */
  ALPACA_MINUTE_START_DAYS: positiveInt().default(DEFAULT_SESSION_DAY_STARTS.minuteStartDays),
  /** Symbols (jobs, or members of a universe job's slice) per Polygon day-bar unit (one request per symbol; cap 1 in flight by default). */
  POLYGON_SYMBOLS_PER_UNIT: positiveInt().default(SESSION_DAY_VENUES.polygon!.symbolsPerUnit),
  /** Economic series (FRED) run once a day this long after UTC midnight. */
  TICKFLEET_SCHEDULER_SERIES_DELAY_MS: duration({ allowZero: true }).default(CADENCE_DEFAULTS.seriesDelayMs),
  /** Port of /metrics, /healthz, /readyz; `PORT` is read when this is unset; 0 (the default of both) picks a free port. */
  TICKFLEET_HEALTH_PORT: port().optional(),
  PORT: port().optional(),
  TICKFLEET_HEALTH_HOST: SHARED.TICKFLEET_HEALTH_HOST,
  LOG_LEVEL: SHARED.LOG_LEVEL,
});
export type SchedulerEnv = z.infer<typeof SchedulerEnv>;
