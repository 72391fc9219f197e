import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { type Clock, ConfigError, StoreUnavailableError } from '@tickfleet/core';
import type { StateStore } from '../state-store.js';
import { migrate, SCHEMA_VERSION } from './migrations.js';
import { SqliteBackfillsRepo } from './sqlite-backfills-repo.js';
import { SqliteBudgetsRepo } from './sqlite-budgets-repo.js';
import { SqliteConnectorsRepo } from './sqlite-connectors-repo.js';
import { SqliteGapsRepo } from './sqlite-gaps-repo.js';
import { SqliteJobsRepo } from './sqlite-jobs-repo.js';

export interface SqliteStoreOptions {
  clock: Clock;
  /**
   * How long a statement waits for another connection's write lock before failing with
   * SQLITE_BUSY. Acquire statements hold the lock for tens of microseconds, so 5 s only runs
   * out when a process is stuck.
   * @defaultValue 5000
   */
  busyTimeoutMs?: number;
}

/**
 * The embedded state store: one SQLite file shared by any number of local processes.
 * WAL lets readers proceed during a write; synchronous=NORMAL is durable across process crashes
 * (an OS crash can lose the last transactions, never corrupt the file).
 */
export class SqliteStateStore implements StateStore {
  readonly kind = 'sqlite' as const;
  readonly connectors: SqliteConnectorsRepo;
  readonly jobs: SqliteJobsRepo;
  readonly budgets: SqliteBudgetsRepo;
  readonly backfills: SqliteBackfillsRepo;
  readonly gaps: SqliteGapsRepo;
  private readonly pingStmt: Database.Statement;

  private constructor(
    private readonly db: Database.Database,
    clock: Clock,
  ) {
    this.connectors = new SqliteConnectorsRepo(db, clock);
    this.jobs = new SqliteJobsRepo(db, clock);
    this.budgets = new SqliteBudgetsRepo(db, clock);
    this.backfills = new SqliteBackfillsRepo(db, clock);
    this.gaps = new SqliteGapsRepo(db);
    this.pingStmt = db.prepare('SELECT 1');
  }

  static open(path: string, options: SqliteStoreOptions): SqliteStateStore {
    let db: Database.Database;
    try {
      if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
      db = new Database(path);
    } catch (err) {
      throw new StoreUnavailableError(`cannot open SQLite store at ${path}: ${(err as Error).message}`, { cause: err });
    }
    try {
      // busy_timeout first: switching to WAL needs a lock another opener may hold.
      db.pragma(`busy_timeout = ${Math.max(0, Math.floor(options.busyTimeoutMs ?? 5000))}`);
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = NORMAL');
      const version = db.pragma('user_version', { simple: true }) as number;
      if (version > SCHEMA_VERSION) {
        throw new ConfigError('store URL', `a SQLite store of schema version <= ${SCHEMA_VERSION}; ${path} has version ${version} (written by a newer tickfleet)`);
      }
      migrate(db);
      return new SqliteStateStore(db, options.clock);
    } catch (err) {
      db.close();
      throw err;
    }
  }

  async ping(): Promise<void> {
    this.pingStmt.get();
  }

  async close(): Promise<void> {
    if (this.db.open) this.db.close();
  }
}
