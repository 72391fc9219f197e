import { ValidationError } from '@tickfleet/core';
import { createRedisConnection, type RedisClient } from '@tickfleet/queues';
import { startRedis, waitFor, type TestRedis } from '@tickfleet/testkit';
import { CONNECT_ATTEMPT_LIMITS, ConnectAttempts } from './connect-attempts.js';

let redis: TestRedis;
let a: RedisClient;
let b: RedisClient;

beforeAll(async () => {
  redis = await startRedis();
  a = createRedisConnection(redis.url, { blocking: false });
  b = createRedisConnection(redis.url, { blocking: false });
});
afterAll(async () => {
  await Promise.all([a.quit(), b.quit()]);
  await redis.stop();
});

describe('ConnectAttempts', () => {
  it('shares one venue limit across workers and lets attempts in again as old ones leave the window', async () => {
    const limits = { binance: { attempts: 3, windowMs: 600 } };
    /** Redis's clock (the one the attempt log is kept on), ms. */
    const serverMs = async (): Promise<number> => {
      const [s, us] = await a.time();
      return Number(s) * 1000 + Math.floor(Number(us) / 1000);
    };
    /**
     * Three attempts from two workers, then a fourth. On a loaded machine the fourth may come a
     * whole window after the first (by Redis's clock): then it is rightly allowed, and the run is
     * repeated under a fresh prefix.
     */
    const run = async () => {
      const prefix = redis.namespace();
      const wa = new ConnectAttempts(a, { prefix, limits });
      const wb = new ConnectAttempts(b, { prefix, limits });
      const startedAt = await serverMs();
      const first = await Promise.all([wa.tryConnectAttempt('binance'), wb.tryConnectAttempt('binance'), wa.tryConnectAttempt('binance')]);
      const refused = await wb.tryConnectAttempt('binance');
      return (await serverMs()) - startedAt < limits.binance.windowMs ? { wa, wb, first, refused } : null;
    };
    let result: Awaited<ReturnType<typeof run>> = null;
    for (let attempt = 0; attempt < 8 && !result; attempt++) result = await run();
    if (!result) throw new Error('could not make four attempts within one 600 ms window in 8 runs');
    const { wa, wb, first, refused } = result;
    expect(first.map((r) => r.allowed)).toEqual([true, true, true]);
    expect(first.map((r) => (r.allowed ? r.remaining : -1)).sort()).toEqual([0, 1, 2]);
    expect(refused.allowed).toBe(false);
    const wait = refused.allowed ? 0 : refused.retryAfterMs;
    expect(wait).toBeGreaterThan(0);
    expect(wait).toBeLessThanOrEqual(600);
    // Once the oldest attempt ages out an attempt is allowed again; refused ones were never counted,
    // so the log never holds more than the limit.
    await waitFor(async () => (await wa.tryConnectAttempt('binance')).allowed, 'an attempt allowed after the window');
    expect(await a.zcard(wa.key('binance'))).toBeLessThanOrEqual(3);
    // Another venue has its own count; a venue without a known limit is never refused.
    expect((await wb.tryConnectAttempt('kraken')).allowed).toBe(true);
  });

  it("carries Binance's documented limit and rejects bad limits and venue names", async () => {
    expect(CONNECT_ATTEMPT_LIMITS['binance']).toEqual({ attempts: 300, windowMs: 300_000 });
    expect(() => new ConnectAttempts(a, { limits: { binance: { attempts: 0, windowMs: 1000 } } })).toThrow(/connect attempt limit of binance/);
    await expect(new ConnectAttempts(a).tryConnectAttempt('Not A Venue')).rejects.toThrow(ValidationError);
    expect(new ConnectAttempts(a, { prefix: 'tf' }).key('binance')).toBe('tf:venue:{binance}:connect-attempts');
  });
});
