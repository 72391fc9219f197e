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
  unitsDone: z.number().int().nonnegative().default(0),
  status: BackfillStatus.default('pending'),
  createdAt: z.number().int(),
  updatedAt: z.number().int(),
});
export type Backfill = z.infer<typeof Backfill>;

export const GAP_KINDS = ['missing', 'venue-hole'] as const;
/** `missing`: we lack data the venue has; `venue-hole`: the venue itself has none (not retried forever). */
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
