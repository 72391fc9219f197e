import { randomUUID } from 'node:crypto';
import type { Filter } from 'mongodb';
import { type Clock, type Job, type JobInput, JobLockLostError, NotFoundError, ValidationError } from '@tickfleet/core';
import { type JobCompletion, type JobFilter, type JobLeases, type JobsRepo, UNIT_LOCK_TTL_MS, type UnitLockResult } from '../state-store.js';
import type { ConnectorJobCounts } from '../state-store.js';
import { EMPTY_STATS, normalizeJob } from '../internal/inputs.js';
import { type JobDoc, type MongoCollections, toJob } from './documents.js';

export class MongoJobsRepo implements JobsRepo {
  constructor(
    private readonly c: MongoCollections,
    private readonly clock: Clock,
  ) {}

  async upsert(input: JobInput): Promise<Job> {
    const { job, given } = normalizeJob(input);
    const now = this.clock.now();
    const set: Record<string, unknown> = { venue: job.venue, type: job.type, symbol: job.symbol, timeframe: job.timeframe, updatedAt: now };
    // Cursor, lease and stats are only written on insert: they survive any number of upserts.
    const onInsert: Record<string, unknown> = { id: job.id, lockedUntil: null, cursor: null, stats: EMPTY_STATS, createdAt: now };
    const put = (isGiven: boolean, path: string, value: unknown): void => void ((isGiven ? set : onInsert)[path] = value);
    put(given.enabled, 'enabled', job.enabled);
    put(given.priority, 'priority', job.priority);
    put(given.nextRunAt, 'nextRunAt', job.nextRunAt);
    put(given.since, 'since', job.since);
    put(given.perCycle, 'perCycle', job.perCycle);
    const doc = await this.c.jobs.findOneAndUpdate({ _id: job.id }, { $set: set, $setOnInsert: onInsert }, { upsert: true, returnDocument: 'after' });
    return this.found(job.id, doc);
  }

  async get(id: string): Promise<Job | null> {
    const doc = await this.c.jobs.findOne({ _id: id });
    return doc ? toJob(doc) : null;
  }

  async list(filter: JobFilter = {}): Promise<Job[]> {
    const q: Filter<JobDoc> = {};
    if (filter.venue !== undefined) q.venue = filter.venue;
    if (filter.enabled !== undefined) q.enabled = filter.enabled;
    if (filter.type !== undefined) q.type = filter.type;
    return (await this.c.jobs.find(q).sort({ _id: 1 }).toArray()).map(toJob);
  }

  async setEnabled(id: string, enabled: boolean): Promise<Job> {
    const doc = await this.c.jobs.findOneAndUpdate({ _id: id }, { $set: { enabled, updatedAt: this.clock.now() } }, { returnDocument: 'after' });
    return this.found(id, doc);
  }

  /**
   * Leases due jobs a batch at a time: one `find` of the batch's ids in claim order, one
   * `updateMany` that leases those still free (the filter re-checks the lease, so concurrent
   * schedulers can interleave but never get the same job) and marks them with the batch's id, and
   * one `find` of what it leased. Active venues are read first: a connector paused while a claim
   * is running may still lose that claim's jobs, but never those of any later claim.
   */
  async claimDue(nowMs: number, max: number, leaseMs: number, holder?: string): Promise<Job[]> {
    if (!Number.isInteger(max) || max < 0) throw new ValidationError('max', 'a non-negative integer', max);
    if (!Number.isInteger(leaseMs) || leaseMs <= 0) throw new ValidationError('leaseMs', 'a positive integer', leaseMs);
    if (max === 0) return [];
    const active = await this.c.connectors.distinct('_id', { status: 'active' });
    if (active.length === 0) return [];
    const due: Filter<JobDoc> = {
      enabled: true,
      venue: { $in: active },
      nextRunAt: { $lte: nowMs },
      $or: [{ lockedUntil: null }, { lockedUntil: { $lte: nowMs } }],
    };
    const order = { priority: -1, nextRunAt: 1, _id: 1 } as const;
    const claimed: Job[] = [];
    while (claimed.length < max) {
      const want = Math.min(max - claimed.length, CLAIM_BATCH);
      const ids = (await this.c.jobs.find(due, { projection: { _id: 1 }, sort: order, limit: want }).toArray()).map((d) => d._id);
      if (ids.length === 0) break;
      const claimId = randomUUID();
      await this.c.jobs.updateMany({ ...due, _id: { $in: ids } }, [
        {
          // The claimed run also gets the job's unit lock (dueUnitToken of its nextRunAt, as a
          // long's digits), unless a unit holds it unexpired.
          $set: {
            lockedUntil: nowMs + leaseMs,
            leaseHolder: holder ?? null,
            claimId,
            updatedAt: this.clock.now(),
            unitToken: { $cond: [lockFree(nowMs), DUE_TOKEN, '$unitToken'] },
            unitUntil: { $cond: [lockFree(nowMs), nowMs + Math.min(leaseMs, UNIT_LOCK_TTL_MS), '$unitUntil'] },
          },
        },
      ]);
      claimed.push(...(await this.c.jobs.find({ _id: { $in: ids }, claimId }, { sort: order }).toArray()).map(toJob));
      // Fewer due than asked: none is left (those another scheduler took in between are its own).
      if (ids.length < want) break;
    }
    return claimed;
  }

