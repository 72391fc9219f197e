import type { Database, Statement } from 'better-sqlite3';
import { type Backfill, type BackfillChunk, BackfillChunkStatus, BackfillStatus, type Clock, NotFoundError, parseOrThrow } from '@tickfleet/core';
import type { BackfillCreate, BackfillsRepo, ChunkRange, OwedChunk, OwedChunksQuery } from '../state-store.js';
import { mergeRanges } from '../internal/merge-ranges.js';
import { validateBackfillCreate } from '../internal/record-inputs.js';
import { toBackfill, type BackfillRow } from './rows.js';
import { prepareReturning } from './returning-statement.js';

interface ChunkRow {
  backfill_id: string;
  from_ms: number;
  to_ms: number;
  idx: number;
  status: BackfillChunk['status'];
  error: string | null;
  updated_at: number;
  job_id?: string;
}

function toChunk(r: ChunkRow): BackfillChunk {
  return { backfillId: r.backfill_id, fromMs: r.from_ms, toMs: r.to_ms, index: r.idx, status: r.status, error: r.error, updatedAt: r.updated_at };
}

export class SqliteBackfillsRepo implements BackfillsRepo {
  private readonly createStmt: Statement;
  private readonly createChunkStmt: Statement;
  private readonly getStmt: Statement;
  private readonly chunkDoneStmt: Statement;
  private readonly chunkFailedStmt: Statement;
  private readonly chunkStatusStmt: Statement;
  private readonly applyStmt: Statement;
  private readonly setStatusStmt: Statement;
  private readonly owedStmt: Statement;
  private readonly requestedStmt: Statement;

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
  ) {
    // Creating an existing id returns the stored record unchanged (ids are deterministic, so a
    // retried `backfill` command must not reset progress).
    this.createStmt = prepareReturning(
      db,
      `
      INSERT INTO backfills (id, job_id, from_ms, to_ms, units_total, units_done, units_failed, status, created_at, updated_at)
      VALUES (:id, :jobId, :fromMs, :toMs, :unitsTotal, 0, 0, 'pending', :now, :now)
      ON CONFLICT (id) DO UPDATE SET id = id
      RETURNING *`,
    );
    this.createChunkStmt = db.prepare(`
      INSERT INTO backfill_chunks (backfill_id, from_ms, to_ms, idx, status, error, updated_at)
      VALUES (:id, :fromMs, :toMs, :idx, 'pending', NULL, :now)
      ON CONFLICT (backfill_id, from_ms) DO NOTHING`);
    this.getStmt = db.prepare('SELECT * FROM backfills WHERE id = ?');
    // A chunk not recorded at create (a backfill from before chunks were tracked) is inserted: the
    // count of distinct done chunks is then still exact.
    this.chunkDoneStmt = db.prepare(`
      INSERT INTO backfill_chunks (backfill_id, from_ms, to_ms, idx, status, error, updated_at)
      VALUES (:id, :fromMs, :toMs, -1, 'done', NULL, :now)
      ON CONFLICT (backfill_id, from_ms) DO UPDATE SET status = 'done', error = NULL, updated_at = :now`);
    this.chunkFailedStmt = db.prepare(`
      INSERT INTO backfill_chunks (backfill_id, from_ms, to_ms, idx, status, error, updated_at)
      VALUES (:id, :fromMs, :toMs, -1, 'failed', :reason, :now)
      ON CONFLICT (backfill_id, from_ms) DO UPDATE SET status = 'failed', error = :reason, updated_at = :now
      WHERE status <> 'done'`);
    this.chunkStatusStmt = db.prepare('SELECT status FROM backfill_chunks WHERE backfill_id = ? AND from_ms = ?').pluck();
    // Progress moves by the chunk's own change of status (read before and after its write in the
    // same transaction), so a repeat changes nothing and the cost does not grow with the number of
    // chunks (a recount read every chunk of the backfill on every settle: quadratic over a backfill).
    // A done chunk never changes again, so the capped done count only ever rises.
    this.applyStmt = prepareReturning(
      db,
      `
      UPDATE backfills SET
        units_done = MIN(units_total, units_done + :dDone),
        units_failed = units_failed + :dFailed,
        status = CASE
          WHEN status = 'cancelled' THEN status
          WHEN MIN(units_total, units_done + :dDone) >= units_total THEN 'done'
          WHEN MIN(units_total, units_done + :dDone) + units_failed + :dFailed >= units_total THEN 'failed'
          ELSE 'running' END,
        updated_at = :now
      WHERE id = :id
      RETURNING *`,
    );
    this.setStatusStmt = prepareReturning(db, 'UPDATE backfills SET status = ?, updated_at = ? WHERE id = ? RETURNING *');
    this.owedStmt = db.prepare(`
      SELECT c.*, b.job_id FROM backfill_chunks c JOIN backfills b ON b.id = c.backfill_id
      WHERE c.status = 'pending' AND b.status IN ('pending', 'running') AND b.created_at <= :createdBefore
        AND (c.backfill_id, c.from_ms) > (:afterId, :afterFrom)
      ORDER BY c.backfill_id, c.from_ms
      LIMIT :limit`);
    this.requestedStmt = db.prepare(`
      SELECT c.from_ms, c.to_ms FROM backfill_chunks c JOIN backfills b ON b.id = c.backfill_id
      WHERE b.job_id = :jobId AND NOT (b.status = 'cancelled' AND c.status = 'pending')
      UNION ALL
      SELECT b.from_ms, b.to_ms FROM backfills b
      WHERE b.job_id = :jobId AND b.status <> 'cancelled'
        AND (SELECT COUNT(*) FROM backfill_chunks c WHERE c.backfill_id = b.id) < b.units_total`);
  }

  async create(input: BackfillCreate): Promise<Backfill> {
    const b = validateBackfillCreate(input);
    const now = this.clock.now();
    const tx = this.db.transaction(() => {
      const row = this.createStmt.get({ id: b.id, jobId: b.jobId, fromMs: b.fromMs, toMs: b.toMs, unitsTotal: b.chunks.length, now }) as BackfillRow;
      for (const [idx, c] of b.chunks.entries()) this.createChunkStmt.run({ id: b.id, fromMs: c.fromMs, toMs: c.toMs, idx, now });
      return row;
    });
    return toBackfill(tx.immediate());
  }

  async get(id: string): Promise<Backfill | null> {
    const row = this.getStmt.get(id) as BackfillRow | undefined;
    return row ? toBackfill(row) : null;
  }

  async list(filter: { jobId?: string; status?: BackfillStatus } = {}): Promise<Backfill[]> {
    const where: string[] = [];
    const params: string[] = [];
    if (filter.jobId !== undefined) {
      where.push('job_id = ?');
      params.push(filter.jobId);
    }
    if (filter.status !== undefined) {
      where.push('status = ?');
      params.push(filter.status);
    }
    const sql = `SELECT * FROM backfills ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY created_at, id`;
    return (this.db.prepare(sql).all(...params) as BackfillRow[]).map(toBackfill);
  }

  async chunkDone(id: string, range: ChunkRange): Promise<Backfill> {
    return this.settle(id, range, () => this.chunkDoneStmt.run({ id, fromMs: range.fromMs, toMs: range.toMs, now: this.clock.now() }));
  }

  async chunkFailed(id: string, range: ChunkRange, reason: string): Promise<Backfill> {
    return this.settle(id, range, () => this.chunkFailedStmt.run({ id, fromMs: range.fromMs, toMs: range.toMs, reason, now: this.clock.now() }));
  }

  async chunks(id: string, filter: { status?: BackfillChunk['status'] } = {}): Promise<BackfillChunk[]> {
    const status = filter.status === undefined ? undefined : parseOrThrow(BackfillChunkStatus, filter.status, 'status');
    const rows = (
      status === undefined
        ? this.db.prepare('SELECT * FROM backfill_chunks WHERE backfill_id = ? ORDER BY from_ms').all(id)
        : this.db.prepare('SELECT * FROM backfill_chunks WHERE backfill_id = ? AND status = ? ORDER BY from_ms').all(id, status)
    ) as ChunkRow[];
    return rows.map(toChunk);
  }

  async owedChunks(options: OwedChunksQuery): Promise<OwedChunk[]> {
    const rows = this.owedStmt.all({
      createdBefore: options.createdBefore ?? Number.MAX_SAFE_INTEGER,
      afterId: options.after?.backfillId ?? '',
      afterFrom: options.after?.fromMs ?? Number.MIN_SAFE_INTEGER,
      limit: Math.max(1, Math.floor(options.limit)),
    }) as Array<ChunkRow & { job_id: string }>;
    return rows.map((r) => ({ ...toChunk(r), jobId: r.job_id }));
  }

  async setStatus(id: string, status: BackfillStatus): Promise<Backfill> {
    const valid = parseOrThrow(BackfillStatus, status, 'status');
    const row = this.setStatusStmt.get(valid, this.clock.now(), id) as BackfillRow | undefined;
    if (!row) throw new NotFoundError('backfill', id);
    return toBackfill(row);
  }

  async requestedRanges(jobId: string): Promise<ChunkRange[]> {
    const rows = this.requestedStmt.all({ jobId }) as Array<{ from_ms: number; to_ms: number }>;
    return mergeRanges(rows.map((r) => ({ fromMs: r.from_ms, toMs: r.to_ms })));
  }

  /** Records one chunk's outcome and moves the backfill's counters by its change, in one write transaction. */
  private settle(id: string, range: ChunkRange, write: () => void): Backfill {
    const tx = this.db.transaction(() => {
      if (!this.getStmt.get(id)) throw new NotFoundError('backfill', id);
      const before = this.chunkStatusStmt.get(id, range.fromMs) as BackfillChunk['status'] | undefined;
      write();
      const after = this.chunkStatusStmt.get(id, range.fromMs) as BackfillChunk['status'] | undefined;
      const dDone = Number(after === 'done') - Number(before === 'done');
      const dFailed = Number(after === 'failed') - Number(before === 'failed');
      return this.applyStmt.get({ id, dDone, dFailed, now: this.clock.now() }) as BackfillRow;
    });
    return toBackfill(tx.immediate());
  }
}
