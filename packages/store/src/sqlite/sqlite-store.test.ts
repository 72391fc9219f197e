import { ValidationError } from '@tickfleet/core';
import { tempDir, type TempDir, ManualClock } from '@tickfleet/testkit';
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { openStore } from '../open-store.js';
import { describeStoreContract } from '../../test/store-contract.js';
import { describeStreamsContract } from '../../test/streams-contract.js';
import { SCHEMA_VERSION } from './migrations.js';

let dir: TempDir;
beforeAll(() => {
  dir = tempDir('tickfleet-store-');
});
afterAll(() => dir.remove());

describeStoreContract('sqlite', (ns) => openStore(dir.sqliteUrl(`${ns}.db`)));
describeStreamsContract('sqlite', (ns) => openStore(dir.sqliteUrl(`${ns}.db`)));

describe('sqlite store specifics', () => {
  it('checkpoints its WAL although its writes return rows (RETURNING)', async () => {
    // SQLite's automatic checkpoint runs only when a statement steps to its end; a RETURNING write
    // read with get() never did, and the WAL grew by every page written (about 18 KB per job added).
    const path = join(dir.path, 'wal-checkpoint.db');
    const store = await openStore(`sqlite://${path}`);
    try {
      await store.connectors.upsert({ venue: 'binance', baseUrl: 'http://127.0.0.1:9', rateLimit: { limit: 1_000_000, periodMs: 60_000 }, maxInflight: 4 });
      for (let i = 0; i < 3000; i++) {
        const job = await store.jobs.upsert({ venue: 'binance', type: 'ohlcv', symbol: `T${i}/USDT`, timeframe: '1h', since: 0, nextRunAt: 0 });
        expect((await store.budgets.acquire('binance', 1)).ok).toBe(true);
        expect(await store.jobs.setEnabled(job.id, false)).toMatchObject({ enabled: false });
      }
      // 1,000 pages of 4 KiB between checkpoints (wal_autocheckpoint); without them, ~13,000 pages.
      expect(statSync(`${path}-wal`).size).toBeLessThan(8 * 1024 * 1024);
      expect(statSync(path).size).toBeGreaterThan(100 * 4096);
      expect(await store.jobs.list({ venue: 'binance' })).toHaveLength(3000);
    } finally {
      await store.close();
    }
  });

  it('creates parent directories, uses WAL and records the schema version', async () => {
    const path = join(dir.path, 'nested', 'deeper', 'state.db');
    const store = await openStore(`sqlite://${path}`);
    await store.close();
    expect(existsSync(path)).toBe(true);
    const db = new Database(path, { readonly: true });
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(db.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
    db.close();
  });

  it('resolves a relative path against the working directory', async () => {
    const cwd = process.cwd();
    process.chdir(dir.path);
    try {
      const store = await openStore('sqlite://rel/state.db');
      await store.close();
    } finally {
      process.chdir(cwd);
    }
    expect(existsSync(join(dir.path, 'rel', 'state.db'))).toBe(true);
  });

  it('counts a backfill recorded before its chunks were tracked as requested whole', async () => {
    // Backfills of schema v1 had no chunk rows; a unit settled later inserted its own (index -1).
    const path = dir.file('legacy-backfill.db');
    const store = await openStore(`sqlite://${path}`);
    const T0 = Date.UTC(2024, 0, 1);
    const M = 60_000;
    const id = 'binance:BTC/USDT:1m:ohlcv';
    try {
      await store.backfills.create({
        id: 'bf-old',
        jobId: id,
        fromMs: T0,
        toMs: T0 + 30 * M,
        chunks: [0, 10, 20].map((m) => ({ fromMs: T0 + m * M, toMs: T0 + (m + 10) * M })),
      });
      const db = new Database(path);
      db.prepare("DELETE FROM backfill_chunks WHERE backfill_id = 'bf-old' AND from_ms > ?").run(T0);
      db.close();
      expect(await store.backfills.requestedRanges(id)).toEqual([{ fromMs: T0, toMs: T0 + 30 * M }]);
    } finally {
      await store.close();
    }
  });

  it('refuses a file written by a newer schema', async () => {
    const path = dir.file('future.db');
    const db = new Database(path);
    db.pragma(`user_version = ${SCHEMA_VERSION + 1}`);
    db.close();
    await expect(openStore(`sqlite://${path}`)).rejects.toMatchObject({ code: 'E_CONFIG' });
  });

  it('rejects other URLs naming the store URL and the accepted forms', async () => {
    for (const url of ['postgres://localhost/x', 'sqlite://', 'state.db', 'mongodb://']) {
      const err = await openStore(url).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ValidationError);
      expect((err as ValidationError).field).toBe('store URL');
      expect((err as ValidationError).message).toMatch(/sqlite:\/\//);
    }
  });

  it('decides budgets with the injected clock, never moving a window backwards', async () => {
    const clock = new ManualClock(Date.UTC(2024, 0, 1, 0, 0, 0, 500));
    const store = await openStore(dir.sqliteUrl('clock.db'), { clock });
    await store.connectors.upsert({ venue: 'binance', baseUrl: 'https://api.binance.com', rateLimit: { limit: 3, periodMs: 1000, headroom: 1 } });
    const first = await store.budgets.acquire('binance', 3);
    expect(first).toEqual({ ok: true, used: 3, limit: 3, atMs: clock.now(), windowStartMs: Date.UTC(2024, 0, 1), windowEndMs: Date.UTC(2024, 0, 1, 0, 0, 1) });
    // A caller whose `now` is older than the last decision is charged to the current window.
    clock.set(Date.UTC(2024, 0, 1) - 200);
    expect(await store.budgets.acquire('binance', 1)).toMatchObject({ ok: false, reason: 'exhausted', retryAtMs: Date.UTC(2024, 0, 1, 0, 0, 1) });
    clock.set(Date.UTC(2024, 0, 1, 0, 0, 1));
    expect(await store.budgets.acquire('binance', 1)).toMatchObject({ ok: true, used: 1, windowStartMs: Date.UTC(2024, 0, 1, 0, 0, 1) });
    await store.close();
  });

  it("writes one turn's completions in one transaction, each with its own answer", async () => {
    const clock = new ManualClock(Date.UTC(2024, 0, 1));
    const path = join(dir.path, 'turn-completions.db');
    const store = await openStore(`sqlite://${path}`, { clock });
    // The file's pages as another process sees them: WAL frames (4 KiB pages) written since a checkpoint.
    const observer = new Database(path);
    const walFrames = (): number => statSync(`${path}-wal`).size;
    try {
      await store.connectors.upsert({ venue: 'binance', baseUrl: 'https://api.binance.com', rateLimit: { limit: 1200, periodMs: 60_000 } });
      const ids: string[] = [];
      for (let i = 0; i < 40; i++) ids.push((await store.jobs.upsert({ venue: 'binance', type: 'ohlcv', symbol: `S${i}/USDT`, timeframe: '1h', since: 0 })).id);
      const nextRunAt = clock.now() + 3_600_000;
      for (const id of ids.slice(0, 3)) expect(await store.jobs.lockUnit(id, `unit-${id}`, 60_000)).toMatchObject({ locked: true });
      // Job 3's lock belongs to another unit: completing it with a token of its own is fenced off.
      await store.jobs.lockUnit(ids[3]!, 'someone-else', 60_000);

      // The first 4 of a turn are written at once; the 6 after them go in one transaction.
      const turn = await Promise.allSettled([
        ...ids.slice(36, 40).map((id) => store.jobs.complete(id, { cursor: 1, nextRunAt })),
        ...ids.slice(0, 3).map((id, i) => store.jobs.complete(id, { cursor: 1000 + i, nextRunAt, unitToken: `unit-${id}` })),
        store.jobs.complete(ids[3]!, { cursor: 5, nextRunAt, unitToken: `unit-${ids[3]}` }),
        store.jobs.complete('binance:NOPE/USDT:1h:ohlcv', { cursor: 5, nextRunAt }),
        store.jobs.complete(ids[4]!, { cursor: 7, nextRunAt }),
      ]);
      expect(turn.map((r) => (r.status === 'fulfilled' ? r.value.cursor : (r.reason as Error).name))).toEqual([
        1,
        1,
        1,
        1,
        1000,
        1001,
        1002,
        'JobLockLostError',
        'NotFoundError',
        7,
      ]);
      // Committed, locks freed; the fenced job and its lock are untouched.
      for (const [i, id] of ids.slice(0, 3).entries()) expect(await store.jobs.get(id)).toMatchObject({ cursor: 1000 + i, nextRunAt, lockedUntil: null });
      expect(await store.jobs.get(ids[3]!)).toMatchObject({ cursor: null });
      expect(await store.jobs.lockUnit(ids[3]!, 'someone-else', 60_000)).toMatchObject({ locked: true });

      // Pages written: 13 completions in one turn (4 at once, 9 together) against 13 in turns of their own.
      observer.pragma('wal_checkpoint(TRUNCATE)');
      await Promise.all(ids.slice(10, 23).map((id) => store.jobs.complete(id, { cursor: 1, nextRunAt })));
      const together = walFrames();
      observer.pragma('wal_checkpoint(TRUNCATE)');
      for (const id of ids.slice(23, 36)) await store.jobs.complete(id, { cursor: 1, nextRunAt });
      const apart = walFrames();
      expect(together).toBeGreaterThan(0);
      expect(together * 2).toBeLessThan(apart);

      // Another process holds the write lock through a turn: the turn waits for it, nothing is lost.
      observer.exec('BEGIN IMMEDIATE');
      const waiting = Promise.all(ids.slice(5, 10).map((id) => store.jobs.complete(id, { cursor: 9, nextRunAt })));
      await new Promise((resolve) => setTimeout(resolve, 20));
      observer.exec('COMMIT');
      expect((await waiting).map((j) => j.cursor)).toEqual([9, 9, 9, 9, 9]);
      for (const id of ids.slice(5, 10)) expect(await store.jobs.get(id)).toMatchObject({ cursor: 9, stats: expect.objectContaining({ runs: 1 }) });
    } finally {
      observer.close();
      await store.close();
    }
  });

  it('returns claimed jobs field for field as get() reads them (claim rows are mapped from arrays)', async () => {
    const clock = new ManualClock(Date.UTC(2024, 0, 1));
    const store = await openStore(dir.sqliteUrl('claim-columns.db'), { clock });
    await store.connectors.upsert({ venue: 'binance', baseUrl: 'https://api.binance.com', rateLimit: { limit: 1200, periodMs: 60_000 } });
    await store.jobs.upsert({ venue: 'binance', type: 'ohlcv', symbol: 'BTC/USDT', timeframe: '1m', priority: 7, since: Date.UTC(2023, 0, 1) });
    await store.jobs.upsert({ venue: 'binance', type: 'book', symbol: 'ETH/USDT' });
    await store.jobs.fail('binance:ETH/USDT:-:book', 'venue said no', 0);
    await store.jobs.advanceCursor('binance:BTC/USDT:1m:ohlcv', Date.UTC(2023, 5, 1));
    const claimed = await store.jobs.claimDue(clock.now(), 10, 30_000);
    expect(claimed.map((j) => j.id)).toEqual(['binance:BTC/USDT:1m:ohlcv', 'binance:ETH/USDT:-:book']);
    for (const job of claimed) expect(job).toEqual(await store.jobs.get(job.id));
    expect(claimed[1]?.stats).toMatchObject({ runs: 1, failures: 1, lastError: 'venue said no' });
    await store.close();
  });
});
