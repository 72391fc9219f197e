import type { Collection, Db } from 'mongodb';
import {
  DEFAULT_BOOK_COOLDOWN,
  FREEZE_DEFAULTS,
  type Backfill,
  type BackfillChunk,
  type Connector,
  type Gap,
  type Job,
  type RateLimitPolicyName,
  type ConnectorStatus,
  type StreamDefinition,
  type Universe,
} from '@tickfleet/core';

/** Mongo stores an absent `freezeResetMs` or `pacing` as null (a $setOnInsert of undefined). */
export type ConnectorDoc = Omit<Connector, 'freezeResetMs' | 'bookCooldown' | 'pacing' | 'bookLoop'> & {
  bookLoop?: Connector['bookLoop'] | null;
  _id: string;
  freezeResetMs?: number | null;
  bookCooldown?: Connector['bookCooldown'];
  pacing?: Connector['pacing'] | null;
};
/**
 * `unitToken`/`unitUntil`: the job's unit lock (`JobsRepo.lockUnit`), absent on documents that never had one;
 * `leaseHolder`: who took the lease (`JobsRepo.claimDue`'s holder), absent on documents never claimed with one;
 * `claimId`: the claim batch that took the latest lease (found again by it after one `updateMany`).
 */
export type JobDoc = Job & { _id: string; unitToken?: string | null; unitUntil?: number | null; leaseHolder?: string | null; claimId?: string };
/** `rev` orders concurrent recounts of a backfill's chunks (optimistic concurrency). */
export type BackfillDoc = Backfill & { _id: string; rev?: number };
/** `_id` is `<backfillId>|<fromMs>`: one document per chunk. */
export type BackfillChunkDoc = BackfillChunk & { _id: string };
export type GapDoc = Gap & { _id: string };
/** `_id` is `<venue>/<name>`. */
export type UniverseDoc = Universe & { _id: string };
/** `_id` is the stream's name; a removed stream stays as a tombstone (`removed`) so the set's version never goes back. */
export type StreamDoc = StreamDefinition & { _id: string; removed?: boolean };

/**
 * One document per venue: a copy of the connector's policy and status (written by connector
 * upsert/setStatus) next to the window/TAT state, so `acquire` is a single-document update that
 * needs no join.
 */
export interface BudgetDoc {
  _id: string;
  policy: RateLimitPolicyName;
  status: ConnectorStatus;
  /** Effective limit, floor(limit * headroom). */
  limit: number;
  periodMs: number;
  windowStart: number | null;
  used: number;
  tat: number | null;
  /** Server time of the last decision; decisions never go back in time. */
  at: number;
  ok: boolean;
  /** Sliding-window: `[index, weight]` per slot still in the window, oldest first (absent before the first decision). */
  slots?: Array<[number, number]>;
}

export interface MongoCollections {
  connectors: Collection<ConnectorDoc>;
  budgets: Collection<BudgetDoc>;
  jobs: Collection<JobDoc>;
  backfills: Collection<BackfillDoc>;
  backfillChunks: Collection<BackfillChunkDoc>;
  gaps: Collection<GapDoc>;
  universes: Collection<UniverseDoc>;
  streams: Collection<StreamDoc>;
}

export function collections(db: Db, prefix: string): MongoCollections {
  return {
    connectors: db.collection<ConnectorDoc>(`${prefix}connectors`),
    budgets: db.collection<BudgetDoc>(`${prefix}budgets`),
    jobs: db.collection<JobDoc>(`${prefix}jobs`),
    backfills: db.collection<BackfillDoc>(`${prefix}backfills`),
    backfillChunks: db.collection<BackfillChunkDoc>(`${prefix}backfill_chunks`),
    gaps: db.collection<GapDoc>(`${prefix}gaps`),
    universes: db.collection<UniverseDoc>(`${prefix}universes`),
    streams: db.collection<StreamDoc>(`${prefix}streams`),
  };
}

