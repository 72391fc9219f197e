import type {
  Backfill,
  BackfillChunk,
  BackfillChunkStatus,
  BackfillStatus,
  Connector,
  ConnectorInput,
  ConnectorStatus,
  Gap,
  GapKind,
  Job,
  JobInput,
  JobStats,
  StreamDefinition,
  StreamInput,
  Universe,
} from '@tickfleet/core';
import type { BudgetsRepo } from '@tickfleet/budget';

export type { AcquireResult, BudgetUsage, BudgetsRepo } from '@tickfleet/budget';

export interface JobCompletion {
  /** New cursor; ignored when lower than the stored one (cursors only move forward). */
  cursor?: number | null;
  nextRunAt: number;
  /** Records written by this run, for stats. */
  records?: number;
  /**
   * The unit lock the run holds ({@link JobsRepo.lockUnit}): released by the same write. When
   * another unit holds the job's lock now, the completion changes nothing and throws JobLockLostError.
   */
  unitToken?: string;
}

/** What {@link JobsRepo.lockUnit} found: the job, now locked for the caller; or another unit holding it. */
export type UnitLockResult = { locked: true; job: Job } | { locked: false; heldUntil: number };

/**
 * The unit-lock token a claim hands to the run it leases ({@link JobsRepo.claimDue}): the run's due
 * time, which the unit the scheduler makes of the claim carries as `dueAt` (and which is part of
 * its deterministic id, so a reclaimed lease hands the lock to the same unit).
 */
export function dueUnitToken(nextRunAt: number): string {
  return `due:${nextRunAt}`;
}

/**
 * How long a unit lock lasts without renewal (the worker's default TTL) and how long a claim hands
 * one to its run: a run that is not under way by then takes it with a write, and a unit with
 * another token (queued by an older version, say) waits at most this long, as for a holder that died.
 */
export const UNIT_LOCK_TTL_MS = 30_000;

/** Unexpired leases of one venue taken by one holder ({@link JobsRepo.leases}). */
export interface JobLeases {
  venue: string;
  /** The `holder` the claims named (a scheduler's `<redis epoch>/<id>`); null for claims that named none. */
  holder: string | null;
  /** Jobs whose lease has not ended. */
  jobs: number;
  /** When the latest of those leases ends (epoch ms). */
  untilMs: number;
}

/**
 * A venue's jobs counted ({@link JobsRepo.countsByVenue}): the connector design's `jobs_count`,
 * `active_jobs_count` and `last_job_run_time`, derived from the jobs rather than kept on the
 * connector, so they cannot drift from what the jobs say.
 */
export interface ConnectorJobCounts {
  venue: string;
  /** Every job of the venue. */
  jobsCount: number;
  /** Its enabled jobs: those the scheduler runs. */
  activeJobsCount: number;
  /** When a unit of one of its jobs last ended, ok or failed (store clock, epoch ms); null when none has. */
  lastJobRunAt: number | null;
}

export interface JobFilter {
  venue?: string;
  enabled?: boolean;
  type?: Job['type'];
}

export interface ConnectorsRepo {
  /** Creates or updates the one record of `input.venue`; absent fields keep their stored values on update. */
  upsert(input: ConnectorInput): Promise<Connector>;
  get(venue: string): Promise<Connector | null>;
  list(): Promise<Connector[]>;
  /** Throws NotFoundError for an unknown venue. */
  setStatus(venue: string, status: ConnectorStatus): Promise<Connector>;
}

