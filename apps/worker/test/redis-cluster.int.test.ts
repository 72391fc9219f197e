import { FleetVenueControl } from '@tickfleet/budget';
import { alignDown } from '@tickfleet/core';
import { DEFAULT_SEED, expectedCandles } from '@tickfleet/mock-venue';
import { createRedisConnection, VenueQueues } from '@tickfleet/queues';
import { waitFor } from '@tickfleet/testkit';
import { FleetHarness } from '@tickfleet/testkit/fleet';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/**
 * The fleet on a real three-master Redis Cluster: each venue's queue, limiter, control record and
 * job locks live under its own hash tag, so BullMQ's and tickfleet's multi-key scripts run inside
 * one slot while venues spread over the masters. Scheduler, workers and CLI all connect with a
 * `redis+cluster://` URL.
 */
describe('fleet on Redis Cluster', () => {
  let fleet: FleetHarness;
  beforeAll(async () => {
    fleet = await FleetHarness.start({ venues: { binance: { latencyMs: 20 } } }, { cluster: true });
  }, 60_000);
  afterAll(() => fleet?.stop());

  it('schedules, runs, freezes and locks across cluster slots', async () => {
    expect(fleet.redis.url).toMatch(/^redis\+cluster:\/\//);
    await fleet.upsertConnector('binance', '--limit', '100000', '--period', '10s', '--max-inflight', '3');
    await fleet.upsertConnector('polygon', '--limit', '100000', '--period', '10s', '--max-inflight', '2');
    const since = alignDown(Date.now() - 6 * HOUR, '1m');
    for (const s of ['BTC/USDT', 'ETH/USDT'])
      await fleet.ok('jobs', 'add', 'binance', 'ohlcv', s, '--timeframe', '1m', '--since', new Date(since).toISOString());
    // Polygon trades in US sessions only (none on a holiday, a weekend or at night): day bars of the last weeks always exist.
    await fleet.ok('jobs', 'add', 'polygon', 'ohlcv', 'AAPL', '--timeframe', '1d', '--since', new Date(Date.now() - 14 * DAY).toISOString());
    const to = Math.floor(Date.now() / DAY) * DAY - DAY;
    const bf = JSON.parse(await fleet.backfill('binance', 'SOL/USDT', '1m', to - 3 * DAY, to, '--json')) as { id: string };

    const scheduler = fleet.spawn('scheduler', ['scheduler'], { TICKFLEET_SCHEDULER_TICK_MS: '500' });
    const workers = [0, 1].map((i) => fleet.spawn(`worker-${i}`, ['worker']));
    await Promise.all(workers.map((w) => fleet.ready(w)));
    await fleet.ready(scheduler, 'scheduler started');

    await waitFor(
      () =>
        fleet.withStore(async (store) => {
          const jobs = await store.jobs.list({ enabled: true });
          const done = (await store.backfills.get(bf.id))?.status === 'done';
          return done && jobs.length === 3 && jobs.every((j) => j.stats.runs >= 1 && j.cursor !== null);
        }),
      'live jobs ran and the backfill finished',
      { timeoutMs: 60_000, intervalMs: 300 },
    );
    const sol = await fleet.storedOpenTimes('binance', 'SOL/USDT', '1m');
    expect(sol).toEqual(expectedCandles('binance', 'SOL/USDT', '1m', to - 3 * DAY, to, DEFAULT_SEED).map((c) => c.openTime));

    // Venue control, freezes and job locks on the cluster connection.
    const redis = createRedisConnection(fleet.redis.url, { blocking: false });
    const queues = new VenueQueues(redis, { prefix: fleet.prefix });
    try {
      const control = new FleetVenueControl(redis, { prefix: fleet.prefix });
      // Far off: the checks below must see the freeze in force however slowly they run.
      const until = Date.now() + 60_000;
      await control.onRateLimited('polygon', until, '429');
      expect((await control.freezeOf('polygon'))?.cause).toBe('429');
      expect(await queues.frozenForMs('polygon')).toBeGreaterThan(1000);
      expect(await queues.frozenForMs('binance')).toBe(0);
      const counts = await queues.counts('binance');
      expect(counts.failed).toBe(0);
    } finally {
      await queues.close();
      redis.disconnect();
    }
    await fleet.stopCleanly(scheduler);
    for (const w of workers) await fleet.stopCleanly(w);
  }, 120_000);
});
