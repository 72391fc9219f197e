import { z } from 'zod';

export const BACKFILL_STATUSES = ['pending', 'running', 'done', 'cancelled', 'failed'] as const;
export const BackfillStatus = z.enum(BACKFILL_STATUSES);
export type BackfillStatus = z.infer<typeof BackfillStatus>;

/** An operator-requested range to collect for one job, split into page-sized units. */
export const Backfill = z.object({
  id: z.string(),
  jobId: z.string(),
  fromMs: z.number().int(),
  toMs: z.number().int(),
  unitsTotal: z.number().int().nonnegative(),
  /** Chunks whose whole range is stored (each chunk counts once however often its unit ran). */
  unitsDone: z.number().int().nonnegative().default(0),
  /** Chunks that ended unrecoverable or out of attempts; their reasons are on the chunks. */
  unitsFailed: z.number().int().nonnegative().default(0),
  status: BackfillStatus.default('pending'),
  createdAt: z.number().int(),
  updatedAt: z.number().int(),
});
export type Backfill = z.infer<typeof Backfill>;

export const BACKFILL_CHUNK_STATUSES = ['pending', 'done', 'failed'] as const;
export const BackfillChunkStatus = z.enum(BACKFILL_CHUNK_STATUSES);
export type BackfillChunkStatus = z.infer<typeof BackfillChunkStatus>;

/**
 * One page-sized range of a backfill, keyed by (backfillId, fromMs). The store owns what is owed:
 * a chunk is `done` once its range is stored, `failed` with the reason when its unit gave up, and
 * `pending` until then — whatever Redis still holds.
 */
export const BackfillChunk = z.object({
  backfillId: z.string(),
  fromMs: z.number().int(),
  toMs: z.number().int(),
  /** Position in the backfill (unit order, progress display). */
  index: z.number().int().nonnegative(),
  status: BackfillChunkStatus,
  error: z.string().nullable(),
  updatedAt: z.number().int(),
});
export type BackfillChunk = z.infer<typeof BackfillChunk>;

export const GAP_KINDS = ['missing', 'venue-hole', 'trade-ids'] as const;
/**
 * `missing`: we lack data the venue has; `venue-hole`: the venue itself has none (not retried
 * forever); `trade-ids`: trades a stream could not heal, `fromMs`/`toMs` holding the trade ids
 * `[first, last + 1)` instead of times (job id `<venue>:<SYMBOL>:-:trades`, see docs/streams-fleet.md).
 */
export const GapKind = z.enum(GAP_KINDS);
export type GapKind = z.infer<typeof GapKind>;

/** A hole in collected data: candles missing in [fromMs, toMs). */
export const Gap = z.object({
  jobId: z.string(),
  fromMs: z.number().int(),
  toMs: z.number().int(),
  kind: GapKind.default('missing'),
  detectedAt: z.number().int(),
  filledAt: z.number().int().nullable().default(null),
  attempts: z.number().int().nonnegative().default(0),
});
export type Gap = z.infer<typeof Gap>;
