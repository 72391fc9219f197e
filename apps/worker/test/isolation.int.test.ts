import { VenueQueues, createRedisConnection } from '@tickfleet/queues';
import { waitFor } from '@tickfleet/testkit';
import { FleetHarness } from '@tickfleet/testkit/fleet';

const DAY = 86_400_000;

/**
 * A slow, low-quota venue never blocks a fast one: with Polygon answering in 3-8 s at 5 requests
 * per minute, a Binance backfill served by the same worker processes completes while Polygon units
 * are still in flight (the throughput comparison is the isolation benchmark, scripts/bench/isolation.ts).
 */
describe('fleet: a slow venue does not block a fast one', () => {
  let fleet: FleetHarness;
  beforeAll(async () => {
    fleet = await FleetHarness.start({
      venues: {
        binance: { latencyMs: 20 },
        polygon: { latencyMs: { min: 3000, max: 8000 }, limit: { requests: 5, windowMs: 60_000 } },
      },
    });
  });
  afterAll(() => fleet.stop());

  it('completes a binance backfill while polygon units are in flight', async () => {
    await fleet.upsertConnector('binance', '--limit', '100000', '--period', '10s', '--max-inflight', '4');
    await fleet.upsertConnector('polygon', '--limit', '5', '--period', '60s', '--headroom', '1', '--max-inflight', '4');
    const to = Math.floor(Date.now() / DAY) * DAY - DAY;
    for (const s of ['AAPL', 'MSFT', 'NVDA', 'TSLA']) {
      await fleet.backfill('polygon', s, '1m', to - 20 * DAY, to);
    }
    const workers = [0, 1].map((i) => fleet.spawn(`worker-${i}`, ['worker']));
    await Promise.all(workers.map((w) => fleet.ready(w)));
    // Let Polygon's slow units take their slots first.
    await waitFor(() => fleet.mock.stats().venues.polygon.requests >= 2, 'polygon requests in flight', { timeoutMs: 60_000 });

    const redis = createRedisConnection(fleet.redis.url, { blocking: false });
    const queues = new VenueQueues(redis, { prefix: fleet.prefix });
    try {
      const out = await fleet.backfill('binance', 'BTC/USDT', '1m', to - 30 * DAY, to, '--json');
      const id = (JSON.parse(out) as { id: string }).id;
      let polygonActiveSeen = 0;
      await waitFor(
        async () => {
          polygonActiveSeen = Math.max(polygonActiveSeen, (await queues.counts('polygon')).active);
          return fleet.withStore(async (store) => (await store.backfills.get(id))?.status === 'done');
        },
        'binance backfill done',
        { timeoutMs: 240_000, intervalMs: 100 },
      );
      // Isolation is judged against Polygon's own progress, not a wall-clock bound: Binance's 43
      // pages finished while Polygon's 5-per-minute quota still held its backfills open and its
      // units occupied their slots.
      expect(polygonActiveSeen).toBeGreaterThan(0);
      const polygon = await fleet.withStore((store) => store.backfills.list());
      expect(polygon.filter((b) => b.jobId.startsWith('polygon:') && b.status !== 'done').length).toBeGreaterThan(0);
      const stats = fleet.mock.stats().venues.polygon;
      expect(stats.overLimitRequests).toBe(0);
      expect(stats.responses429).toBe(0);
    } finally {
      await queues.close();
      redis.disconnect();
    }
    await Promise.all(workers.map((w) => fleet.stopCleanly(w)));
  }, 400_000);
});
