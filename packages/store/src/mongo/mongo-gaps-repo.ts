import type { Filter } from 'mongodb';
import { type Gap, type GapKind, NotFoundError } from '@tickfleet/core';
import type { GapRecord, GapsRepo } from '../state-store.js';
import { validateGapRecord } from '../internal/record-inputs.js';
import { type GapDoc, gapId, type MongoCollections, toGap } from './documents.js';

export class MongoGapsRepo implements GapsRepo {
  constructor(private readonly c: MongoCollections) {}

  /** A gap detected again after it was filled is missing again: it reopens, keeping detectedAt and attempts. */
  async record(gap: GapRecord, detectedAt: number): Promise<Gap> {
    const g = validateGapRecord(gap, detectedAt);
    const id = gapId(g.jobId, g.fromMs, g.toMs);
    const doc = await this.c.gaps.findOneAndUpdate(
      { _id: id },
      {
        $set: { kind: g.kind, filledAt: null },
        $setOnInsert: { jobId: g.jobId, fromMs: g.fromMs, toMs: g.toMs, detectedAt: g.detectedAt, attempts: 0 },
      },
      { upsert: true, returnDocument: 'after' },
    );
    if (!doc) throw new NotFoundError('gap', id);
    return toGap(doc);
  }

  async list(filter: { jobId?: string; open?: boolean; kind?: GapKind } = {}): Promise<Gap[]> {
    const q: Filter<GapDoc> = {};
    if (filter.jobId !== undefined) q.jobId = filter.jobId;
    if (filter.open !== undefined) q.filledAt = filter.open ? null : { $ne: null };
    if (filter.kind !== undefined) q.kind = filter.kind;
    return (await this.c.gaps.find(q).sort({ jobId: 1, fromMs: 1, toMs: 1 }).toArray()).map(toGap);
  }

  async markFilled(jobId: string, fromMs: number, toMs: number, filledAt: number): Promise<number> {
    const r = await this.c.gaps.updateMany({ jobId, filledAt: null, fromMs: { $gte: fromMs }, toMs: { $lte: toMs } }, { $set: { filledAt } });
    return r.modifiedCount;
  }

  async attempt(jobId: string, fromMs: number, toMs: number): Promise<void> {
    await this.c.gaps.updateOne({ _id: gapId(jobId, fromMs, toMs) }, { $inc: { attempts: 1 } });
  }

  async remove(jobId: string, fromMs: number, toMs: number): Promise<boolean> {
    return (await this.c.gaps.deleteOne({ _id: gapId(jobId, fromMs, toMs) })).deletedCount > 0;
  }
}
