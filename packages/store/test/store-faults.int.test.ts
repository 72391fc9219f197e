import { openSync, writeSync, closeSync, writeFileSync } from 'node:fs';
import Database from 'better-sqlite3';
import { StoreUnavailableError } from '@tickfleet/core';
import { tempDir, type TempDir } from '@tickfleet/testkit';
import { openStore } from '../src/index.js';

/**
 * The SQLite state store under faults: another connection holding the write lock, a file that is
 * not a database, pages overwritten. Each surfaces as StoreUnavailableError naming the file (so a
 * worker falls back and puts units back instead of failing them), the busy wait never stalls the
 * event loop, and readiness (`ping`) reports a damaged file although `SELECT 1` still works.
 */

let dir: TempDir;
beforeAll(() => {
  dir = tempDir('tickfleet-store-faults-');
});
afterAll(() => dir.remove());

const connector = { venue: 'binance', baseUrl: 'https://api.binance.com', rateLimit: { limit: 100, periodMs: 60_000, headroom: 1 } };

/** Longest gap between 5 ms ticks while `fn` runs: how long the event loop was blocked. */
async function longestStall<T>(fn: () => Promise<T>): Promise<{ result: PromiseSettledResult<T>; stallMs: number }> {
  let stallMs = 0;
  let last = performance.now();
  const probe = setInterval(() => {
    const now = performance.now();
    stallMs = Math.max(stallMs, now - last);
    last = now;
  }, 5);
  try {
    const [result] = await Promise.allSettled([fn()]);
    return { result: result!, stallMs };
  } finally {
    clearInterval(probe);
  }
}

describe('SQLite state store faults', () => {
  it('a write lock held by another connection: reads go on, writes wait asynchronously, then report the store unavailable', async () => {
    const path = dir.file('locked.db');
    // A wait of 3 s: far enough above what the checks below allow (a call that blocked the event
    // loop, or a budget call that waited it out) that a loaded machine's slowness stays below them.
    const store = await openStore(`sqlite://${path}`, { busyTimeoutMs: 3000 });
    await store.connectors.upsert(connector);
    const locker = new Database(path);
    locker.exec('BEGIN EXCLUSIVE');
    try {
      expect(await store.connectors.get('binance')).toMatchObject({ venue: 'binance' });
      await expect(store.ping()).resolves.toBeUndefined();
      const started = performance.now();
      const { result, stallMs } = await longestStall(() => store.jobs.upsert({ venue: 'binance', type: 'ohlcv', symbol: 'BTC/USDT', timeframe: '1m' }));
      expect(result.status).toBe('rejected');
      const err = (result as PromiseRejectedResult).reason as StoreUnavailableError;
      expect(err).toBeInstanceOf(StoreUnavailableError);
      expect(err.message).toContain(path);
      expect(err.message).toMatch(/locked/);
      // It kept trying for the configured wait, but never held the event loop for long.
      expect(performance.now() - started).toBeGreaterThanOrEqual(2900);
      expect(stallMs).toBeLessThan(1500);
      // Budget calls have a fallback: they give up much sooner.
      const t0 = performance.now();
      await expect(store.budgets.acquire('binance', 1)).rejects.toBeInstanceOf(StoreUnavailableError);
      expect(performance.now() - t0).toBeLessThan(2500);
    } finally {
      locker.exec('COMMIT');
      locker.close();
    }
    // Released: the same call succeeds, nothing was half-applied.
    await store.jobs.upsert({ venue: 'binance', type: 'ohlcv', symbol: 'BTC/USDT', timeframe: '1m' });
    expect(await store.jobs.list()).toHaveLength(1);
    expect(await store.budgets.acquire('binance', 1)).toMatchObject({ ok: true, used: 1 });
    await store.close();
  }, 30_000);

  it('a lock released while a call waits: the call succeeds', async () => {
    const path = dir.file('released.db');
    const store = await openStore(`sqlite://${path}`);
    await store.connectors.upsert(connector);
    const locker = new Database(path);
    locker.exec('BEGIN EXCLUSIVE');
    setTimeout(() => {
      locker.exec('COMMIT');
      locker.close();
    }, 700);
    await expect(store.jobs.upsert({ venue: 'binance', type: 'ohlcv', symbol: 'ETH/USDT', timeframe: '1m' })).resolves.toMatchObject({ symbol: 'ETH/USDT' });
    await store.close();
  });

  it('a file that is not a database: StoreUnavailableError naming the file, no stack of SqliteError', async () => {
    const path = dir.file('not-a-db.db');
    writeFileSync(path, 'these are not the pages you are looking for\n'.repeat(200));
    const err = await openStore(`sqlite://${path}`).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreUnavailableError);
    expect((err as Error).message).toContain(path);
    expect((err as Error).message).toMatch(/SQLITE_NOTADB/);
  });

  it('overwritten pages: refused at open, and a running store fails readiness instead of burning work', async () => {
    const path = dir.file('damaged.db');
    const store = await openStore(`sqlite://${path}`);
    await store.connectors.upsert(connector);
    for (let i = 0; i < 200; i++) await store.jobs.upsert({ venue: 'binance', type: 'ohlcv', symbol: `S${i}/USDT`, timeframe: '1m' });
    // Fold the WAL into the main file so the pages overwritten below are the only copy.
    const raw = new Database(path);
    raw.pragma('wal_checkpoint(TRUNCATE)');
    const { rootpage, pageSize } = {
      rootpage: (raw.prepare("SELECT rootpage FROM sqlite_schema WHERE name = 'jobs'").get() as { rootpage: number }).rootpage,
      pageSize: raw.pragma('page_size', { simple: true }) as number,
    };
    raw.close();

    const fd = openSync(path, 'r+');
    writeSync(fd, Buffer.alloc(pageSize, 0xa5), 0, pageSize, (rootpage - 1) * pageSize);
    closeSync(fd);

    // A write elsewhere (connectors) invalidates the running store's page cache, as other
    // processes' writes do in a fleet; its next read of the jobs table meets the damage.
    const other = new Database(path);
    other.prepare('UPDATE connectors SET updated_at = updated_at + 1').run();
    other.close();
    const failed = await store.jobs.get('binance:S1/USDT:1m:ohlcv').catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(StoreUnavailableError);
    expect((failed as Error).message).toMatch(/damaged \(SQLITE_CORRUPT/);
    // SELECT 1 alone would pass; readiness re-checks the pages after a corruption error.
    await expect(store.ping()).rejects.toThrow(/damaged \(quick_check/);
    await store.close();

    const reopen = await openStore(`sqlite://${path}`).catch((e: unknown) => e);
    expect(reopen).toBeInstanceOf(StoreUnavailableError);
    expect((reopen as Error).message).toContain(path);
  });
});
