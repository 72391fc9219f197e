import { z } from 'zod';
import { Unit } from '@tickfleet/core';

/**
 * The data of a BullMQ job on a venue queue: a core {@link Unit} plus the scheduling facts the
 * worker needs to close the loop with the state store.
 */
export const QueuedUnit = Unit.extend({
  /** The job's `nextRunAt` when the scheduler claimed it (live units); part of the BullMQ job id. */
  dueAt: z.number().int().optional(),
  /** What the worker passes to `store.jobs.complete(jobId, { nextRunAt })` after a successful run. */
  nextRunAt: z.number().int().optional(),
  /** Backfill chunk index, for progress reporting. */
  chunkIndex: z.number().int().nonnegative().optional(),
  /** The job's priority (-1000..1000, higher first) when the unit was made. */
  priority: z.number().int().min(-1000).max(1000).optional(),
});
export type QueuedUnit = z.infer<typeof QueuedUnit>;
