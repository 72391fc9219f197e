import type { QueuedUnit } from './queued-unit.js';

/**
 * BullMQ priorities: 1 is served first, 2 097 151 last, and 0 ("no priority") would jump ahead of
 * every prioritized job, so every tickfleet unit carries an explicit priority >= 1.
 * Live units take 1..2001 and backfill chunks 10 001..12 001, so any live unit of a venue runs
 * before any backfill chunk, and within each band a job's priority (-1000..1000, higher first)
 * orders them.
 */
export const LIVE_PRIORITY_BASE = 1;
export const BACKFILL_PRIORITY_BASE = 10_001;

/** The BullMQ priority of a unit: live above backfill, then the job's priority. */
export function unitPriority(unit: Pick<QueuedUnit, 'kind' | 'priority'>): number {
  const jobPriority = Math.max(-1000, Math.min(1000, unit.priority ?? 0));
  const base = unit.kind === 'backfill' ? BACKFILL_PRIORITY_BASE : LIVE_PRIORITY_BASE;
  return base + (1000 - jobPriority);
}
