import { createRedisConnection, type RedisClient } from '@tickfleet/queues';
import { startRedis, type TestRedis } from '@tickfleet/testkit';
import { StreamCheckpoints } from './stream-checkpoints.js';

/** Checkpoints on a real redis-server: a monotonic maximum per symbol, fenced by the newest claiming holder's token. */
describe('StreamCheckpoints', () => {
  let redis: TestRedis;
  let conn: RedisClient;
  beforeAll(async () => {
    redis = await startRedis();
    conn = createRedisConnection(redis.url);
  });
  afterAll(async () => {
    conn.disconnect();
    await redis.stop();
  });

  it('keeps the largest id per symbol and refuses a holder older than the last claim', async () => {
    const cps = new StreamCheckpoints(conn, redis.namespace());
    expect(await cps.claim('majors', 3)).toEqual({});
    expect(await cps.advance('majors', 3, new Map([['BTC/USDT', 100]]))).toBe(true);
    // A smaller id (a late batch) never moves it back.
    expect(
      await cps.advance(
        'majors',
        3,
        new Map([
          ['BTC/USDT', 90],
          ['ETH/USDT', 7],
        ]),
      ),
    ).toBe(true);
    expect(await cps.read('majors')).toEqual({ 'BTC/USDT': 100, 'ETH/USDT': 7 });
    // A new holder claims under a higher token and resumes from the checkpoint; the old one is fenced out.
    expect(await cps.claim('majors', 5)).toEqual({ 'BTC/USDT': 100, 'ETH/USDT': 7 });
    expect(await cps.advance('majors', 3, new Map([['BTC/USDT', 150]]))).toBe(false);
    expect(await cps.claim('majors', 4)).toBeNull();
    expect(await cps.advance('majors', 5, new Map([['BTC/USDT', 120]]))).toBe(true);
    expect(await cps.read('majors')).toEqual({ 'BTC/USDT': 120, 'ETH/USDT': 7 });
    // Streams are apart: one hash tag each.
    expect(cps.key('majors')).toMatch(/:stream:\{majors\}:checkpoint$/);
    expect(await cps.read('alts')).toEqual({});
  });
});
