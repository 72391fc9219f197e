import type { Database, Statement, Transaction } from 'better-sqlite3';
import { type Clock, type Job, type JobInput, JobLockLostError, type KeptCall, NotFoundError, TurnGroup, ValidationError } from '@tickfleet/core';
import { type JobCompletion, type JobFilter, type JobLeases, type JobsRepo, UNIT_LOCK_TTL_MS, type UnitLockResult } from '../state-store.js';
import type { ConnectorJobCounts } from '../state-store.js';
import { normalizeJob } from '../internal/inputs.js';
import { bit, toJob, type JobRow } from './rows.js';
import { prepareReturning } from './returning-statement.js';

type KeptCompletion = KeptCall<{ id: string; completion: JobCompletion }, Job>;
/** What one completion of a turn's transaction came to: the job, or its own failure. */
type CompletionOutcome = { job: Job } | { err: unknown };

/** SQL of {@link dueUnitToken}: the unit-lock token a claim hands to the run due at the row's `next_run_at`. */
const DUE_TOKEN = "'due:' || next_run_at";
/** The row's unit lock is the one its claim handed to the current run (no unit took it with a token of its own). */
const HANDED = `unit_token = ${DUE_TOKEN}`;

/** Claim order, applied again to RETURNING rows (SQLite does not order them). */
function byClaimOrder(a: Job, b: Job): number {
  return b.priority - a.priority || a.nextRunAt - b.nextRunAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

export class SqliteJobsRepo implements JobsRepo {
  private readonly upsertStmt: Statement;
  private readonly getStmt: Statement;
  /** A raw `jobs` row (every column, as `SELECT *` and `RETURNING *` list them) read in place. */
  private readonly jobRow: (values: unknown[]) => JobRow;
  private readonly setEnabledStmt: Statement;
  private readonly claimStmt: Statement;
  private readonly completeStmt: Statement;
  private readonly failStmt: Statement;
  private readonly advanceStmt: Statement;
  private readonly memberStmt: Statement;
  private readonly dayDoneStmt: Statement;
  private readonly releaseStmt: Statement;
  private readonly leasesStmt: Statement;
  private readonly countsStmt: Statement;
  private readonly releaseLeasesStmt: Statement;
  private readonly removeStmt: Statement;
  private readonly lockUnitStmt: Statement;
  private readonly unitHolderStmt: Statement;
  private readonly renewUnitStmt: Statement;
  private readonly releaseUnitStmt: Statement;
  /** This turn's completions: the first four written at once, the rest together (see `complete`). */
  private readonly completions = new TurnGroup<{ id: string; completion: JobCompletion }, Job>(4, (kept) => this.completeTogether(kept));
  private readonly completeTurn: Transaction<(kept: KeptCompletion[], outcomes: CompletionOutcome[]) => void>;

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
  ) {
    // Cursor, lease and stats are not in the SET list: they survive any number of upserts.
    this.upsertStmt = prepareReturning(
      db,
      `
      INSERT INTO jobs (id, venue, type, symbol, timeframe, enabled, priority, next_run_at, since, per_cycle, created_at, updated_at)
      VALUES (:id, :venue, :type, :symbol, :timeframe, :enabled, :priority, :nextRunAt, :since, :perCycle, :now, :now)
      ON CONFLICT (id) DO UPDATE SET
        enabled     = CASE WHEN :g_enabled   THEN excluded.enabled     ELSE enabled     END,
        priority    = CASE WHEN :g_priority  THEN excluded.priority    ELSE priority    END,
        next_run_at = CASE WHEN :g_nextRunAt THEN excluded.next_run_at ELSE next_run_at END,
        since       = CASE WHEN :g_since     THEN excluded.since       ELSE since       END,
        per_cycle   = CASE WHEN :g_perCycle  THEN excluded.per_cycle   ELSE per_cycle   END,
        updated_at  = excluded.updated_at
      RETURNING *`,
    );
    // Raw rows read in place (rowReader), as the claim's: every live unit reads its job here.
    this.getStmt = db.prepare('SELECT * FROM jobs WHERE id = ?').raw(true);
    this.jobRow = rowReader(this.getStmt.columns().map((c) => c.name));
    this.setEnabledStmt = prepareReturning(db, 'UPDATE jobs SET enabled = ?, updated_at = ? WHERE id = ? RETURNING *');
    // One statement: an UPDATE takes SQLite's write lock before it reads, so the sub-select and the
    // lease are atomic across connections and processes; a second caller sees the new lockedUntil.
    // The claimed run also gets the job's unit lock (dueUnitToken), unless a unit holds it unexpired.
    // Read with all(), which steps it to its end (see prepareReturning).
    this.claimStmt = db.prepare(
      `
      UPDATE jobs SET locked_until = :now + :leaseMs, lease_holder = :holder, updated_at = :clockNow,
        unit_token = CASE WHEN unit_token IS NULL OR unit_until <= :now THEN ${DUE_TOKEN} ELSE unit_token END,
        unit_until = CASE WHEN unit_token IS NULL OR unit_until <= :now THEN :now + :unitTtlMs ELSE unit_until END
      WHERE id IN (
        SELECT j.id FROM jobs j JOIN connectors c ON c.venue = j.venue
        WHERE j.enabled = 1 AND c.status = 'active' AND j.next_run_at <= :now
          AND (j.locked_until IS NULL OR j.locked_until <= :now)
        ORDER BY j.priority DESC, j.next_run_at ASC, j.id ASC
        LIMIT :max)
      RETURNING *`,
    );
    // Rows come back as arrays: better-sqlite3 builds a 19-key object per row much more slowly
    // than plain JS does, which counts when a scheduler tick claims 100 000 jobs.
    this.claimStmt.raw(true);
    // Cursor only moves forward: MAX(), never a plain assignment. A run holding the unit lock
    // (:token) frees it in the same write, and writes nothing once another unit holds it (fencing);
    // a lock the claim handed to this run and no unit took (the other jobs of a per-day unit) goes too.
    this.completeStmt = prepareReturning(
      db,
      `
      UPDATE jobs SET
        cursor = CASE WHEN :cursor IS NULL THEN cursor WHEN cursor IS NULL THEN :cursor ELSE MAX(cursor, :cursor) END,
        next_run_at = :nextRunAt, locked_until = NULL,
        runs = runs + 1, last_run_at = :now, last_success_at = :now, updated_at = :now,
        unit_token = CASE WHEN :token IS NOT NULL OR ${HANDED} THEN NULL ELSE unit_token END,
        unit_until = CASE WHEN :token IS NOT NULL OR ${HANDED} THEN NULL ELSE unit_until END
      WHERE id = :id AND (:token IS NULL OR unit_token = :token)
      RETURNING *`,
    ).raw(true);
    this.failStmt = prepareReturning(
      db,
      `
      UPDATE jobs SET
        next_run_at = :retryAtMs, locked_until = NULL,
        runs = runs + 1, failures = failures + 1, last_run_at = :now, last_error_at = :now, last_error = :error, updated_at = :now,
        unit_token = CASE WHEN ${HANDED} THEN NULL ELSE unit_token END,
        unit_until = CASE WHEN ${HANDED} THEN NULL ELSE unit_until END
      WHERE id = :id
      RETURNING *`,
    );
    this.advanceStmt = prepareReturning(
      db,
      `
      UPDATE jobs SET cursor = CASE WHEN cursor IS NULL THEN :cursor ELSE MAX(cursor, :cursor) END, updated_at = :now
      WHERE id = :id AND (:token IS NULL OR unit_token = :token)
      RETURNING cursor`,
    );
    // Free, expired or already this token's: the lock and the job's current row in one write.
    this.lockUnitStmt = prepareReturning(
      db,
      `
      UPDATE jobs SET unit_token = :token, unit_until = :now + :ttlMs
      WHERE id = :id AND (unit_token IS NULL OR unit_until <= :now OR unit_token = :token)
      RETURNING *`,
    );
    this.unitHolderStmt = db.prepare('SELECT unit_until FROM jobs WHERE id = ?');
    this.renewUnitStmt = db.prepare('UPDATE jobs SET unit_until = :now + :ttlMs WHERE id = :id AND unit_token = :token');
    this.releaseUnitStmt = db.prepare('UPDATE jobs SET unit_token = NULL, unit_until = NULL WHERE id = :id AND unit_token = :token');
    // Forward only, like the cursor (BINARY collation: the byte order JavaScript sorts ASCII symbols in).
    this.memberStmt = prepareReturning(
      db,
      `
      UPDATE jobs SET member_cursor = CASE WHEN member_cursor IS NULL OR member_cursor < :member THEN :member ELSE member_cursor END, updated_at = :now
      WHERE id = :id
      RETURNING *`,
    );
    this.dayDoneStmt = prepareReturning(
      db,
      `
      UPDATE jobs SET cursor = CASE WHEN cursor IS NULL THEN :cursor ELSE MAX(cursor, :cursor) END, member_cursor = NULL, updated_at = :now
      WHERE id = :id
      RETURNING *`,
    );
    // The unit lock the claim handed to the run it leased goes with the lease.
    this.releaseStmt = db.prepare(`
      UPDATE jobs SET locked_until = NULL, next_run_at = COALESCE(:nextRunAt, next_run_at), updated_at = :now,
        unit_token = CASE WHEN ${HANDED} THEN NULL ELSE unit_token END,
        unit_until = CASE WHEN ${HANDED} THEN NULL ELSE unit_until END
      WHERE id = :id`);
    this.leasesStmt = db.prepare(`
      SELECT venue, lease_holder AS holder, COUNT(*) AS jobs, MAX(locked_until) AS untilMs FROM jobs
      WHERE locked_until > ? GROUP BY venue, lease_holder ORDER BY venue, lease_holder`);
    this.countsStmt = db.prepare(`
      SELECT venue, COUNT(*) AS jobsCount, SUM(enabled) AS activeJobsCount, MAX(last_run_at) AS lastJobRunAt FROM jobs
      GROUP BY venue ORDER BY venue`);
    // Only the lease: the due time and the unit lock (which a unit under way may hold) stay.
    this.releaseLeasesStmt = db.prepare('UPDATE jobs SET locked_until = NULL, lease_holder = NULL WHERE lease_holder = ? AND locked_until IS NOT NULL');
    this.removeStmt = db.prepare('DELETE FROM jobs WHERE id = ?');
    this.completeTurn = db.transaction((kept: KeptCompletion[], outcomes: CompletionOutcome[]) => {
      for (const { item } of kept) {
        try {
          outcomes.push({ job: this.completeOne(item.id, item.completion) });
        } catch (err) {
          // A lost lock or a missing job is this completion's answer alone; anything else (SQLite's
          // own failures) ends the transaction: rolled back, every call of the turn fails with it.
          if (!(err instanceof JobLockLostError || err instanceof NotFoundError)) throw err;
          outcomes.push({ err });
        }
      }
    });
  }

  async upsert(input: JobInput): Promise<Job> {
    const { job, given } = normalizeJob(input);
    const row = this.upsertStmt.get({
      id: job.id,
      venue: job.venue,
      type: job.type,
      symbol: job.symbol,
      timeframe: job.timeframe,
      enabled: bit(job.enabled),
      priority: job.priority,
      nextRunAt: job.nextRunAt,
      since: job.since,
      perCycle: job.perCycle,
      now: this.clock.now(),
      g_enabled: bit(given.enabled),
      g_priority: bit(given.priority),
      g_nextRunAt: bit(given.nextRunAt),
      g_since: bit(given.since),
      g_perCycle: bit(given.perCycle),
    }) as JobRow;
    return toJob(row);
  }

  async get(id: string): Promise<Job | null> {
    const values = this.getStmt.get(id) as unknown[] | undefined;
    return values ? toJob(this.jobRow(values)) : null;
  }

  async list(filter: JobFilter = {}): Promise<Job[]> {
    const where: string[] = [];
    const params: (string | number)[] = [];
    if (filter.venue !== undefined) {
      where.push('venue = ?');
      params.push(filter.venue);
    }
    if (filter.enabled !== undefined) {
      where.push('enabled = ?');
      params.push(bit(filter.enabled));
    }
    if (filter.type !== undefined) {
      where.push('type = ?');
      params.push(filter.type);
    }
    const sql = `SELECT * FROM jobs ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY id`;
    return (this.db.prepare(sql).all(...params) as JobRow[]).map(toJob);
  }

  async setEnabled(id: string, enabled: boolean): Promise<Job> {
    return this.found(id, this.setEnabledStmt.get(bit(enabled), this.clock.now(), id));
  }

  async claimDue(nowMs: number, max: number, leaseMs: number, holder?: string): Promise<Job[]> {
    if (!Number.isInteger(max) || max < 0) throw new ValidationError('max', 'a non-negative integer', max);
    if (!Number.isInteger(leaseMs) || leaseMs <= 0) throw new ValidationError('leaseMs', 'a positive integer', leaseMs);
    if (max === 0) return [];
    const rows = this.claimStmt.all({
      now: nowMs,
      leaseMs,
      max,
      holder: holder ?? null,
      clockNow: this.clock.now(),
      unitTtlMs: Math.min(leaseMs, UNIT_LOCK_TTL_MS),
    }) as unknown[][];
    return rows.map((values) => toJob(this.jobRow(values))).sort(byClaimOrder);
  }

  /**
   * The first four completions of an event-loop turn are written at once; the ones after them wait
   * for the turn's end ({@link TurnGroup}) and go in one transaction (`BEGIN IMMEDIATE`), each still
   * its own statement with its own answer. A busy worker finishes many units per turn (every unit
   * whose records one sink batch stored), and each completion moves its row in the `jobs_due`
   * index: one transaction writes the shared pages of those moves once instead of once per job, and
   * takes the file's write lock once. With 1 / 4 processes, 64 per turn cost 18 / 27 µs of CPU each
   * and 16 per turn 20-29 / 36 µs, against 32-35 / 43-48 µs one per turn
   * (`scripts/bench/store-completions.ts`). A lost unit lock or a missing job fails that completion
   * alone; any other failure (another process holding the write lock, a full disk) rolls the whole
   * transaction back and fails every call in it, each of which the store's guard then retries on its own.
   */
  complete(id: string, completion: JobCompletion): Promise<Job> {
    return this.completions.run({ id, completion }, () => this.completeOne(id, completion));
  }

  /** The turn's end: the completions past its first four, in one transaction. */
  private completeTogether(kept: KeptCompletion[]): void {
    const outcomes: CompletionOutcome[] = [];
    try {
      this.completeTurn.immediate(kept, outcomes);
    } catch (err) {
      for (const k of kept) k.reject(err);
      return;
    }
    kept.forEach((k, i) => {
      const outcome = outcomes[i]!;
      if ('job' in outcome) k.resolve(outcome.job);
      else k.reject(outcome.err);
    });
  }

  private completeOne(id: string, completion: JobCompletion): Job {
    const token = completion.unitToken ?? null;
    const values = this.completeStmt.get({ id, cursor: completion.cursor ?? null, nextRunAt: completion.nextRunAt, now: this.clock.now(), token }) as
      unknown[] | undefined;
    if (!values && token !== null) this.lockLostOrMissing(id);
    return this.found(id, values && this.jobRow(values));
  }

  async fail(id: string, error: string, retryAtMs: number): Promise<Job> {
    return this.found(id, this.failStmt.get({ id, error, retryAtMs, now: this.clock.now() }));
  }

  async advanceCursor(id: string, cursor: number, unitToken?: string): Promise<number | null> {
    const token = unitToken ?? null;
    const row = this.advanceStmt.get({ id, cursor, now: this.clock.now(), token }) as { cursor: number | null } | undefined;
    if (!row && token !== null) this.lockLostOrMissing(id);
    if (!row) throw new NotFoundError('job', id);
    return row.cursor;
  }

  async lockUnit(id: string, token: string, ttlMs: number): Promise<UnitLockResult | null> {
    if (!Number.isInteger(ttlMs) || ttlMs <= 0) throw new ValidationError('ttlMs', 'a positive integer', ttlMs);
    const now = this.clock.now();
    // Handed over by the claim (or taken before): a read, no write.
    const values = this.getStmt.get(id) as unknown[] | undefined;
    if (!values) return null;
    const current = this.jobRow(values) as JobRow & { unit_token: string | null; unit_until: number | null };
    if (current.unit_token === token && (current.unit_until ?? 0) > now) return { locked: true, job: toJob(current) };
    const row = this.lockUnitStmt.get({ id, token, ttlMs, now }) as JobRow | undefined;
    if (row) return { locked: true, job: toJob(row) };
    const held = this.unitHolderStmt.get(id) as { unit_until: number | null } | undefined;
    return held ? { locked: false, heldUntil: held.unit_until ?? 0 } : null;
  }

  async renewUnitLock(id: string, token: string, ttlMs: number): Promise<boolean> {
    return this.renewUnitStmt.run({ id, token, ttlMs, now: this.clock.now() }).changes > 0;
  }

  async releaseUnitLock(id: string, token: string): Promise<void> {
    this.releaseUnitStmt.run({ id, token });
  }

  async advanceMembers(id: string, progress: { member: string } | { dayCursor: number }): Promise<Job> {
    const now = this.clock.now();
    const row =
      'member' in progress ? this.memberStmt.get({ id, member: progress.member, now }) : this.dayDoneStmt.get({ id, cursor: progress.dayCursor, now });
    return this.found(id, row);
  }

  async release(id: string, nextRunAt?: number): Promise<void> {
    const info = this.releaseStmt.run({ id, nextRunAt: nextRunAt ?? null, now: this.clock.now() });
    if (info.changes === 0) throw new NotFoundError('job', id);
  }

  async leases(nowMs: number): Promise<JobLeases[]> {
    return this.leasesStmt.all(nowMs) as JobLeases[];
  }

  async countsByVenue(): Promise<ConnectorJobCounts[]> {
    return this.countsStmt.all() as ConnectorJobCounts[];
  }

  async releaseLeases(holder: string): Promise<number> {
    return this.releaseLeasesStmt.run(holder).changes;
  }

  async remove(id: string): Promise<boolean> {
    return this.removeStmt.run(id).changes > 0;
  }

  /** A write fenced by a unit token matched no row: the job is gone (NotFoundError) or another unit holds it. */
  private lockLostOrMissing(id: string): never {
    if (this.unitHolderStmt.get(id)) throw new JobLockLostError(id);
    throw new NotFoundError('job', id);
  }

  private found(id: string, row: unknown): Job {
    if (!row) throw new NotFoundError('job', id);
    return toJob(row as JobRow);
  }
}

/**
 * Reads a raw row (better-sqlite3's array of column values) as a {@link JobRow} in place: a
 * small object whose getters index the array, instead of a copy with one key per column (for
 * which better-sqlite3 interns every column name again). A 100,000-job claim makes one per row,
 * each read once by `toJob`; so do a live unit's job read and its completion.
 */
function rowReader(columns: string[]): (values: unknown[]) => JobRow {
  class Row {
    // Private, so no column name can collide with it.
    readonly #values: unknown[];
    constructor(values: unknown[]) {
      this.#values = values;
    }
    static column(i: number): (this: Row) => unknown {
      return function (this: Row) {
        return this.#values[i];
      };
    }
  }
  for (const [i, name] of columns.entries()) Object.defineProperty(Row.prototype, name, { get: Row.column(i) });
  return (values) => new Row(values) as unknown as JobRow;
}
