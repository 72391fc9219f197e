import { createRedisConnection, VenueQueues } from '@tickfleet/queues';
import { waitFor } from '@tickfleet/testkit';
import { FleetHarness } from '@tickfleet/testkit/fleet';

const HOUR = 3_600_000;

/**
 * A request heavier than the venue's whole budget window (Binance klines weigh 2; the connector
 * grants 1 per 10 s) can never be sent. The unit fails once, for good, with a message that names
 * the venue, the weight, the effective limit and what to change, instead of yielding forever.
 */
describe('fleet: a request heavier than the whole window', () => {
  let fleet: FleetHarness;
  beforeAll(async () => {
    fleet = await FleetHarness.start({ venues: { binance: {} } });
  });
  afterAll(() => fleet.stop());

  it('fails its unit once, without retries and without a request, naming venue and weight', async () => {
    await fleet.upsertConnector('binance', '--limit', '1', '--headroom', '1', '--period', '10s');
    const to = Math.floor(Date.now() / HOUR) * HOUR - HOUR;
    const out = await fleet.backfill('binance', 'BTC/USDT', '1m', to - HOUR, to, '--json');
    const id = (JSON.parse(out) as { id: string }).id;
    const worker = fleet.spawn('worker', ['worker']);
    await fleet.ready(worker);

    const redis = createRedisConnection(fleet.redis.url, { blocking: false });
    const queues = new VenueQueues(redis, { prefix: fleet.prefix });
    try {
      await waitFor(() => fleet.withStore(async (store) => (await store.backfills.get(id))?.status === 'failed'), 'the backfill to fail', {
        timeoutMs: 90_000,
      });
      const message =
        "binance: a request of weight 2 can never be sent: the venue's effective budget is 1 per 10s window (limit x headroom). " +
        "Raise the connector's limit or headroom so that limit x headroom is at least 2";
      const chunks = await fleet.withStore((store) => store.backfills.chunks(id));
      expect(chunks).toHaveLength(1);
      expect(chunks[0]).toMatchObject({ status: 'failed' });
      expect(chunks[0]!.error).toContain(`unrecoverable: ${message}`);

      // One attempt, then failed for good: no retry, no yield back to delayed.
      const failed = await queues.queue('binance').getJobs(['failed']);
      expect(failed).toHaveLength(1);
      expect(failed[0]!.attemptsMade).toBe(1);
      expect(failed[0]!.failedReason).toContain(message);
      expect(await queues.counts('binance')).toMatchObject({ waiting: 0, prioritized: 0, delayed: 0, active: 0, failed: 1 });
      // The gate refused before anything was sent.
      expect(fleet.mock.stats().venues.binance.requests).toBe(0);
    } finally {
      await queues.close();
      redis.disconnect();
    }
    await fleet.stopCleanly(worker);
  }, 180_000);
});
