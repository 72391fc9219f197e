import { GapKind, parseOrThrow } from '@tickfleet/core';
import { z } from 'zod';
import type { BackfillCreate, GapRecord } from '../state-store.js';

const BackfillCreateInput = z
  .object({
    id: z.string().min(1),
    jobId: z.string().min(1),
    fromMs: z.number().int(),
    toMs: z.number().int(),
    unitsTotal: z.number().int().nonnegative(),
  })
  .refine((b) => b.toMs > b.fromMs, { message: 'expected toMs after fromMs', path: ['toMs'] });

export function validateBackfillCreate(input: BackfillCreate): BackfillCreate {
  return parseOrThrow(BackfillCreateInput, input, 'backfill');
}

const GapInput = z
  .object({
    jobId: z.string().min(1),
    fromMs: z.number().int(),
    toMs: z.number().int(),
    kind: GapKind.default('missing'),
    detectedAt: z.number().int(),
  })
  .refine((g) => g.toMs > g.fromMs, { message: 'expected toMs after fromMs', path: ['toMs'] });

export type ValidGap = z.infer<typeof GapInput>;

export function validateGapRecord(gap: GapRecord, detectedAt: number): ValidGap {
  return parseOrThrow(GapInput, { ...gap, detectedAt }, 'gap');
}
