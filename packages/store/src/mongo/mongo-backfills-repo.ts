import type { Filter } from 'mongodb';
import { type Backfill, BackfillStatus, type Clock, NotFoundError, parseOrThrow } from '@tickfleet/core';
import type { BackfillCreate, BackfillsRepo } from '../state-store.js';
import { validateBackfillCreate } from '../internal/record-inputs.js';
import { type BackfillDoc, type MongoCollections, toBackfill } from './documents.js';

export class MongoBackfillsRepo implements BackfillsRepo {
  constructor(
    private readonly c: MongoCollections,
    private readonly clock: Clock,
  ) {}

  /** Creating an existing id returns the stored record unchanged (a retried command must not reset progress). */
  async create(input: BackfillCreate): Promise<Backfill> {
    const b = validateBackfillCreate(input);
    const now = this.clock.now();
    const doc = await this.c.backfills.findOneAndUpdate(
      { _id: b.id },
      {
        $setOnInsert: {
          jobId: b.jobId,
          fromMs: b.fromMs,
          toMs: b.toMs,
          unitsTotal: b.unitsTotal,
          unitsDone: 0,
          status: 'pending',
          createdAt: now,
          updatedAt: now,
        },
      },
      { upsert: true, returnDocument: 'after' },
    );
    if (!doc) throw new NotFoundError('backfill', b.id);
    return toBackfill(doc);
  }

  async get(id: string): Promise<Backfill | null> {
    const doc = await this.c.backfills.findOne({ _id: id });
    return doc ? toBackfill(doc) : null;
  }

  async list(filter: { jobId?: string; status?: BackfillStatus } = {}): Promise<Backfill[]> {
    const q: Filter<BackfillDoc> = {};
    if (filter.jobId !== undefined) q.jobId = filter.jobId;
    if (filter.status !== undefined) q.status = filter.status;
    return (await this.c.backfills.find(q).sort({ createdAt: 1, _id: 1 }).toArray()).map(toBackfill);
  }

  async unitDone(id: string, n = 1): Promise<Backfill> {
    // One pipeline update: both fields read the document as it was before this update.
    const doc = await this.c.backfills.findOneAndUpdate(
      { _id: id },
      [
        {
          $set: {
            unitsDone: { $min: ['$unitsTotal', { $add: ['$unitsDone', n] }] },
            status: {
              $cond: [
                { $or: [{ $eq: ['$status', 'cancelled'] }, { $eq: ['$status', 'failed'] }] },
                '$status',
                { $cond: [{ $gte: [{ $add: ['$unitsDone', n] }, '$unitsTotal'] }, 'done', 'running'] },
              ],
            },
            updatedAt: this.clock.now(),
          },
        },
      ],
      { returnDocument: 'after' },
    );
    if (!doc) throw new NotFoundError('backfill', id);
    return toBackfill(doc);
  }

  async setStatus(id: string, status: BackfillStatus): Promise<Backfill> {
    const valid = parseOrThrow(BackfillStatus, status, 'status');
    const doc = await this.c.backfills.findOneAndUpdate({ _id: id }, { $set: { status: valid, updatedAt: this.clock.now() } }, { returnDocument: 'after' });
    if (!doc) throw new NotFoundError('backfill', id);
    return toBackfill(doc);
  }
}
