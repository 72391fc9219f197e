import { JobLockLostError } from '@tickfleet/core';
import type { RedisClient } from './redis-connection.js';
import { startRedis, waitFor, type TestRedis } from '@tickfleet/testkit';
import { JobLock } from './job-lock.js';
import { createRedisConnection } from './redis-connection.js';

let redis: TestRedis;
let a: RedisClient;
let b: RedisClient;

beforeAll(async () => {
  redis = await startRedis();
  a = createRedisConnection(redis.url);
  b = createRedisConnection(redis.url);
});
afterAll(async () => {
  await Promise.all([a.quit(), b.quit()]);
  await redis.stop();
});

const JOB = 'binance:BTC/USDT:1m:ohlcv';
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('JobLock', () => {
  it('lets one holder at a time take a job, across clients', async () => {
    const prefix = redis.namespace();
    const la = new JobLock(a, { prefix, ttlMs: 5000 });
    const lb = new JobLock(b, { prefix, ttlMs: 5000 });
    expect(la.key(JOB)).toBe(`${prefix}:venue:{binance}:lock:${JOB}`);
    const results = await Promise.all([la.acquire(JOB), lb.acquire(JOB), la.acquire(JOB), lb.acquire(JOB)]);
    expect(results.filter((t) => t !== null)).toHaveLength(1);
    expect(await lb.acquire('binance:ETH/USDT:1m:ohlcv')).not.toBeNull();
  });

  it('renews and releases only with the holding token', async () => {
    const prefix = redis.namespace();
    const la = new JobLock(a, { prefix, ttlMs: 300 });
    const lb = new JobLock(b, { prefix, ttlMs: 300 });
    const token = (await la.acquire(JOB))!;
    expect(await lb.renew(JOB, 'not-the-token')).toBe(false);
    expect(await lb.release(JOB, 'not-the-token')).toBe(false);
    expect(await la.isLocked(JOB)).toBe(true);
    await sleep(200);
    expect(await la.renew(JOB, token)).toBe(true);
    await sleep(200);
    // Renewed: still held 400 ms after a 300 ms acquire.
    expect(await lb.acquire(JOB)).toBeNull();
    expect(await la.release(JOB, token)).toBe(true);
    expect(await lb.acquire(JOB)).not.toBeNull();
  });

  it('frees the job of a dead holder after its TTL; the old token cannot touch the new lock', async () => {
    const prefix = redis.namespace();
    const la = new JobLock(a, { prefix, ttlMs: 150 });
    const lb = new JobLock(b, { prefix, ttlMs: 5000 });
    const old = (await la.acquire(JOB))!;
    await sleep(250);
    const fresh = await lb.acquire(JOB);
    expect(fresh).not.toBeNull();
    expect(await la.renew(JOB, old)).toBe(false);
    expect(await la.release(JOB, old)).toBe(false);
    expect(await lb.isLocked(JOB)).toBe(true);
  });

  it('withLock keeps the lock past its TTL while the work runs, then releases it', async () => {
    const prefix = redis.namespace();
    const la = new JobLock(a, { prefix, ttlMs: 200, renewEveryMs: 50 });
    const lb = new JobLock(b, { prefix, ttlMs: 200 });
    let contended: Awaited<ReturnType<typeof lb.withLock>> | undefined;
    const result = await la.withLock(JOB, async (lock) => {
      await sleep(500);
      contended = await lb.withLock(JOB, async () => 'never');
      expect(lock.lost).toBe(false);
      return 42;
    });
    expect(result).toEqual({ acquired: true, value: 42 });
    expect(contended).toEqual({ acquired: false });
    expect(await lb.isLocked(JOB)).toBe(false);
  });

  it('withLock aborts the signal when the lock is taken away', async () => {
    const prefix = redis.namespace();
    const la = new JobLock(a, { prefix, ttlMs: 1000, renewEveryMs: 50 });
    const result = await la.withLock(JOB, async (lock) => {
      await b.del(la.key(JOB)); // an operator (or an expiry) removes the lock
      await new Promise<void>((resolve) => lock.signal.addEventListener('abort', () => resolve()));
      // The reason is what a request aborted by the signal throws: typed, naming the job.
      expect(lock.signal.reason).toBeInstanceOf(JobLockLostError);
      expect((lock.signal.reason as JobLockLostError).jobId).toBe(JOB);
      return lock.lost;
    });
    expect(result).toEqual({ acquired: true, value: true });
  });

  it("with releaseDelayMs, withLock's release goes out with the next acquire of the venue, by itself after the delay, or on flushReleases", async () => {
    const prefix = redis.namespace();
    // A delay no test step reaches: only an acquire or flushReleases sends the release.
    const la = new JobLock(a, { prefix, releaseDelayMs: 60_000 });
    const observer = new JobLock(b, { prefix });
    expect(await la.withLock(JOB, async () => 'done')).toEqual({ acquired: true, value: 'done' });
    expect(await observer.isLocked(JOB)).toBe(true);
    // Another venue's acquire does not carry it (its keys are in another slot on a Redis Cluster).
    const polygon = 'polygon:AAPL:1m:ohlcv';
    expect(await la.acquire(polygon)).not.toBeNull();
    expect(await observer.isLocked(JOB)).toBe(true);
    // The same venue's next acquire does: Redis ran the release before the acquire it answered.
    expect(await la.acquire('binance:ETH/USDT:1m:ohlcv')).not.toBeNull();
    expect(await observer.isLocked(JOB)).toBe(false);
    // The job's own next unit takes the lock while its previous release is still pending.
    expect(await la.withLock(JOB, async () => 1)).toEqual({ acquired: true, value: 1 });
    expect(await la.withLock(JOB, async () => 2)).toEqual({ acquired: true, value: 2 });
    await la.flushReleases();
    expect(await observer.isLocked(JOB)).toBe(false);

    // A release that is never followed by an acquire is sent after the delay.
    const lc = new JobLock(a, { prefix, releaseDelayMs: 20 });
    await lc.withLock(JOB, async () => undefined);
    await waitFor(async () => !(await observer.isLocked(JOB)), 'the delayed release');
  });

  it('a pending release never frees a lock another holder took meanwhile', async () => {
    const prefix = redis.namespace();
    const la = new JobLock(a, { prefix, releaseDelayMs: 60_000 });
    const lb = new JobLock(b, { prefix });
    await la.withLock(JOB, async () => undefined);
    // The lock goes away before the pending release is sent (its TTL ran out, or an operator removed it).
    await b.del(la.key(JOB));
    const fresh = await lb.acquire(JOB);
    expect(fresh).not.toBeNull();
    await la.flushReleases();
    expect(await lb.isLocked(JOB)).toBe(true);
    expect(await lb.release(JOB, fresh!)).toBe(true);
  });
});
