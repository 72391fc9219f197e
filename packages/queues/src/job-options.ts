import type { JobsOptions } from 'bullmq';

/**
 * Options every unit is added with. Finished units are trimmed so Redis does not grow without
 * bound: BullMQ evicts by age/count each time another unit finishes.
 * - completed: kept 1 h (enough to inspect recent runs in the dashboard), at most 1000 per venue;
 * - failed: kept 24 h for post-mortems, at most 5000 per venue.
 *
 * Attempts only count failures of unknown cause (a bug, an unexpected error): 5 tries, 2 s
 * exponential backoff, then the unit fails. Transient venue and store faults never spend them
 * (see {@link TRANSIENT_RETRY}), nor do rate limits and spent budgets (the worker moves the unit
 * to delayed instead); unrecoverable answers fail the unit at once.
 */
export const UNIT_JOB_OPTIONS = {
  removeOnComplete: { age: 3600, count: 1000 },
  removeOnFail: { age: 24 * 3600, count: 5000 },
  attempts: 5,
  backoff: { type: 'exponential', delay: 2000 },
} as const satisfies JobsOptions;

/**
 * Retry policy for transient causes (5xx, timeouts, refused or reset connections, malformed
 * payloads, an unreachable state store): the unit goes back to the queue delayed by a capped
 * exponential backoff and retries without limit, so a fault storm of any length delays work but
 * never loses it. The cap keeps a unit that failed through a long storm coming back within
 * minutes of its end; the count and last cause stay on the unit for the dashboard.
 */
export const TRANSIENT_RETRY = {
  /** Delay after the first transient failure. */
  baseMs: 2000,
  /** Longest delay between two tries of one unit. */
  capMs: 300_000,
  /** An unreachable store comes back on its own and costs no venue weight: look again sooner. */
  storeCapMs: 30_000,
} as const;

/**
 * Delay before the next try of a unit that failed transiently `failures` times in a row (1 for
 * the first): `min(cap, base * 2^(failures-1))`, drawn uniformly from its upper half so units
 * that failed together do not come back together.
 */
export function transientRetryDelayMs(failures: number, capMs: number = TRANSIENT_RETRY.capMs, random: () => number = Math.random): number {
  const ceiling = Math.min(capMs, TRANSIENT_RETRY.baseMs * 2 ** Math.min(30, Math.max(0, failures - 1)));
  return Math.round(ceiling / 2 + random() * (ceiling / 2));
}