export interface JobsRepo {
  /** Creates or updates by id (derived from venue/symbol/timeframe/type); cursor and stats survive updates. */
  upsert(input: JobInput): Promise<Job>;
  get(id: string): Promise<Job | null>;
  list(filter?: JobFilter): Promise<Job[]>;
  setEnabled(id: string, enabled: boolean): Promise<Job>;
  /**
   * Atomically leases up to `max` due jobs: enabled, connector active, `nextRunAt <= nowMs`,
   * lease free or expired. Sets `lockedUntil = nowMs + leaseMs`. Higher priority, then earliest due, first.
   * Two concurrent callers never receive the same job. In the same write each claimed job's unit
   * lock goes to the run it leases, token {@link dueUnitToken}(nextRunAt), for {@link UNIT_LOCK_TTL_MS}
   * (or the lease, when shorter), unless another unit holds the lock unexpired: the unit then takes
   * it with a read (`lockUnit`). `holder` is recorded with each lease ({@link leases}, {@link releaseLeases}).
   */
  claimDue(nowMs: number, max: number, leaseMs: number, holder?: string): Promise<Job[]>;
  /** The leases not ended at `nowMs`, counted per venue and holder, ordered by venue then holder (null first). */
  leases(nowMs: number): Promise<JobLeases[]>;
  /** Per venue with jobs, in venue order: its jobs, enabled jobs and last run, in one grouped read. */
  countsByVenue(): Promise<ConnectorJobCounts[]>;
  /**
   * Ends every lease `holder` took, ended or not, without recording a run: the jobs' due times and
   * unit locks stay as they are (a unit under way keeps its job's lock, and claiming the job again
   * gives its unit the same deterministic id). Returns how many leases it ended.
   */
  releaseLeases(holder: string): Promise<number>;
  /** Records a successful run: cursor = max(cursor, completion.cursor), releases the lease, bumps stats. */
  complete(id: string, completion: JobCompletion): Promise<Job>;
  /** Records a failed run: releases the lease, schedules `retryAtMs`, bumps failures and lastError. */
  fail(id: string, error: string, retryAtMs: number): Promise<Job>;
  /**
   * Moves the cursor forward only (never back); returns the stored cursor. With `unitToken`, only
   * while that unit lock holds the job (else JobLockLostError, nothing changed).
   */
  advanceCursor(id: string, cursor: number, unitToken?: string): Promise<number | null>;
  /**
   * The job's unit lock: at most one unit that moves a job's cursor runs at a time (live runs,
   * book polls, file and series units; backfill chunks never move it). Takes the lock for `token`
   * until `now + ttlMs` when it is free, expired or already `token`'s, and returns the job as it
   * is then, in the same write (the unit needs no separate read). When `token` already holds it
   * unexpired (the claim handed it over: {@link dueUnitToken}), the job is only read. Returns null
   * for an unknown job. Expiry uses the caller's clock, like the scheduler's leases.
   */
  lockUnit(id: string, token: string, ttlMs: number): Promise<UnitLockResult | null>;
  /** Extends the unit lock while `token` holds it; false when it does not (lost). */
  renewUnitLock(id: string, token: string, ttlMs: number): Promise<boolean>;
  /** Frees the unit lock if `token` holds it (a completion frees it by itself). */
  releaseUnitLock(id: string, token: string): Promise<void>;
  /**
   * Progress of a per-day universe job planned in slices (Polygon day bars over `@<name>`): either
   * the last member stored of the day after the cursor (`member`, forward only, so a re-delivered
   * earlier slice never moves it back), or, once the day's last slice is
   * stored, the cursor moved forward to `dayCursor` and the member cursor cleared in the same write
   * (two writes could leave a finished day's member cursor on the next day, skipping its members).
   */
  advanceMembers(id: string, progress: { member: string } | { dayCursor: number }): Promise<Job>;
  /** Releases a lease without recording a run (unit handed to the queue or abandoned). */
  release(id: string, nextRunAt?: number): Promise<void>;
  remove(id: string): Promise<boolean>;
}

/** The range of one backfill chunk; a chunk is identified by (backfillId, fromMs). */
export interface ChunkRange {
  fromMs: number;
  toMs: number;
}

export interface BackfillCreate {
  id: string;
  jobId: string;
  fromMs: number;
  toMs: number;
  /** The page-sized chunks, one unit each, in unit order; `unitsTotal` is their count. */
  chunks: ChunkRange[];
}

/** A chunk a running or pending backfill still owes, with what a unit for it needs. */
export interface OwedChunk extends BackfillChunk {
  jobId: string;
}

export interface OwedChunksQuery {
  limit: number;
  after?: { backfillId: string; fromMs: number };
  createdBefore?: number;
}

export interface BackfillsRepo {
  /** Records a backfill and its chunks; creating an existing id returns it unchanged. */
  create(input: BackfillCreate): Promise<Backfill>;
  get(id: string): Promise<Backfill | null>;
  list(filter?: { jobId?: string; status?: BackfillStatus }): Promise<Backfill[]>;
  /**
   * Marks the chunk starting at `range.fromMs` done (idempotent: a unit that runs twice counts
   * once; done wins over an earlier failure). The backfill becomes `done` when every chunk is
   * done, `failed` when every chunk has ended and one of them failed; `cancelled` stays.
   */
  chunkDone(id: string, range: ChunkRange): Promise<Backfill>;
  /** Marks the chunk failed with `reason` unless it is already done; see {@link chunkDone} for the status. */
  chunkFailed(id: string, range: ChunkRange, reason: string): Promise<Backfill>;
  /** The backfill's chunks in unit order, optionally only those with `status`. */
  chunks(id: string, filter?: { status?: BackfillChunkStatus }): Promise<BackfillChunk[]>;
  /**
   * Pending chunks of pending/running backfills, ordered by (backfillId, fromMs), at most `limit`
   * after the key `after` (keyset paging for the scheduler's repair pass); with `createdBefore`,
   * only of backfills created at or before that instant (store clock, epoch ms).
   */
  owedChunks(options: OwedChunksQuery): Promise<OwedChunk[]>;
  setStatus(id: string, status: BackfillStatus): Promise<Backfill>;
  /**
   * What the job's backfills asked for, merged where they touch, oldest first: every chunk, less
   * the pending chunks of a cancelled backfill (withdrawn before they were fetched); a backfill
   * whose chunks were not all recorded (created before chunks were tracked) counts whole.
   */
  requestedRanges(jobId: string): Promise<ChunkRange[]>;
}

