import { Redis } from 'ioredis';
import { startRedis, type TestRedis, ManualClock } from '@tickfleet/testkit';
import { StoreOutageFallback } from './store-outage-fallback.js';
import { WorkerHeartbeat } from './venue-control/worker-heartbeat.js';

let redis: TestRedis;
let conn: Redis;

beforeAll(async () => {
  redis = await startRedis();
  conn = new Redis(redis.url);
});
afterAll(async () => {
  await conn.quit();
  await redis.stop();
});

describe('StoreOutageFallback', () => {
  it('counts live workers per venue from the heartbeats it beats, leaves on shutdown, and keeps each venue its outage state', async () => {
    const clock = new ManualClock(Date.UTC(2024, 0, 1, 0, 0, 30));
    const prefix = redis.namespace();
    const workers = ['w1', 'w2', 'w3'].map((id) => new StoreOutageFallback(new WorkerHeartbeat(conn, id, { prefix, clock, livenessMs: 10_000 }), { clock }));
    expect(await Promise.all(workers.map((w) => w.configure('binance')))).toEqual([1, 2, 3]);
    expect(await workers[0]!.configure('kraken')).toBe(1);

    // w3 stops beating: after the liveness window only w1 and w2 count; w2 then leaves cleanly.
    clock.advance(6000);
    await workers[1]!.configure('binance');
    clock.advance(6000);
    expect(await workers[0]!.configure('binance')).toBe(2);
    await workers[1]!.leave();
    expect(await workers[0]!.configure('binance')).toBe(1);

    // The outage state is per venue: one venue's budget failing says nothing of another's.
    expect(workers[0]!.isActive('binance')).toBe(false);
    workers[0]!.activate('binance');
    expect(workers[0]!.isActive('binance')).toBe(true);
    expect(workers[0]!.isActive('kraken')).toBe(false);
    workers[0]!.deactivate('binance');
    expect(workers[0]!.isActive('binance')).toBe(false);
  });
});
