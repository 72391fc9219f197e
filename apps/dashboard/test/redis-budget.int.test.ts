import { openRedisBudgets } from '@tickfleet/budget';
import { openStore } from '@tickfleet/store';
import { startRedis, tempDir, waitFor, type TempDir, type TestRedis } from '@tickfleet/testkit';
import { runDashboard, type FleetStatus } from '../src/index.js';
import { connector } from './fleet-fixture.js';

/**
 * The dashboard with TICKFLEET_BUDGET_URL shows the Redis budget the workers spend, not the
 * store's: weight spent through a Redis budget appears in /api/status, and the store's own budget
 * stays untouched.
 */
describe('dashboard with TICKFLEET_BUDGET_URL', () => {
  let redis: TestRedis;
  let dir: TempDir;
  beforeAll(async () => {
    redis = await startRedis();
    dir = tempDir();
  });
  afterAll(async () => {
    await redis.stop();
    dir.remove();
  });

  it('reads budget usage from the Redis budget', async () => {
    const prefix = redis.namespace();
    const storeUrl = dir.sqliteUrl('state.db');
    const store = await openStore(storeUrl);
    // An hour's window: the status read right after the acquire sees the same window.
    await store.connectors.upsert(connector('binance', 1200, { rateLimit: { policy: 'fixed-window', limit: 1200, periodMs: 3_600_000, headroom: 1 } }));
    const budgets = await openRedisBudgets(redis.url, { connectors: store.connectors, prefix });
    const running = await runDashboard(
      {
        REDIS_URL: redis.url,
        TICKFLEET_STORE_URL: storeUrl,
        TICKFLEET_BUDGET_URL: redis.url,
        TICKFLEET_PREFIX: prefix,
        TICKFLEET_DASHBOARD_PORT: '0',
        TICKFLEET_DASHBOARD_TOKEN: 't0k',
      },
      { handleSignals: false },
    );
    try {
      expect(await budgets.acquire('binance', 37)).toMatchObject({ ok: true, used: 37 });
      const current = await budgets.usage('binance');
      // The status is cached for up to statusMaxAgeMs (its history sampler may have read it just
      // before the acquire): wait for a snapshot taken after it.
      const binance = await waitFor(
        async () => {
          const res = await fetch(`${running.url}/api/status`, { headers: { authorization: 'Bearer t0k' } });
          const venue = ((await res.json()) as FleetStatus).venues.find((v) => v.venue === 'binance');
          return venue?.budget?.used === current?.used ? venue : null;
        },
        'a status snapshot with the spend',
        { timeoutMs: 60_000 },
      );
      expect(binance?.budget).toMatchObject({ policy: 'fixed-window', limit: 1200, used: current?.used, windowStartMs: current?.windowStartMs });
      // Unless the hour turned between the acquire and the read, that is the 37 just spent.
      if (current?.windowStartMs === Math.floor(Date.now() / 3_600_000) * 3_600_000) expect(current.used).toBe(37);
      expect((await store.budgets.usage('binance'))?.used).toBe(0);
    } finally {
      await running.close();
      await budgets.close();
      await store.close();
    }
  });
});
