import { DEFAULT_SEED, expectedCandles } from '@tickfleet/mock-venue';
import { createRedisConnection } from '@tickfleet/queues';
import { waitFor } from '@tickfleet/testkit';
import { FleetHarness } from '@tickfleet/testkit/fleet';

const LIMIT = 12;
const WINDOW_MS = 10_000;
const DAY = 86_400_000;

/**
 * The worker role with TICKFLEET_BUDGET_URL: two `tickfleet worker` processes budget Binance in
 * Redis (rate-limiter-flexible, one key per clock window) instead of the state store, against an
 * emulation limited to 12 weight per 10 s. The venue's own counters show no window over the
 * limit; the budget's keys are in Redis, the store's budget was never spent, and
 * `tickfleet status` reads the Redis budget when given the same variable.
 */
describe('workers budgeting in Redis (TICKFLEET_BUDGET_URL)', () => {
  let fleet: FleetHarness;
  beforeAll(async () => {
    fleet = await FleetHarness.start({ venues: { binance: { limit: { weight: LIMIT, windowMs: WINDOW_MS } } } });
  }, 60_000);
  afterAll(() => fleet?.stop());

  it('backfills within the venue limit, spending the Redis budget only', async () => {
    const budgetEnv = { TICKFLEET_BUDGET_URL: fleet.redis.url };
    await fleet.upsertConnector('binance', '--limit', String(LIMIT), '--period', '10s', '--max-inflight', '3');
    const to = Math.floor(Date.now() / DAY) * DAY - DAY;
    const from = to - 6 * DAY;
    const { id } = JSON.parse(await fleet.backfill('binance', 'BTC/USDT', '1m', from, to, '--json')) as { id: string };
    fleet.mock.reset();
    const workers = [0, 1].map((i) => fleet.spawn(`worker-${i}`, ['worker'], budgetEnv));
    await Promise.all(workers.map((w) => fleet.ready(w)));
    for (const w of workers) expect(w.output()).toContain('"budgets":"redis"');

    // The status the CLI shows while the backfill runs comes from the Redis budget.
    const redis = createRedisConnection(fleet.redis.url, { blocking: false });
    try {
      await waitFor(async () => (await redis.keys(`${fleet.prefix}:venue:{binance}:budget:fw:*`)).length > 0, 'a Redis budget window key');
      const status = JSON.parse((await fleet.cli(['status', '--json'], budgetEnv)).stdout) as {
        venues: Array<{ venue: string; budget: { used: number; limit: number } }>;
      };
      const binance = status.venues.find((v) => v.venue === 'binance');
      expect(binance?.budget.limit).toBe(Math.floor(LIMIT * 0.95));
      expect(binance?.budget.used).toBeLessThanOrEqual(binance?.budget.limit ?? 0);
    } finally {
      redis.disconnect();
    }

    await fleet.backfillDone(id, 'the backfill done', { timeoutMs: 180_000 });
    const stats = fleet.mock.stats().venues.binance;
    expect(stats.overLimitRequests).toBe(0);
    expect(stats.responses429).toBe(0);
    expect(stats.maxWindowWeight).toBeLessThanOrEqual(LIMIT);
    expect(stats.weightUsed).toBeGreaterThan(LIMIT);
    // Nothing was spent from the store's own budget.
    expect(await fleet.withStore(async (store) => (await store.budgets.usage('binance'))?.used)).toBe(0);
    const stored = await fleet.storedOpenTimes('binance', 'BTC/USDT', '1m');
    expect(stored).toEqual(expectedCandles('binance', 'BTC/USDT', '1m', from, to, DEFAULT_SEED).map((c) => c.openTime));
    await Promise.all(workers.map((w) => fleet.stopCleanly(w)));
  }, 240_000);
});
