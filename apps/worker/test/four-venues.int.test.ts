import { jobId, usEquitySessions } from '@tickfleet/core';
import { createRedisConnection, VenueQueues } from '@tickfleet/queues';
import { waitFor } from '@tickfleet/testkit';
import { FleetHarness, type FleetProcess } from '@tickfleet/testkit/fleet';

const DAY = 86_400_000;
const VENUES = ['alpaca', 'finnhub', 'fred', 'polygon'] as const;
type Venue = (typeof VENUES)[number];

/** The worker's latest `venue heartbeat` line per venue: its counters (submitted, ok, rateLimited, …). */
function heartbeats(worker: FleetProcess): Partial<Record<Venue, { ok: number; submitted: number; rateLimited: number; freezeRemaining: string }>> {
  const out: Partial<Record<Venue, { ok: number; submitted: number; rateLimited: number; freezeRemaining: string }>> = {};
  for (const line of worker.output().split('\n')) {
    if (!line.includes('"venue heartbeat"')) continue;
    const parsed = JSON.parse(line) as { venue: Venue; ok: number; submitted: number; rateLimited: number; freezeRemaining: string };
    out[parsed.venue] = parsed;
  }
  return out;
}

/**
 * The per-vendor executor design's acceptance test, with real processes: Polygon made slow (3-8 s
 * per request, 5 per minute, cap 1) holds its one slot the whole time, and Alpaca (day and minute
 * bars), Finnhub (option chains) and FRED (the Treasury curve) served by the same worker process
 * keep submitting and completing units; the worker's per-venue heartbeat lines show each venue's
 * own progress. Then a 429 storm on Finnhub freezes Finnhub alone: Alpaca and FRED units complete
 * during the freeze, and no other venue is frozen.
 */
