import type { JobsOptions } from 'bullmq';

/**
 * Options every unit is added with. Finished units are trimmed so Redis does not grow without
 * bound: BullMQ evicts by age/count each time another unit finishes.
 * - completed: kept 1 h (enough to inspect recent runs in the dashboard), at most 1000 per venue;
 * - failed: kept 24 h for post-mortems, at most 5000 per venue.
 * Attempts cover transient failures (5xx, timeouts) inside one unit; rate limits and spent
 * budgets never burn an attempt (the worker moves the unit to delayed instead).
 */
export const UNIT_JOB_OPTIONS = {
  removeOnComplete: { age: 3600, count: 1000 },
  removeOnFail: { age: 24 * 3600, count: 5000 },
  attempts: 3,
  backoff: { type: 'exponential', delay: 2000 },
} as const satisfies JobsOptions;
