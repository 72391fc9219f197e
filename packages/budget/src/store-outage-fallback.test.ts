import { Redis } from 'ioredis';
import { startRedis, type TestRedis, ManualClock } from '@tickfleet/testkit';
import { LocalFallbackBudget, StoreOutageFallback } from './store-outage-fallback.js';
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

describe('LocalFallbackBudget', () => {
  it('spends floor(limit / liveWorkers) per clock-aligned window, liveWorkers from Redis heartbeats', async () => {
    const clock = new ManualClock(Date.UTC(2024, 0, 1, 0, 0, 30));
    const prefix = redis.namespace();
    const beats = ['w1', 'w2', 'w3'].map((id) => new WorkerHeartbeat(conn, id, { prefix, clock, livenessMs: 10_000 }));
    const counts = (await Promise.all(beats.map((b) => b.beat('binance')))).map((b) => b.live);
    expect(Math.max(...counts)).toBe(3);
    expect(await beats[0]!.liveWorkers('kraken')).toBe(0);

    const budget = new LocalFallbackBudget({ limit: 1140, periodMs: 60_000, clock });
    expect(budget.share).toBe(570); // unknown fleet: assume 2 workers, never the full limit
    budget.setLiveWorkers(await beats[0]!.liveWorkers('binance'));
    expect(budget.share).toBe(380);
    expect(budget.active).toBe(false);
    budget.activate();
    expect(budget.active).toBe(true);
    // The window the fallback began in may be spent already in the shared budget: nothing in it.
    expect(budget.tryAcquire(1)).toEqual({ ok: false, retryAtMs: Date.UTC(2024, 0, 1, 0, 1), share: 380 });
    clock.advance(30_000);
    expect(budget.tryAcquire(300)).toMatchObject({ ok: true, used: 300 });
    expect(budget.tryAcquire(80)).toMatchObject({ ok: true, used: 380 });
    expect(budget.tryAcquire(1)).toEqual({ ok: false, retryAtMs: Date.UTC(2024, 0, 1, 0, 2), share: 380 });
    clock.advance(60_000);
    expect(budget.tryAcquire(1)).toMatchObject({ ok: true, used: 1 });

    // w3 stops beating: after the liveness window only w1 and w2 count, and w2 leaves cleanly.
    clock.advance(6000);
    await beats[0]!.beat('binance');
    await beats[1]!.beat('binance');
    clock.advance(6000);
    expect((await beats[0]!.beat('binance')).live).toBe(2);
    await beats[1]!.leave('binance');
    budget.setLiveWorkers(await beats[0]!.liveWorkers('binance'));
    expect(budget.share).toBe(1140);
    budget.deactivate();
    expect(budget.active).toBe(false);
  });
});

describe('StoreOutageFallback', () => {
  it("keeps each venue's share at limit / live workers from the heartbeats it beats, and leaves on shutdown", async () => {
    const clock = new ManualClock(Date.UTC(2024, 0, 1, 0, 0, 30));
    const prefix = redis.namespace();
    const workers = ['w1', 'w2', 'w3'].map((id) => new StoreOutageFallback(conn, new WorkerHeartbeat(conn, id, { prefix, clock }), { prefix, clock }));
    for (const w of workers) await w.configure('binance', 1140, 60_000);
    expect(workers.map((w) => w.shareOf('binance'))).toEqual([1140, 570, 380]);
    await workers[0]!.configure('binance', 1140, 60_000);
    expect(workers[0]!.shareOf('binance')).toBe(380);
    expect(workers[0]!.fleetAllowance('binance')).toBe(1140);
    // A venue this worker was never configured for: nothing to spend, come back shortly.
    expect(await workers[0]!.tryAcquire('kraken', 1)).toEqual({ ok: false, retryAtMs: clock.now() + 1000 });
    expect(workers[0]!.isActive('kraken')).toBe(false);
    await workers[1]!.leave();
    await workers[2]!.leave();
    await workers[0]!.configure('binance', 1140, 60_000);
    expect(workers[0]!.shareOf('binance')).toBe(1140);
  });
});
