import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { type Clock, ConfigError, retryWhileBusySync, SQLITE_ATTEMPT_BUSY_MS, StoreUnavailableError } from '@tickfleet/core';
import type { StateStore } from '../state-store.js';
import { migrate, SCHEMA_VERSION } from './migrations.js';
import { SqliteBackfillsRepo } from './sqlite-backfills-repo.js';
import { SqliteBudgetsRepo } from './sqlite-budgets-repo.js';
import { SqliteConnectorsRepo } from './sqlite-connectors-repo.js';
import { SqliteGapsRepo } from './sqlite-gaps-repo.js';
import { SqliteJobsRepo } from './sqlite-jobs-repo.js';
import { SqliteStreamsRepo } from './sqlite-streams-repo.js';
import { SqliteUniversesRepo } from './sqlite-universes-repo.js';
import { classifySqliteError, guardRepo, guardSqliteCall, type SqliteGuardOptions } from './sqlite-guard.js';
import { STORE_DEFAULTS } from '../store-defaults.js';

export interface SqliteStoreOptions {
  clock: Clock;
  /**
   * How long one store call keeps retrying while another connection holds the write lock before
   * it fails with StoreUnavailableError. Statements hold the lock for tens of microseconds, so
   * 5 s only runs out when another process is stuck or holds a long transaction. The wait is
   * asynchronous: each attempt blocks the event loop for at most {@link SQLITE_ATTEMPT_BUSY_MS}.
   * @defaultValue {@link STORE_DEFAULTS.sqliteBusyTimeoutMs}
   */
  busyTimeoutMs?: number;
  /**
   * The same for budget acquires and observations, which have a fallback (the worker spends its
   * lease, then waits) and so should learn quickly that the store is away, and for unit locks (a
   * unit then runs without its lock, on that lease).
   * @defaultValue {@link STORE_DEFAULTS.sqliteBudgetBusyTimeoutMs}
   */
  budgetBusyTimeoutMs?: number;
}

/** How often a readiness ping re-verifies the file's pages (`PRAGMA quick_check`). */
const QUICK_CHECK_EVERY_MS = 60_000;

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
  readonly universes: SqliteUniversesRepo;
  readonly streams: SqliteStreamsRepo;
  private readonly pingStmt: Database.Statement;
  private readonly guard: SqliteGuardOptions;
  /** Set when a call met a corrupted file; readiness fails until a quick_check passes again. */
  private damage: unknown = null;
  private lastCheckAt: number;

  private constructor(
    private readonly db: Database.Database,
    private readonly path: string,
    options: SqliteStoreOptions,
  ) {
    const { clock } = options;
    this.guard = { path, maxWaitMs: Math.max(0, options.busyTimeoutMs ?? STORE_DEFAULTS.sqliteBusyTimeoutMs), onDamaged: (err) => (this.damage = err) };
    const fastWaitMs = Math.max(0, options.budgetBusyTimeoutMs ?? STORE_DEFAULTS.sqliteBudgetBusyTimeoutMs);
    const budgetWait = { methods: ['acquire', 'observe'], waitMs: fastWaitMs };
    this.connectors = guardRepo(new SqliteConnectorsRepo(db, clock), this.guard);
    // A unit that cannot take its job lock runs without it on the fallback budget (UnitLocks), so it learns as quickly.
    this.jobs = guardRepo(new SqliteJobsRepo(db, clock), this.guard, { methods: ['lockUnit'], waitMs: fastWaitMs });
    this.budgets = guardRepo(new SqliteBudgetsRepo(db, clock), this.guard, budgetWait);
    this.backfills = guardRepo(new SqliteBackfillsRepo(db, clock), this.guard);
    this.gaps = guardRepo(new SqliteGapsRepo(db), this.guard);
    this.universes = guardRepo(new SqliteUniversesRepo(db, clock), this.guard);
    this.streams = guardRepo(new SqliteStreamsRepo(db, clock), this.guard);
    this.pingStmt = db.prepare('SELECT 1');
    this.lastCheckAt = performance.now();
  }

  /**
   * Opens (creating and migrating when needed) the store file. Opening waits up to
   * `busyTimeoutMs` for a lock held by another process (blocking: nothing else runs yet), checks
   * the file's pages with `PRAGMA quick_check`, and reports a locked, unreadable, corrupted or
   * non-database file as StoreUnavailableError naming the path.
   */
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
      const openWaitMs = Math.max(SQLITE_ATTEMPT_BUSY_MS, Math.floor(options.busyTimeoutMs ?? STORE_DEFAULTS.sqliteBusyTimeoutMs));
      db.pragma(`busy_timeout = ${openWaitMs}`);
      retryWhileBusySync(() => db.pragma('journal_mode = WAL'), openWaitMs);
      db.pragma('synchronous = NORMAL');
      // No memory-mapped reads (`mmap_size` stays 0). In WAL mode a connection unmaps its whole map
      // whenever another process has written the file, so with several processes on one store every
      // transaction maps and faults its pages in again: on the project machine 4 processes spent
      // 318-418 µs of CPU per store operation mapped against 91-93 µs unmapped
      // (`scripts/bench/sqlite-contention.ts --mmap 268435456`; docs/benchmarks/sqlite.md).
      const version = db.pragma('user_version', { simple: true }) as number;
      if (version > SCHEMA_VERSION) {
        throw new ConfigError(
          'store URL',
          `a SQLite store of schema version <= ${SCHEMA_VERSION}; ${path} has version ${version} (written by a newer tickfleet)`,
        );
      }
      migrate(db);
      assertIntact(db, path);
      db.pragma(`busy_timeout = ${SQLITE_ATTEMPT_BUSY_MS}`);
      return new SqliteStateStore(db, path, options);
    } catch (err) {
      db.close();
      if (classifySqliteError(err) === null) throw err;
      throw new StoreUnavailableError(`cannot open SQLite store at ${path} (${(err as { code: string }).code}): ${(err as Error).message}`, { cause: err });
    }
  }

  /**
   * Readiness: a round trip, plus `PRAGMA quick_check` when a call met a corrupted page and at
   * most once a minute otherwise, because `SELECT 1` succeeds on a file whose table pages were
   * overwritten while every real query fails.
   */
  async ping(): Promise<void> {
    await guardSqliteCall(async () => {
      this.pingStmt.get();
      if (this.damage === null && performance.now() - this.lastCheckAt < QUICK_CHECK_EVERY_MS) return;
      assertIntact(this.db, this.path);
      this.lastCheckAt = performance.now();
      this.damage = null;
    }, this.guard);
  }

  async close(): Promise<void> {
    if (this.db.open) this.db.close();
  }
}

/** Throws StoreUnavailableError when `PRAGMA quick_check` finds damaged pages. */
function assertIntact(db: Database.Database, path: string): void {
  const rows = db.pragma('quick_check(5)') as Array<{ quick_check: string }>;
  const problems = rows.map((r) => r.quick_check).filter((r) => r !== 'ok');
  if (problems.length > 0) {
    throw new StoreUnavailableError(
      `SQLite store ${path} is damaged (quick_check: ${problems.join('; ')}): stop the fleet and restore the file from a backup, or move it away so a new store is created`,
    );
  }
}
