import type { Database, Statement } from 'better-sqlite3';
import type { Gap, GapKind } from '@tickfleet/core';
import type { GapRecord, GapsRepo } from '../state-store.js';
import { validateGapRecord } from '../internal/record-inputs.js';
import { toGap, type GapRow } from './rows.js';
import { prepareReturning } from './returning-statement.js';

export class SqliteGapsRepo implements GapsRepo {
  private readonly recordStmt: Statement;
  private readonly markFilledStmt: Statement;
  private readonly listStmts = new Map<string, Statement>();
  private readonly attemptStmt: Statement;
  private readonly removeStmt: Statement;

  constructor(private readonly db: Database) {
    // A gap detected again after it was marked filled is missing again: it reopens. Its first
    // detection time and attempt count are kept.
    this.recordStmt = prepareReturning(
      db,
      `
      INSERT INTO gaps (job_id, from_ms, to_ms, kind, detected_at, filled_at, attempts)
      VALUES (:jobId, :fromMs, :toMs, :kind, :detectedAt, NULL, 0)
      ON CONFLICT (job_id, from_ms, to_ms) DO UPDATE SET kind = excluded.kind, filled_at = NULL
      RETURNING *`,
    );
    this.markFilledStmt = db.prepare(`
      UPDATE gaps SET filled_at = :filledAt
      WHERE job_id = :jobId AND filled_at IS NULL AND from_ms >= :fromMs AND to_ms <= :toMs`);
    this.attemptStmt = db.prepare('UPDATE gaps SET attempts = attempts + 1 WHERE job_id = ? AND from_ms = ? AND to_ms = ?');
    this.removeStmt = db.prepare('DELETE FROM gaps WHERE job_id = ? AND from_ms = ? AND to_ms = ?');
  }

  async record(gap: GapRecord, detectedAt: number): Promise<Gap> {
    const g = validateGapRecord(gap, detectedAt);
    return toGap(this.recordStmt.get(g) as GapRow);
  }

  async list(filter: { jobId?: string; open?: boolean; kind?: GapKind } = {}): Promise<Gap[]> {
    const where: string[] = [];
    const params: string[] = [];
    if (filter.jobId !== undefined) {
      where.push('job_id = ?');
      params.push(filter.jobId);
    }
    if (filter.open !== undefined) where.push(filter.open ? 'filled_at IS NULL' : 'filled_at IS NOT NULL');
    if (filter.kind !== undefined) {
      where.push('kind = ?');
      params.push(filter.kind);
    }
    const sql = `SELECT * FROM gaps ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY job_id, from_ms, to_ms`;
    // Eight shapes at most; a backfill chunk lists its job's open gaps on every run.
    let stmt = this.listStmts.get(sql);
    if (!stmt) this.listStmts.set(sql, (stmt = this.db.prepare(sql)));
    return (stmt.all(...params) as GapRow[]).map(toGap);
  }

  async markFilled(jobId: string, fromMs: number, toMs: number, filledAt: number): Promise<number> {
    return this.markFilledStmt.run({ jobId, fromMs, toMs, filledAt }).changes;
  }

  async attempt(jobId: string, fromMs: number, toMs: number): Promise<void> {
    this.attemptStmt.run(jobId, fromMs, toMs);
  }

  async remove(jobId: string, fromMs: number, toMs: number): Promise<boolean> {
    return this.removeStmt.run(jobId, fromMs, toMs).changes > 0;
  }
}
