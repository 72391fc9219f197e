import type { Database, Statement } from 'better-sqlite3';
import { type Backfill, BackfillStatus, type Clock, NotFoundError, parseOrThrow } from '@tickfleet/core';
import type { BackfillCreate, BackfillsRepo } from '../state-store.js';
import { validateBackfillCreate } from '../internal/record-inputs.js';
import { toBackfill, type BackfillRow } from './rows.js';

export class SqliteBackfillsRepo implements BackfillsRepo {
  private readonly createStmt: Statement;
  private readonly getStmt: Statement;
  private readonly unitDoneStmt: Statement;
  private readonly setStatusStmt: Statement;

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
  ) {
    // Creating an existing id returns the stored record unchanged (ids are deterministic, so a
    // retried `backfill` command must not reset progress).
    this.createStmt = db.prepare(`
      INSERT INTO backfills (id, job_id, from_ms, to_ms, units_total, units_done, status, created_at, updated_at)
      VALUES (:id, :jobId, :fromMs, :toMs, :unitsTotal, 0, 'pending', :now, :now)
      ON CONFLICT (id) DO UPDATE SET id = id
      RETURNING *`);
    this.getStmt = db.prepare('SELECT * FROM backfills WHERE id = ?');
    // unitsDone never exceeds unitsTotal; reaching it finishes the backfill unless an operator
    // already cancelled it or it failed.
    this.unitDoneStmt = db.prepare(`
      UPDATE backfills SET
        units_done = MIN(units_total, units_done + :n),
        status = CASE WHEN status IN ('cancelled', 'failed') THEN status
                      WHEN units_done + :n >= units_total THEN 'done'
                      ELSE 'running' END,
        updated_at = :now
      WHERE id = :id
      RETURNING *`);
    this.setStatusStmt = db.prepare('UPDATE backfills SET status = ?, updated_at = ? WHERE id = ? RETURNING *');
  }

  async create(input: BackfillCreate): Promise<Backfill> {
    const b = validateBackfillCreate(input);
    return toBackfill(this.createStmt.get({ ...b, now: this.clock.now() }) as BackfillRow);
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

  async unitDone(id: string, n = 1): Promise<Backfill> {
    const row = this.unitDoneStmt.get({ id, n, now: this.clock.now() }) as BackfillRow | undefined;
    if (!row) throw new NotFoundError('backfill', id);
    return toBackfill(row);
  }

  async setStatus(id: string, status: BackfillStatus): Promise<Backfill> {
    const valid = parseOrThrow(BackfillStatus, status, 'status');
    const row = this.setStatusStmt.get(valid, this.clock.now(), id) as BackfillRow | undefined;
    if (!row) throw new NotFoundError('backfill', id);
    return toBackfill(row);
  }
}