  async complete(id: string, completion: JobCompletion): Promise<Job> {
    const now = this.clock.now();
    const token = completion.unitToken;
    if (token === undefined) await this.freeHandedLock(id);
    const doc = await this.c.jobs.findOneAndUpdate(
      // A run holding the unit lock writes only while it still holds it (fencing), and frees it.
      token === undefined ? { _id: id } : { _id: id, unitToken: token },
      {
        $set: {
          nextRunAt: completion.nextRunAt,
          lockedUntil: null,
          'stats.lastRunAt': now,
          'stats.lastSuccessAt': now,
          updatedAt: now,
          ...(token === undefined ? {} : { unitToken: null, unitUntil: null }),
        },
        $inc: { 'stats.runs': 1 },
        // Cursor only moves forward: $max, never $set.
        ...(completion.cursor === undefined || completion.cursor === null ? {} : { $max: { cursor: completion.cursor } }),
      },
      { returnDocument: 'after' },
    );
    if (!doc && token !== undefined) await this.lockLostOrMissing(id);
    return this.found(id, doc);
  }

  async fail(id: string, error: string, retryAtMs: number): Promise<Job> {
    await this.freeHandedLock(id);
    const now = this.clock.now();
    const doc = await this.c.jobs.findOneAndUpdate(
      { _id: id },
      {
        $set: { nextRunAt: retryAtMs, lockedUntil: null, 'stats.lastRunAt': now, 'stats.lastErrorAt': now, 'stats.lastError': error, updatedAt: now },
        $inc: { 'stats.runs': 1, 'stats.failures': 1 },
      },
      { returnDocument: 'after' },
    );
    return this.found(id, doc);
  }

  async advanceCursor(id: string, cursor: number, unitToken?: string): Promise<number | null> {
    const filter = unitToken === undefined ? { _id: id } : { _id: id, unitToken };
    const doc = await this.c.jobs.findOneAndUpdate(filter, { $max: { cursor }, $set: { updatedAt: this.clock.now() } }, { returnDocument: 'after' });
    if (!doc && unitToken !== undefined) await this.lockLostOrMissing(id);
    return this.found(id, doc).cursor;
  }

  /** One conditional `findOneAndUpdate`: free (no token), expired, or already this token's. */
  async lockUnit(id: string, token: string, ttlMs: number): Promise<UnitLockResult | null> {
    if (!Number.isInteger(ttlMs) || ttlMs <= 0) throw new ValidationError('ttlMs', 'a positive integer', ttlMs);
    const now = this.clock.now();
    // Handed over by the claim (or taken before): a read, no write.
    const current = await this.c.jobs.findOne({ _id: id });
    if (!current) return null;
    if (current.unitToken === token && (current.unitUntil ?? 0) > now) return { locked: true, job: toJob(current) };
    const doc = await this.c.jobs.findOneAndUpdate(
      { _id: id, $or: [{ unitToken: null }, { unitUntil: { $lte: now } }, { unitToken: token }] },
      { $set: { unitToken: token, unitUntil: now + ttlMs } },
      { returnDocument: 'after' },
    );
    if (doc) return { locked: true, job: toJob(doc) };
    const held = await this.c.jobs.findOne({ _id: id }, { projection: { unitUntil: 1 } });
    return held ? { locked: false, heldUntil: held.unitUntil ?? 0 } : null;
  }

  async renewUnitLock(id: string, token: string, ttlMs: number): Promise<boolean> {
    const r = await this.c.jobs.updateOne({ _id: id, unitToken: token }, { $set: { unitUntil: this.clock.now() + ttlMs } });
    return r.matchedCount > 0;
  }

  async releaseUnitLock(id: string, token: string): Promise<void> {
    await this.c.jobs.updateOne({ _id: id, unitToken: token }, { $set: { unitToken: null, unitUntil: null } });
  }

  /**
   * Frees the unit lock the claim handed to the job's current run (token `due:<nextRunAt>`) when no
   * unit took it with its token (the other jobs of a per-day unit), before the run's end moves
   * `nextRunAt`; a run that holds its lock frees it with its own token instead.
   */
  private async freeHandedLock(id: string): Promise<void> {
    await this.c.jobs.updateOne({ _id: id, $expr: HANDED }, { $set: { unitToken: null, unitUntil: null } });
  }

