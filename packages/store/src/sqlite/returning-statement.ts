import type { Database, Statement } from 'better-sqlite3';

/**
 * Prepares a write statement with a `RETURNING` clause whose `get` steps it to the end.
 *
 * SQLite checkpoints a WAL file automatically (every 1,000 pages, `wal_autocheckpoint`) from a
 * hook it calls only when a statement's step returns SQLITE_DONE. better-sqlite3's `get` (and
 * `run`) on a `… RETURNING` statement read the first row and reset it: the write commits, but
 * the hook never runs. A store whose writes all return rows (budget acquires, unit locks, job
 * completions) then never checkpoints: the WAL grew to 360 MB while 10,000 jobs were added in the
 * fleet-scale benchmark, and every read of a page written since comes from that file (a `pread`
 * each, not the memory map). `all` steps past the last row, so here `get` is `all()[0]`; `run`
 * would skip the hook again and throws. A statement read with `all` alone (the claim) needs none of this.
 */
export function prepareReturning(db: Database, sql: string): Statement {
  if (!/\bRETURNING\b/i.test(sql)) throw new Error(`prepareReturning: a statement without RETURNING: ${sql.trim().slice(0, 60)}`);
  const stmt = db.prepare(sql);
  const all = stmt.all.bind(stmt);
  return Object.assign(stmt, {
    get: (...params: unknown[]): unknown => all(...params)[0],
    run: (): never => {
      throw new Error('prepareReturning: read a RETURNING statement with get() or all(); run() would skip the WAL checkpoint');
    },
  });
}