export interface GapRecord {
  jobId: string;
  fromMs: number;
  toMs: number;
  kind?: GapKind;
}

export interface GapsRepo {
  /** Records a gap; recording the same (jobId, fromMs, toMs) again updates its kind, reopens it if filled, and keeps one record. */
  record(gap: GapRecord, detectedAt: number): Promise<Gap>;
  list(filter?: { jobId?: string; open?: boolean; kind?: GapKind }): Promise<Gap[]>;
  /** Marks open gaps of `jobId` lying inside [fromMs, toMs) filled at `filledAt`; returns how many. */
  markFilled(jobId: string, fromMs: number, toMs: number, filledAt: number): Promise<number>;
  /** Counts a fill attempt on a gap (so venue holes are not retried forever). */
  attempt(jobId: string, fromMs: number, toMs: number): Promise<void>;
  /**
   * Removes the record of exactly (jobId, fromMs, toMs): a range recorded as missing that was never
   * requested, so never a loss. Returns whether it was there.
   */
  remove(jobId: string, fromMs: number, toMs: number): Promise<boolean>;
}

export interface UniversesRepo {
  /**
   * Creates or replaces the members of universe `<venue>/<name>` (validated symbols, duplicates
   * dropped, at most MAX_UNIVERSE_SYMBOLS); `createdAt` survives a replace.
   */
  set(venue: string, name: string, symbols: readonly string[]): Promise<Universe>;
  get(venue: string, name: string): Promise<Universe | null>;
  /** Every universe, or those of one venue, ordered by venue then name. */
  list(venue?: string): Promise<Universe[]>;
  remove(venue: string, name: string): Promise<boolean>;
  /** The universe's current members; throws NotFoundError naming `<venue>/<name>` when it does not exist. */
  members(venue: string, name: string): Promise<string[]>;
}

export interface StreamFilter {
  venue?: string;
  enabled?: boolean;
}

export interface StreamsRepo {
  /**
   * Creates or replaces stream `input.name` (validated by parseStreamInput); `createdAt` survives a
   * replace and an absent `enabled` keeps the stored value (true on create). A replace that
   * changes nothing leaves the stream and streamsVersion() as they are, so holders do not
   * reconnect for nothing.
   */
  upsert(input: StreamInput): Promise<StreamDefinition>;
  get(name: string): Promise<StreamDefinition | null>;
  /** Every stream, or those matching `filter`, ordered by name. */
  list(filter?: StreamFilter): Promise<StreamDefinition[]>;
  remove(name: string): Promise<boolean>;
  /** Throws NotFoundError naming the stream when it does not exist; setting the current value changes nothing. */
  setEnabled(name: string, enabled: boolean): Promise<StreamDefinition>;
  /**
   * A counter moved by every change of the set (a stream added, replaced, enabled, disabled or
   * removed) in the same write as the change: a holder that read the same value before and after
   * listing has seen the current set. 0 for a store without streams. It is the sum of every
   * stream's version, removed ones included (a removal leaves a tombstone), so a name added again
   * goes on from its removed stream's version.
   */
  streamsVersion(): Promise<number>;
}

/** The state store every scheduler, worker and CLI shares. Adapters: SQLite, MongoDB. */
export interface StateStore {
  readonly kind: 'sqlite' | 'mongodb';
  readonly connectors: ConnectorsRepo;
  readonly jobs: JobsRepo;
  readonly budgets: BudgetsRepo;
  readonly backfills: BackfillsRepo;
  readonly gaps: GapsRepo;
  readonly universes: UniversesRepo;
  readonly streams: StreamsRepo;
  /** Cheap round trip for readiness checks. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

export type { JobStats };
