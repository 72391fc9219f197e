import { GapKind, parseOrThrow } from '@tickfleet/core';
import { z } from 'zod';
import type { BackfillCreate, GapRecord } from '../state-store.js';

const BackfillCreateInput = z
  .object({
    id: z.string().min(1),
    jobId: z.string().min(1),
    fromMs: z.number().int(),
    toMs: z.number().int(),
    chunks: z
      .array(z.object({ fromMs: z.number().int(), toMs: z.number().int() }).refine((c) => c.toMs > c.fromMs, { message: 'expected toMs after fromMs' }))
      .min(1),
  })
  .refine((b) => b.toMs > b.fromMs, { message: 'expected toMs after fromMs', path: ['toMs'] })
  .refine((b) => b.chunks.every((c, i) => c.fromMs >= b.fromMs && c.toMs <= b.toMs && (i === 0 || c.fromMs > b.chunks[i - 1]!.fromMs)), {
    message: 'expected chunks inside [fromMs, toMs) with ascending, distinct starts',
    path: ['chunks'],
  });

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
