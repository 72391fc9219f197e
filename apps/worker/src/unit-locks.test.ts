import { JobLockLostError, systemClock } from '@tickfleet/core';
import { SqliteStateStore } from '@tickfleet/store';
import { tempDir, type TempDir, waitFor } from '@tickfleet/testkit';
import Database from 'better-sqlite3';
import { UnitLocks } from './unit-locks.js';

let dir: TempDir;
beforeAll(() => {
  dir = tempDir('tickfleet-unit-locks-');
});
afterAll(() => dir.remove());

const JOB = 'binance:BTC/USDT:1m:ohlcv';

async function storeWithJob(name: string): Promise<{ store: SqliteStateStore; path: string }> {
  const path = dir.file(`${name}.db`);
  const store = SqliteStateStore.open(path, { clock: systemClock });
  await store.connectors.upsert({ venue: 'binance', baseUrl: 'https://api.binance.com', rateLimit: { limit: 1200, periodMs: 60_000 } });
  await store.jobs.upsert({ venue: 'binance', type: 'ohlcv', symbol: 'BTC/USDT', timeframe: '1m' });
  await store.jobs.advanceCursor(JOB, 60_000);
  return { store, path };
}

describe('UnitLocks (job locks in the state store)', () => {
  it('runs a unit holding its job lock with the job read by the lock, turns a second unit away, and frees the lock after', async () => {
    const { store } = await storeWithJob('basic');
    const locks = new UnitLocks(store, () => Date.now());
    const other = new UnitLocks(store, () => Date.now());
    try {
      const outcome = await locks.withLock(
        JOB,
        () => undefined,
        async (lock) => {
          expect(lock.job).toMatchObject({ id: JOB, cursor: 60_000 });
          expect(lock.token).toEqual(expect.any(String));
          const second = await other.withLock(
            JOB,
            () => undefined,
            async () => 'never',
          );
          expect(second).toEqual({ acquired: false, heldUntil: expect.any(Number) });
          return 'ran';
        },
      );
      expect(outcome).toEqual({ acquired: true, value: 'ran' });
      expect(
        await other.withLock(
          JOB,
          () => undefined,
          async () => 'next',
        ),
      ).toEqual({ acquired: true, value: 'next' });
    } finally {
      locks.close();
      other.close();
      await store.close();
    }
  });

  it('lets the completion free the lock in its own write, fenced by the token', async () => {
    const { store } = await storeWithJob('completion');
    const locks = new UnitLocks(store, () => Date.now());
    try {
      await locks.withLock(
        JOB,
        () => undefined,
        async (lock) => {
          await store.jobs.complete(JOB, { cursor: 120_000, nextRunAt: 1, unitToken: lock.token! });
          lock.released = true;
        },
      );
      expect(await store.jobs.lockUnit(JOB, 'next-unit', 60_000)).toMatchObject({ locked: true, job: { cursor: 120_000 } });
    } finally {
      locks.close();
      await store.close();
    }
  });

  it('keeps a long unit’s lock past its TTL by renewing it, and tells the unit when the lock was taken from it', async () => {
    const { store, path } = await storeWithJob('renew');
    // Renewed about every 60 ms, the lock outlives a pause of this process of up to ~0.9 s (a
    // loaded machine) before another unit could take it.
    const locks = new UnitLocks(store, () => Date.now(), { ttlMs: 1000, renewEveryMs: 60 });
    const lost: JobLockLostError[] = [];
    const db = new Database(path);
    const lockedUntil = (): number => (db.prepare('SELECT unit_until FROM jobs WHERE id = ?').get(JOB) as { unit_until: number }).unit_until;
    try {
      await locks.withLock(
        JOB,
        (err) => lost.push(err),
        async (lock) => {
          // Held by renewals past the TTL: the first lease has run out, the lock's expiry moved on,
          // and another unit still finds it taken.
          const firstUntil = lockedUntil();
          await waitFor(() => Date.now() > firstUntil + 200 && lockedUntil() > firstUntil, 'the lock held past its first TTL', { intervalMs: 50 });
          expect(await store.jobs.lockUnit(JOB, 'intruder', 60_000)).toMatchObject({ locked: false });
          // Another process takes the job's lock (as after an expiry): the next renewal finds it gone.
          db.prepare("UPDATE jobs SET unit_token = 'thief' WHERE id = ?").run(JOB);
          await waitFor(() => lock.lost, 'the loss noticed');
          await expect(store.jobs.complete(JOB, { cursor: 999_999, nextRunAt: 1, unitToken: lock.token! })).rejects.toBeInstanceOf(JobLockLostError);
        },
      );
      expect(lost).toEqual([expect.any(JobLockLostError)]);
      expect((await store.jobs.get(JOB))?.cursor).toBe(60_000);
      // The lost lock is not released by its old holder: the thief keeps it.
      expect(await store.jobs.lockUnit(JOB, 'someone', 60_000)).toMatchObject({ locked: false });
    } finally {
      db.close();
      locks.close();
      await store.close();
    }
  });

  it('runs the unit without the lock while the store cannot take writes (the unit reads the job itself)', async () => {
    const { store, path } = await storeWithJob('away');
    const locks = new UnitLocks(store, () => Date.now());
    const blocker = new Database(path);
    try {
      blocker.exec('BEGIN IMMEDIATE');
      const outcome = await locks.withLock(
        JOB,
        () => undefined,
        async (lock) => {
          expect(lock).toMatchObject({ token: null, job: null });
          // Reads still work under another process's write lock (WAL).
          return (await store.jobs.get(JOB))?.cursor;
        },
      );
      expect(outcome).toEqual({ acquired: true, value: 60_000 });
    } finally {
      blocker.exec('ROLLBACK');
      blocker.close();
      locks.close();
      await store.close();
    }
  });
});
