import { FleetVenueControl } from '@tickfleet/budget';
import { createRedisConnection } from '@tickfleet/queues';
import { waitFor } from '@tickfleet/testkit';
import { FleetHarness } from '@tickfleet/testkit/fleet';

const DAY = 86_400_000;
const STORM_MS = 8000;
/** Upper bounds for waiting on a state: generous, since CI shares 2 cores with other suites. */
const STATE_WAIT = { timeoutMs: 90_000 };

/**
 * A 429 storm on Binance freezes Binance fleet-wide until the time the venue gave (Retry-After),
 * halves its AIMD concurrency, and leaves Polygon untouched; after the storm Binance resumes and
 * AIMD climbs back to the connector's cap.
 */
describe('fleet: a 429 storm freezes only its venue', () => {
  let fleet: FleetHarness;

  beforeAll(async () => {
    fleet = await FleetHarness.start({
      venues: {
        binance: { latencyMs: 150, limit: { weight: 100_000, windowMs: 10_000 } },
        polygon: { latencyMs: 150, limit: { requests: 100_000, windowMs: 10_000 } },
      },
    });
  });
  afterAll(() => fleet.stop());

  it('freezes binance for the storm, polygon goes on, and AIMD climbs back', async () => {
    await fleet.withStore(async (store) => {
      const aimd = { min: 1, increaseAfterMs: 500, stableMs: 500, maxFailureRatio: 0.5, maxP95LatencyMs: 10_000 };
      await store.connectors.upsert({
        venue: 'binance',
        baseUrl: fleet.mock.baseUrl('binance'),
        rateLimit: { limit: 100_000, periodMs: 10_000 },
        maxInflight: 4,
        freezeMs: 5000,
        aimd,
      });
      await store.connectors.upsert({
        venue: 'polygon',
        baseUrl: fleet.mock.baseUrl('polygon'),
        rateLimit: { limit: 100_000, periodMs: 10_000 },
        maxInflight: 2,
        aimd,
      });
    });
    const to = Math.floor(Date.now() / DAY) * DAY - DAY;
    for (const s of ['BTC/USDT', 'ETH/USDT', 'SOL/USDT']) {
      await fleet.backfill('binance', s, '1m', to - 80 * DAY, to);
    }
    for (const s of ['AAPL', 'MSFT', 'NVDA', 'TSLA']) {
      await fleet.backfill('polygon', s, '1m', to - 80 * DAY, to);
    }
    const worker = fleet.spawn('worker', ['worker']);
    await fleet.ready(worker);

    const series: Array<{ t: number; binance: number; polygon: number; b429: number }> = [];
    const sample = (): void => {
      const s = fleet.mock.stats().venues;
      series.push({ t: Date.now(), binance: s.binance.requests, polygon: s.polygon.requests, b429: s.binance.responses429 });
    };
    const sampler = setInterval(sample, 50);
    const redis = createRedisConnection(fleet.redis.url, { blocking: false });
    const control = new FleetVenueControl(redis, { prefix: fleet.prefix });
    try {
      await waitFor(() => fleet.mock.stats().venues.binance.requests > 20, 'binance traffic', STATE_WAIT);
      const stormStart = Date.now();
      const applied = fleet.mock.patchScenario({ venues: { binance: { stormForMs: STORM_MS } } });
      const stormEnd = applied.venues?.binance?.storm?.toMs ?? stormStart + STORM_MS;
      await waitFor(() => fleet.mock.stats().venues.binance.responses429 > 0, 'first 429', STATE_WAIT);
      const first429At = Date.now();

      const frozen = await waitFor(() => control.freezeOf('binance'), 'binance frozen', STATE_WAIT);
      const recordSeenAt = Date.now();
      // Counted from when the freeze record is seen (not from a fixed delay after the first 429,
      // which a loaded machine may take longer to act on).
      const frozenSeenAt = Math.max(recordSeenAt, first429At + 300);
      expect(frozen?.cause).toBe('429');
      // Frozen until the time the venue gave: Retry-After counts whole seconds to the storm's end
      // (rounded up) from when the emulation answered (not before the storm began), the worker adds
      // it to its own clock when it reads the answer (at the latest when the record is seen), and
      // the adapter snaps a retry within a second of the weight window's end to it.
      expect(frozen!.untilMs).toBeGreaterThanOrEqual(stormEnd - 1000);
      expect(frozen!.untilMs).toBeLessThanOrEqual(stormEnd + (recordSeenAt - stormStart) + 2000);
      const halved = await control.concurrency('binance');
      expect(halved).toBeLessThan(4);

      await new Promise((r) => setTimeout(r, stormEnd - Date.now() + 200));
      sample();
      const during = series.filter((p) => p.t >= frozenSeenAt && p.t <= stormEnd - 100);
      expect(during.length).toBeGreaterThan(5);
      const binanceDuring = during[during.length - 1]!.binance - during[0]!.binance;
      const polygonDuring = during[during.length - 1]!.polygon - during[0]!.polygon;
      // Only requests already in flight when the first 429 arrived may reach binance during the freeze.
      expect(binanceDuring).toBeLessThanOrEqual(4);
      expect(fleet.mock.stats().venues.binance.responses429).toBeLessThanOrEqual(8);
      // Polygon was not frozen: no freeze record, and during Binance's freeze it kept sending new
      // requests, more than its cap of 2 in flight. (Not its pace against the pace before the
      // storm: on a loaded machine that follows the load, not the freeze.)
      expect(await control.freezeOf('polygon')).toBeNull();
      expect(polygonDuring).toBeGreaterThan(2);
      expect(fleet.mock.stats().venues.polygon.responses429).toBe(0);

      // After the storm Binance resumes and AIMD adds back one per clean interval up to the cap.
      const atStormEnd = fleet.mock.stats().venues.binance.requests;
      await waitFor(() => fleet.mock.stats().venues.binance.requests >= atStormEnd + 5, 'binance resumes', STATE_WAIT);
      await waitFor(async () => (await control.concurrency('binance')) === 4, 'AIMD back at the cap', STATE_WAIT);
    } finally {
      clearInterval(sampler);
      redis.disconnect();
    }
    await fleet.stopCleanly(worker);
  }, 400_000);
});
