import { MongoBulkWriteError, type Filter } from 'mongodb';
import { type Backfill, type BackfillChunk, BackfillChunkStatus, BackfillStatus, type Clock, NotFoundError, parseOrThrow } from '@tickfleet/core';
import type { BackfillCreate, BackfillsRepo, ChunkRange, OwedChunk, OwedChunksQuery } from '../state-store.js';
import { mergeRanges } from '../internal/merge-ranges.js';
import { validateBackfillCreate } from '../internal/record-inputs.js';
import { type BackfillChunkDoc, type BackfillDoc, type MongoCollections, toBackfill } from './documents.js';

const DUPLICATE_KEY = 11000;
/** Recount attempts of a drifted backfill; each lost race means another writer updated it meanwhile. */
const MAX_RECOUNTS = 5;

function chunkId(backfillId: string, fromMs: number): string {
  return `${backfillId}|${fromMs}`;
}

function toChunk(d: BackfillChunkDoc): BackfillChunk {
  return { backfillId: d.backfillId, fromMs: d.fromMs, toMs: d.toMs, index: d.index, status: d.status, error: d.error ?? null, updatedAt: d.updatedAt };
}

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
          unitsTotal: b.chunks.length,
          unitsDone: 0,
          unitsFailed: 0,
          status: 'pending',
          rev: 0,
          createdAt: now,
          updatedAt: now,
        },
      },
      { upsert: true, returnDocument: 'after' },
    );
    if (!doc) throw new NotFoundError('backfill', b.id);
    const chunks: BackfillChunkDoc[] = b.chunks.map((c, index) => ({
      _id: chunkId(b.id, c.fromMs),
      backfillId: b.id,
      fromMs: c.fromMs,
      toMs: c.toMs,
      index,
      status: 'pending',
      error: null,
      updatedAt: now,
    }));
    try {
      await this.c.backfillChunks.insertMany(chunks, { ordered: false });
    } catch (err) {
      // A retried create finds its chunks already there (and maybe settled): keep them.
      if (!(err instanceof MongoBulkWriteError)) throw err;
      const writeErrors = Array.isArray(err.writeErrors) ? err.writeErrors : [err.writeErrors];
      if (writeErrors.some((w) => w.code !== DUPLICATE_KEY)) throw err;
    }
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

  async chunkDone(id: string, range: ChunkRange): Promise<Backfill> {
    await this.requireBackfill(id);
    const before = await this.c.backfillChunks.findOneAndUpdate(
      { _id: chunkId(id, range.fromMs) },
      {
        $set: { status: 'done', error: null, updatedAt: this.clock.now() },
        $setOnInsert: { backfillId: id, fromMs: range.fromMs, toMs: range.toMs, index: -1 },
      },
      { upsert: true, returnDocument: 'before' },
    );
    const was = before?.status ?? 'pending';
    if (was === 'done') return this.recountIfDrifted(id);
    return this.apply(id, 1, was === 'failed' ? -1 : 0);
  }

  async chunkFailed(id: string, range: ChunkRange, reason: string): Promise<Backfill> {
    await this.requireBackfill(id);
    const now = this.clock.now();
    const _id = chunkId(id, range.fromMs);
    // Done wins: a chunk already stored is never turned into a failure by a late report.
    const before = await this.c.backfillChunks.findOneAndUpdate(
      { _id, status: { $ne: 'done' } },
      { $set: { status: 'failed', error: reason, updatedAt: now } },
      { returnDocument: 'before' },
    );
    if (before) return before.status === 'pending' ? this.apply(id, 0, 1) : this.recountIfDrifted(id);
    if (await this.c.backfillChunks.findOne({ _id })) return this.recountIfDrifted(id);
    try {
      await this.c.backfillChunks.insertOne({
        _id,
        backfillId: id,
        fromMs: range.fromMs,
        toMs: range.toMs,
        index: -1,
        status: 'failed',
        error: reason,
        updatedAt: now,
      });
    } catch (err) {
      if ((err as { code?: unknown }).code !== DUPLICATE_KEY) throw err;
      return this.recountIfDrifted(id);
    }
    return this.apply(id, 0, 1);
  }

  async chunks(id: string, filter: { status?: BackfillChunk['status'] } = {}): Promise<BackfillChunk[]> {
    const q: Filter<BackfillChunkDoc> = { backfillId: id };
    if (filter.status !== undefined) q.status = parseOrThrow(BackfillChunkStatus, filter.status, 'status');
    return (await this.c.backfillChunks.find(q).sort({ fromMs: 1 }).toArray()).map(toChunk);
  }

  async owedChunks(options: OwedChunksQuery): Promise<OwedChunk[]> {
    const open = await this.c.backfills
      .find({ status: { $in: ['pending', 'running'] }, ...(options.createdBefore === undefined ? {} : { createdAt: { $lte: options.createdBefore } }) })
      .sort({ _id: 1 })
      .toArray();
    const limit = Math.max(1, Math.floor(options.limit));
    const after = options.after;
    const out: OwedChunk[] = [];
    for (const b of open) {
      if (after && b._id < after.backfillId) continue;
      const q: Filter<BackfillChunkDoc> = { backfillId: b._id, status: 'pending' };
      if (after && b._id === after.backfillId) q.fromMs = { $gt: after.fromMs };
      const docs = await this.c.backfillChunks
        .find(q)
        .sort({ fromMs: 1 })
        .limit(limit - out.length)
        .toArray();
      out.push(...docs.map((d) => ({ ...toChunk(d), jobId: b.jobId })));
      if (out.length >= limit) break;
    }
    return out;
  }

  async setStatus(id: string, status: BackfillStatus): Promise<Backfill> {
    const valid = parseOrThrow(BackfillStatus, status, 'status');
    const doc = await this.c.backfills.findOneAndUpdate(
      { _id: id },
      { $set: { status: valid, updatedAt: this.clock.now() }, $inc: { rev: 1 } },
      { returnDocument: 'after' },
    );
    if (!doc) throw new NotFoundError('backfill', id);
    return toBackfill(doc);
  }

  async requestedRanges(jobId: string): Promise<ChunkRange[]> {
    const backfills = await this.c.backfills.find({ jobId }).toArray();
    if (backfills.length === 0) return [];
    const chunks = await this.c.backfillChunks
      .find({ backfillId: { $in: backfills.map((b) => b._id) } }, { projection: { backfillId: 1, fromMs: 1, toMs: 1, status: 1 } })
      .toArray();
    const recorded = new Map<string, number>();
    for (const c of chunks) recorded.set(c.backfillId, (recorded.get(c.backfillId) ?? 0) + 1);
    const cancelled = new Set(backfills.filter((b) => b.status === 'cancelled').map((b) => b._id));
    return mergeRanges([
      ...chunks.filter((c) => !(cancelled.has(c.backfillId) && c.status === 'pending')),
      ...backfills.filter((b) => !cancelled.has(b._id) && (recorded.get(b._id) ?? 0) < b.unitsTotal),
    ]);
  }

  private async requireBackfill(id: string): Promise<BackfillDoc> {
    const doc = await this.c.backfills.findOne({ _id: id });
    if (!doc) throw new NotFoundError('backfill', id);
    return doc;
  }

  /**
   * Applies one chunk transition to the backfill's counters and derives its status, in one
   * pipeline update (fields read the document as it was before it). Each transition is seen by
   * exactly one caller (the chunk update returned the state it replaced), so repeats and
   * concurrent reports never count twice.
   */
  private async apply(id: string, dDone: number, dFailed: number): Promise<Backfill> {
    const done = { $add: ['$unitsDone', dDone] };
    const failed = { $add: [{ $ifNull: ['$unitsFailed', 0] }, dFailed] };
    const doc = await this.c.backfills.findOneAndUpdate(
      { _id: id },
      [
        {
          $set: {
            unitsDone: { $min: ['$unitsTotal', done] },
            unitsFailed: failed,
            status: {
              $cond: [
                { $eq: ['$status', 'cancelled'] },
                '$status',
                { $cond: [{ $gte: [done, '$unitsTotal'] }, 'done', { $cond: [{ $gte: [{ $add: [done, failed] }, '$unitsTotal'] }, 'failed', 'running'] }] },
              ],
            },
            rev: { $add: [{ $ifNull: ['$rev', 0] }, 1] },
            updatedAt: this.clock.now(),
          },
        },
      ],
      { returnDocument: 'after' },
    );
    if (!doc) throw new NotFoundError('backfill', id);
    return toBackfill(doc);
  }

  /**
   * A repeated report changes nothing, unless a writer died between updating a chunk and its
   * backfill: then the counters lag the chunks, and a recount from the chunks repairs them. `rev`
   * keeps a recount from overwriting a newer transition; losing that race means someone else
   * just wrote, so the latest document is returned as it is.
   */
  private async recountIfDrifted(id: string): Promise<Backfill> {
    for (let i = 0; i < MAX_RECOUNTS; i++) {
      const doc = await this.requireBackfill(id);
      const [done, failed] = await Promise.all([
        this.c.backfillChunks.countDocuments({ backfillId: id, status: 'done' }),
        this.c.backfillChunks.countDocuments({ backfillId: id, status: 'failed' }),
      ]);
      if (Math.min(done, doc.unitsTotal) === doc.unitsDone && failed === (doc.unitsFailed ?? 0)) return toBackfill(doc);
      let status: BackfillStatus;
      if (doc.status === 'cancelled') status = 'cancelled';
      else if (done >= doc.unitsTotal) status = 'done';
      else if (done + failed >= doc.unitsTotal) status = 'failed';
      else status = 'running';
      const rev = doc.rev ?? 0;
      const revFilter: Filter<BackfillDoc> = doc.rev === undefined ? { _id: id, rev: { $exists: false } } : { _id: id, rev };
      const updated = await this.c.backfills.findOneAndUpdate(
        revFilter,
        { $set: { unitsDone: Math.min(done, doc.unitsTotal), unitsFailed: failed, status, rev: rev + 1, updatedAt: this.clock.now() } },
        { returnDocument: 'after' },
      );
      if (updated) return toBackfill(updated);
    }
    return toBackfill(await this.requireBackfill(id));
  }
}