  /** A write fenced by a unit token matched nothing: the job is gone (NotFoundError) or another unit holds it. */
  private async lockLostOrMissing(id: string): Promise<never> {
    if (await this.c.jobs.findOne({ _id: id }, { projection: { _id: 1 } })) throw new JobLockLostError(id);
    throw new NotFoundError('job', id);
  }

  async advanceMembers(id: string, progress: { member: string } | { dayCursor: number }): Promise<Job> {
    const now = this.clock.now();
    const update =
      'member' in progress
        ? { $max: { memberCursor: progress.member }, $set: { updatedAt: now } }
        : { $max: { cursor: progress.dayCursor }, $set: { memberCursor: null, updatedAt: now } };
    return this.found(id, await this.c.jobs.findOneAndUpdate({ _id: id }, update, { returnDocument: 'after' }));
  }

  async release(id: string, nextRunAt?: number): Promise<void> {
    // The unit lock the claim handed to the run it leased goes with the lease (one pipeline, so the
    // token is compared with the due time before it changes).
    const set: Record<string, unknown> = {
      lockedUntil: null,
      updatedAt: this.clock.now(),
      unitToken: { $cond: [HANDED, null, '$unitToken'] },
      unitUntil: { $cond: [HANDED, null, '$unitUntil'] },
    };
    if (nextRunAt !== undefined) set.nextRunAt = nextRunAt;
    const r = await this.c.jobs.updateOne({ _id: id }, [{ $set: set }]);
    if (r.matchedCount === 0) throw new NotFoundError('job', id);
  }

  async leases(nowMs: number): Promise<JobLeases[]> {
    const groups = await this.c.jobs
      .aggregate<{ _id: { venue: string; holder: string | null }; jobs: number; untilMs: number }>([
        { $match: { lockedUntil: { $gt: nowMs } } },
        { $group: { _id: { venue: '$venue', holder: { $ifNull: ['$leaseHolder', null] } }, jobs: { $sum: 1 }, untilMs: { $max: '$lockedUntil' } } },
        { $sort: { '_id.venue': 1, '_id.holder': 1 } },
      ])
      .toArray();
    return groups.map((g) => ({ venue: g._id.venue, holder: g._id.holder, jobs: g.jobs, untilMs: g.untilMs }));
  }

  async countsByVenue(): Promise<ConnectorJobCounts[]> {
    const groups = await this.c.jobs
      .aggregate<{ _id: string; jobsCount: number; activeJobsCount: number; lastJobRunAt: number | null }>([
        {
          $group: {
            _id: '$venue',
            jobsCount: { $sum: 1 },
            activeJobsCount: { $sum: { $cond: ['$enabled', 1, 0] } },
            lastJobRunAt: { $max: '$stats.lastRunAt' },
          },
        },
        { $sort: { _id: 1 } },
      ])
      .toArray();
    return groups.map((g) => ({ venue: g._id, jobsCount: g.jobsCount, activeJobsCount: g.activeJobsCount, lastJobRunAt: g.lastJobRunAt ?? null }));
  }

  async releaseLeases(holder: string): Promise<number> {
    // Only the lease: the due time and the unit lock (which a unit under way may hold) stay.
    const r = await this.c.jobs.updateMany({ leaseHolder: holder, lockedUntil: { $ne: null } }, { $set: { lockedUntil: null, leaseHolder: null } });
    return r.modifiedCount;
  }

  async remove(id: string): Promise<boolean> {
    return (await this.c.jobs.deleteOne({ _id: id })).deletedCount > 0;
  }

  private found(id: string, doc: JobDoc | null): Job {
    if (!doc) throw new NotFoundError('job', id);
    return toJob(doc);
  }
}

/** Jobs leased per `updateMany` of a claim: bounds the `$in` list each command carries. */
const CLAIM_BATCH = 1000;

/** Aggregation expression of {@link dueUnitToken}: the token a claim hands to the run due at the job's `nextRunAt` (a long's digits). */
const DUE_TOKEN = { $concat: ['due:', { $toString: { $toLong: '$nextRunAt' } }] };
/** Aggregation test: the job's unit lock is the one its claim handed to the current run (no unit took it with a token of its own). */
const HANDED = { $eq: [{ $ifNull: ['$unitToken', null] }, DUE_TOKEN] };

/** Aggregation test: a job's unit lock is free (no token) or expired at `nowMs`. */
function lockFree(nowMs: number): Record<string, unknown> {
  return { $or: [{ $eq: [{ $ifNull: ['$unitToken', null] }, null] }, { $lte: [{ $ifNull: ['$unitUntil', 0] }, nowMs] }] };
}
