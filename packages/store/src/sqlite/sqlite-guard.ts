import { StoreUnavailableError } from '@tickfleet/core';

/**
 * What a SQLite failure means for the caller. better-sqlite3 reports SQLite's extended result
 * code as `err.code` (`SQLITE_BUSY`, `SQLITE_IOERR_SHORT_READ`, …); the primary code is its prefix.
 * - busy: another connection holds the lock; the same call can succeed once it is released.
 * - damaged: the file is corrupted or not a database; nothing succeeds until an operator restores it.
 * - unavailable: the file cannot be read or written now (I/O error, disk full, cannot open).
 */
export type SqliteFailure = 'busy' | 'damaged' | 'unavailable';

const BUSY = new Set(['SQLITE_BUSY', 'SQLITE_LOCKED']);
const DAMAGED = new Set(['SQLITE_CORRUPT', 'SQLITE_NOTADB']);
const UNAVAILABLE = new Set(['SQLITE_IOERR', 'SQLITE_FULL', 'SQLITE_CANTOPEN', 'SQLITE_PROTOCOL', 'SQLITE_READONLY']);

export function classifySqliteError(err: unknown): SqliteFailure | null {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== 'string' || !code.startsWith('SQLITE_')) return null;
  const primary = code.match(/^SQLITE_[A-Z]+/)?.[0] ?? code;
  if (BUSY.has(primary)) return 'busy';
  if (DAMAGED.has(primary)) return 'damaged';
  if (UNAVAILABLE.has(primary)) return 'unavailable';
  return null;
}

export interface SqliteGuardOptions {
  /** The store file, for error messages. */
  path: string;
  /** Total time one call keeps retrying a locked database before it reports the store unavailable. */
  maxWaitMs: number;
  /** Called when a call met a corrupted file (the store then fails its readiness ping). */
  onDamaged(err: unknown): void;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * Runs one store call. A locked database is retried with growing pauses (1 ms … 250 ms, doubling) that
 * yield the event loop, for up to `maxWaitMs`; each attempt itself blocks at most the connection's
 * short busy_timeout. Lock timeouts, I/O errors and a corrupted file surface as
 * StoreUnavailableError naming the file, so callers fall back or put work back instead of failing it.
 * A whole repository call is retried: each is one statement or one transaction, which SQLite
 * rolled back when it failed, so a retry never applies a change twice.
 */
export async function guardSqliteCall<T>(call: () => Promise<T>, options: SqliteGuardOptions, maxWaitMs = options.maxWaitMs): Promise<T> {
  const started = performance.now();
  for (let attempt = 0; ; attempt++) {
    try {
      return await call();
    } catch (err) {
      const failure = classifySqliteError(err);
      if (failure === null) throw err;
      const code = (err as { code: string }).code;
      if (failure === 'damaged') {
        options.onDamaged(err);
        throw new StoreUnavailableError(
          `SQLite store ${options.path} is damaged (${code}): stop the fleet and restore the file from a backup, or move it away so a new store is created`,
          { cause: err },
        );
      }
      if (failure === 'unavailable')
        throw new StoreUnavailableError(`SQLite store ${options.path} cannot be used (${code}): ${(err as Error).message}`, { cause: err });
      const waited = performance.now() - started;
      if (waited >= maxWaitMs) {
        throw new StoreUnavailableError(`SQLite store ${options.path} stayed locked by another connection for ${Math.round(waited)} ms (${code})`, {
          cause: err,
        });
      }
      // Write transactions of other processes last well under a millisecond: start short, so a
      // waiter does not sleep long after the lock is free (4 processes on one file contend often).
      await sleep(Math.min(250, 2 ** Math.min(attempt, 8), Math.max(1, maxWaitMs - waited)) * (0.5 + Math.random() / 2));
    }
  }
}

/**
 * Wraps every method of a repository in {@link guardSqliteCall}. The methods named in
 * `fast.methods` get `fast.waitMs` instead of the full wait (calls that have a fallback, such as budget acquires, should learn
 * quickly that the store is away).
 */
export function guardRepo<T extends object>(
  repo: T,
  options: SqliteGuardOptions,
  fast: { methods: readonly string[]; waitMs: number } = { methods: [], waitMs: 0 },
): T {
  return new Proxy(repo, {
    get(target, prop, receiver) {
      const value: unknown = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function' || prop === 'constructor') return value;
      const wait = typeof prop === 'string' && fast.methods.includes(prop) ? fast.waitMs : options.maxWaitMs;
      return (...args: unknown[]) => guardSqliteCall(() => Promise.resolve((value as (...a: unknown[]) => unknown).apply(target, args)), options, wait);
    },
  });
}
