import { z } from 'zod';
import { JobType, VenueName } from './names.js';
import { Timeframe } from './timeframe.js';
import { JobSymbol } from './universe.js';

export const JobStats = z.object({
  runs: z.number().int().nonnegative().default(0),
  failures: z.number().int().nonnegative().default(0),
  lastRunAt: z.number().int().nullable().default(null),
  lastSuccessAt: z.number().int().nullable().default(null),
  lastErrorAt: z.number().int().nullable().default(null),
  lastError: z.string().nullable().default(null),
});
export type JobStats = z.infer<typeof JobStats>;

export const Job = z.object({
  id: z.string(),
  venue: VenueName,
  type: JobType,
  /** One instrument, or `@<name>` for a universe of the job's venue (types in UNIVERSE_JOB_TYPES only). */
  symbol: JobSymbol,
  timeframe: Timeframe.nullable().default(null),
  enabled: z.boolean().default(true),
  /** Higher runs first. @defaultValue 0 */
  priority: z.number().int().min(-1000).max(1000).default(0),
  /** Epoch ms at which the job is next due. */
  nextRunAt: z.number().int().default(0),
  /** Lease end while a scheduler has claimed the job; null when free. */
  lockedUntil: z.number().int().nullable().default(null),
  /**
   * Jobs over a universe (`@<name>`): how many members one cycle refreshes, continuing round-robin
   * where the last cycle stopped; null means DEFAULT_UNIVERSE_PER_CYCLE.
   */
  perCycle: z.number().int().min(1).max(1000).nullable().default(null),
  /** Earliest time to collect from (epoch ms); the cursor starts here. */
  since: z.number().int().nullable().default(null),
  /** Progress marker (for candles: open time of the last stored candle). Only moves forward. */
  cursor: z.number().int().nullable().default(null),
  /**
   * Per-day jobs over a universe planned in slices (Polygon day bars over `@<name>`): the last member
   * (in sorted order) already stored of the session day after `cursor`; null when no slice of that
   * day is stored yet. The cursor moves past the day only once its last slice is stored.
   */
  memberCursor: z.string().nullable().default(null),
  stats: JobStats.default({ runs: 0, failures: 0, lastRunAt: null, lastSuccessAt: null, lastErrorAt: null, lastError: null }),
  createdAt: z.number().int().optional(),
  updatedAt: z.number().int().optional(),
});
export type Job = z.infer<typeof Job>;
export type JobInput = Omit<z.input<typeof Job>, 'id' | 'stats' | 'cursor' | 'lockedUntil'>;