/** Indexes the queries need, created at open (createIndexes is a no-op when they exist). */
export async function ensureIndexes(c: MongoCollections): Promise<void> {
  await Promise.all([
    c.connectors.createIndexes([{ key: { status: 1 }, name: 'status' }]),
    c.jobs.createIndexes([
      { key: { enabled: 1, nextRunAt: 1 }, name: 'due' },
      { key: { venue: 1 }, name: 'venue' },
    ]),
    c.backfills.createIndexes([{ key: { jobId: 1 }, name: 'job' }]),
    c.backfillChunks.createIndexes([{ key: { backfillId: 1, fromMs: 1 }, name: 'backfill_from', unique: true }]),
    c.gaps.createIndexes([{ key: { jobId: 1, fromMs: 1, toMs: 1 }, name: 'job_range', unique: true }]),
  ]);
}

export function toConnector(d: ConnectorDoc): Connector {
  return {
    venue: d.venue,
    status: d.status,
    baseUrl: d.baseUrl,
    rateLimit: { policy: d.rateLimit.policy, limit: d.rateLimit.limit, periodMs: d.rateLimit.periodMs, headroom: d.rateLimit.headroom },
    maxInflight: d.maxInflight,
    freezeMs: d.freezeMs,
    // Documents written before the escalation settings existed carry neither field.
    freezeMaxMs: d.freezeMaxMs ?? FREEZE_DEFAULTS.freezeMaxMs,
    ...(d.freezeResetMs != null ? { freezeResetMs: d.freezeResetMs } : {}),
    ...(d.pacing != null ? { pacing: d.pacing } : {}),
    aimd: d.aimd,
    // Documents written before the cooldown settings existed carry none.
    bookCooldown: d.bookCooldown ?? { ...DEFAULT_BOOK_COOLDOWN },
    bookLoop: d.bookLoop ?? undefined,
    createdAt: d.createdAt,
    updatedAt: d.updatedAt,
  };
}

export function toJob(d: JobDoc): Job {
  return {
    id: d._id,
    venue: d.venue,
    type: d.type,
    symbol: d.symbol,
    timeframe: d.timeframe ?? null,
    enabled: d.enabled,
    priority: d.priority,
    nextRunAt: d.nextRunAt,
    lockedUntil: d.lockedUntil ?? null,
    since: d.since ?? null,
    cursor: d.cursor ?? null,
    // Documents written before universe jobs existed carry no perCycle.
    perCycle: d.perCycle ?? null,
    // Documents written before sliced universe jobs existed carry no memberCursor.
    memberCursor: d.memberCursor ?? null,
    stats: {
      runs: d.stats.runs,
      failures: d.stats.failures,
      lastRunAt: d.stats.lastRunAt ?? null,
      lastSuccessAt: d.stats.lastSuccessAt ?? null,
      lastErrorAt: d.stats.lastErrorAt ?? null,
      lastError: d.stats.lastError ?? null,
    },
    createdAt: d.createdAt,
    updatedAt: d.updatedAt,
  };
}

export function toBackfill(d: BackfillDoc): Backfill {
  return {
    id: d._id,
    jobId: d.jobId,
    fromMs: d.fromMs,
    toMs: d.toMs,
    unitsTotal: d.unitsTotal,
    unitsDone: d.unitsDone,
    unitsFailed: d.unitsFailed ?? 0,
    status: d.status,
    createdAt: d.createdAt,
    updatedAt: d.updatedAt,
  };
}

export function toGap(d: GapDoc): Gap {
  return { jobId: d.jobId, fromMs: d.fromMs, toMs: d.toMs, kind: d.kind, detectedAt: d.detectedAt, filledAt: d.filledAt ?? null, attempts: d.attempts };
}

export function toUniverse(d: UniverseDoc): Universe {
  return { venue: d.venue, name: d.name, symbols: d.symbols, createdAt: d.createdAt, updatedAt: d.updatedAt };
}

export function toStream(d: StreamDoc): StreamDefinition {
  return {
    name: d.name,
    venue: d.venue,
    symbols: d.symbols,
    channels: d.channels,
    bookDepth: d.bookDepth ?? null,
    enabled: d.enabled,
    version: d.version,
    createdAt: d.createdAt,
    updatedAt: d.updatedAt,
  };
}

/** Gap `_id`: one document per (jobId, fromMs, toMs). */
export function gapId(jobId: string, fromMs: number, toMs: number): string {
  return `${jobId}|${fromMs}|${toMs}`;
}
