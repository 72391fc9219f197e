import { z } from 'zod';
import { VenueName } from './names.js';

export const UNIT_KINDS = ['incremental', 'backfill', 'book-poll', 'discovery', 'daily-files', 'option-chain', 'session-day', 'series'] as const;
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
  /**
   * Option-chain units: the round-robin position of the underlier this unit refreshes. The worker
   * takes member `slot % members.length` of the job's universe as it is when the unit runs.
   */
  slot: z.number().int().nonnegative().optional(),
  /**
   * Option-chain units: false on every unit of a cycle but its last, whose completion alone ends the
   * job's run (frees its lease, sets its next due time). A cycle is then planned only once the
   * previous one has been worked through, so units never pile up when the venue is slower than
   * the cycle.
   */
  endsRun: z.boolean().optional(),
  /**
   * `session-day` units: every job the unit serves (same venue and timeframe, all owing the day
   * `[fromMs, toMs)`); `jobId` is the first of them.
   */
  jobIds: z.array(z.string()).min(1).optional(),
  /**
   * `session-day` units of a universe job planned in slices (Polygon day bars over `@<name>`): the
   * members this slice fetches, sorted, as the universe held them when the slice was planned.
   */
  members: z.array(z.string()).min(1).optional(),
  /** Sliced `session-day` units: true on the day's last slice, whose completion moves the job's cursor past the day. */
  lastSlice: z.boolean().optional(),
  /** Enqueue time, for queue-latency metrics. */
  enqueuedAt: z.number().int(),
});
export type Unit = z.infer<typeof Unit>;