describe('fleet: four vendors side by side (per-vendor executors)', () => {
  let fleet: FleetHarness;
  /** A session whose AAPL day bar Alpaca does not have (a venue hole): the gap ledger must name it. */
  const holeDay = usEquitySessions(Date.now() - 12 * DAY, Date.now() - 5 * DAY)[0]!;
  beforeAll(async () => {
    fleet = await FleetHarness.start({
      venues: {
        polygon: { latencyMs: { min: 3000, max: 8000 }, limit: { requests: 5, windowMs: 60_000 } },
        alpaca: { holes: { ranges: [{ symbol: 'AAPL', timeframe: '1d', fromMs: holeDay.dayStartMs, toMs: holeDay.dayStartMs + 1 }] } },
      },
    });
  });
  afterAll(() => fleet.stop());

  it('a slow Polygon stops none of the others, and a 429 storm freezes only its venue', async () => {
    const now = Date.now();
    await fleet.withStore(async (s) => {
      await s.connectors.upsert({ venue: 'polygon', baseUrl: fleet.mock.baseUrl('polygon'), rateLimit: { limit: 5, periodMs: 60_000, headroom: 1 } });
      await s.connectors.upsert({ venue: 'alpaca', baseUrl: fleet.mock.baseUrl('alpaca'), rateLimit: { limit: 200, periodMs: 60_000 } });
      await s.connectors.upsert({ venue: 'finnhub', baseUrl: fleet.mock.baseUrl('finnhub'), rateLimit: { limit: 60, periodMs: 60_000 }, freezeMs: 30_000 });
      await s.connectors.upsert({ venue: 'fred', baseUrl: fleet.mock.baseUrl('fred'), rateLimit: { limit: 120, periodMs: 60_000 } });
      await s.universes.set('finnhub', 'megacaps', ['AAPL', 'MSFT', 'NVDA']);
      // Polygon: a month of day bars for three symbols (per-day units of 3 symbols, one slow request each).
      for (const symbol of ['AAPL', 'MSFT', 'NVDA']) await s.jobs.upsert({ venue: 'polygon', type: 'ohlcv', symbol, timeframe: '1d', since: now - 30 * DAY });
      await s.jobs.upsert({ venue: 'alpaca', type: 'ohlcv', symbol: 'AAPL', timeframe: '1d', since: now - 30 * DAY });
      await s.jobs.upsert({ venue: 'alpaca', type: 'ohlcv', symbol: 'MSFT', timeframe: '1m' });
      await s.jobs.upsert({ venue: 'finnhub', type: 'options', symbol: '@megacaps' });
      await s.jobs.upsert({ venue: 'fred', type: 'series', symbol: 'treasury-curve', since: now - 10 * DAY });
    });
    const keys = { FINNHUB_API_KEY: 'four-venues-finnhub', FRED_API_KEY: 'fourvenuesfredkey0123456789abcde', TICKFLEET_HEARTBEAT_MS: '1000' };
    const scheduler = fleet.spawn('scheduler', ['scheduler'], { TICKFLEET_SCHEDULER_TICK_MS: '250', TICKFLEET_SCHEDULER_OPTIONS_EVERY_MS: '1000' });
    const worker = fleet.spawn('worker', ['worker'], keys);
    await fleet.ready(worker);

    const redis = createRedisConnection(fleet.redis.url, { blocking: false });
    const queues = new VenueQueues(redis, { prefix: fleet.prefix });
    try {
      // Polygon takes its one slot first.
      await waitFor(async () => (await queues.counts('polygon')).active > 0, 'a polygon unit in flight', { timeoutMs: 60_000, intervalMs: 100 });
      const runs = (id: string) => fleet.withStore(async (s) => (await s.jobs.get(id))?.stats.runs ?? 0);
      const ids = {
        alpacaDay: jobId({ venue: 'alpaca', type: 'ohlcv', symbol: 'AAPL', timeframe: '1d' }),
        alpacaMinute: jobId({ venue: 'alpaca', type: 'ohlcv', symbol: 'MSFT', timeframe: '1m' }),
        finnhub: jobId({ venue: 'finnhub', type: 'options', symbol: '@megacaps' }),
        fred: jobId({ venue: 'fred', type: 'series', symbol: 'treasury-curve' }),
      };
      // While Polygon's slow units hold its slot (sampled every poll), the other three complete units.
      let polygonBusy = 0;
      await waitFor(
        async () => {
          if ((await queues.counts('polygon')).active > 0) polygonBusy += 1;
          const [alpacaDay, alpacaMinute, finnhub, fred] = await Promise.all([ids.alpacaDay, ids.alpacaMinute, ids.finnhub, ids.fred].map(runs));
          // FRED's curve job runs once a day: its first run is its progress here.
          return alpacaDay! >= 2 && alpacaMinute! >= 2 && finnhub! >= 2 && fred! >= 1;
        },
        'alpaca day and minute and finnhub jobs each completed twice, the fred curve once',
        { timeoutMs: 120_000, intervalMs: 200 },
      );
      const polygonDone = fleet.mock.stats().venues.polygon.responses2xx;
      // Per-day units feed the gap ledger: Alpaca's missing AAPL day bar is its one open gap.
      const aaplGaps = await waitFor(
        () =>
          fleet.withStore(async (s) => {
            const gaps = await s.gaps.list({ jobId: ids.alpacaDay, open: true });
            return gaps.length > 0 ? gaps : undefined;
          }),
        'the alpaca hole on the gap ledger',
        { timeoutMs: 60_000, intervalMs: 200 },
      );
      expect(aaplGaps.map((g) => [g.fromMs, g.toMs])).toEqual([[holeDay.dayStartMs, holeDay.dayStartMs + DAY]]);
      // Polygon was still at it: its own requests are few (5 a minute at most), far from done.
      expect(polygonBusy).toBeGreaterThan(0);
      expect(polygonDone).toBeLessThan(30);
      const stats = fleet.mock.stats().venues;
      for (const v of ['alpaca', 'finnhub', 'fred'] as const) expect(stats[v].responses2xx).toBeGreaterThan(0);
      expect(stats.polygon.overLimitRequests).toBe(0);

      // Independent progress in the worker's heartbeat lines: every venue reports its own counters.
      const beats = await waitFor(
        () => {
          const b = heartbeats(worker);
          return VENUES.every((v) => (b[v]?.submitted ?? 0) > 0) && ['alpaca', 'finnhub', 'fred'].every((v) => (b[v as Venue]?.ok ?? 0) > 0) ? b : undefined;
        },
        'a heartbeat line with progress for every venue',
        { timeoutMs: 30_000, intervalMs: 200 },
      );
      expect(beats.polygon!.ok).toBeLessThan(beats.alpaca!.ok + beats.fred!.ok + beats.finnhub!.ok);

      // A 429 storm on Finnhub: Finnhub alone is frozen; Alpaca and FRED go on completing units.
      fleet.mock.patchScenario({ venues: { finnhub: { stormForMs: 60_000 } } });
      const control = (venue: string) => redis.hget(`${fleet.prefix}:venue:{${venue}}:control`, 'fu');
      const frozenUntil = await waitFor(
        async () => {
          const fu = Number((await control('finnhub')) ?? 0);
          return fu > Date.now() ? fu : undefined;
        },
        'finnhub frozen by its 429s',
        { timeoutMs: 60_000, intervalMs: 100 },
      );
      expect(await redis.hget(`${fleet.prefix}:venue:{finnhub}:control`, 'fc')).toBe('429');
      // New Alpaca and FRED jobs, added once Finnhub is frozen, run to completion meanwhile.
      const late = {
        alpaca: jobId({ venue: 'alpaca', type: 'ohlcv', symbol: 'NVDA', timeframe: '1d' }),
        fred: jobId({ venue: 'fred', type: 'series', symbol: 'DGS10' }),
      };
      await fleet.withStore(async (s) => {
        await s.jobs.upsert({ venue: 'alpaca', type: 'ohlcv', symbol: 'NVDA', timeframe: '1d', since: Date.now() - 10 * DAY });
        await s.jobs.upsert({ venue: 'fred', type: 'series', symbol: 'DGS10', since: Date.now() - 10 * DAY });
      });
      await waitFor(
        async () => (await runs(late.alpaca)) >= 1 && (await runs(late.fred)) >= 1,
        'new alpaca and fred jobs completed during the finnhub freeze',
        {
          timeoutMs: 60_000,
          intervalMs: 200,
        },
      );
      // Only Finnhub was frozen; the others never saw a 429.
      for (const other of ['alpaca', 'fred', 'polygon']) expect(Number((await control(other)) ?? 0)).toBe(0);
      expect(frozenUntil).toBeGreaterThan(0);
      expect(fleet.mock.stats().venues.finnhub.responses429).toBeGreaterThan(0);
      for (const v of ['alpaca', 'fred', 'polygon'] as const) expect(fleet.mock.stats().venues[v].responses429).toBe(0);
    } finally {
      fleet.mock.patchScenario({ venues: { finnhub: { storm: null } } });
      await queues.close();
      redis.disconnect();
    }
    await fleet.stopCleanly(scheduler);
    await fleet.stopCleanly(worker);
  }, 300_000);
});
