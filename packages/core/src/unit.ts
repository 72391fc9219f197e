import { z } from 'zod';
import { VenueName } from './names.js';

export const UNIT_KINDS = ['incremental', 'backfill', 'book-poll', 'discovery', 'daily-files', 'series'] as const;
export const UnitKind = z.enum(UNIT_KINDS);
export type UnitKind = z.infer<typeof UnitKind>;

/** One executable piece of work, carried as the data of a BullMQ job on the venue's queue. */
export const Unit = z.object({
  kind: UnitKind,
  venue: VenueName,
  jobId: z.string(),
  /** Range start (epoch ms, inclusive) for backfill chunks and daily files. */
  fromMs: z.number().int().optional(),
  /** Range end (epoch ms, exclusive). */
  toMs: z.number().int().optional(),
  backfillId: z.string().optional(),
  /** Enqueue time, for queue-latency metrics. */
  enqueuedAt: z.number().int(),
});
export type Unit = z.infer<typeof Unit>;
