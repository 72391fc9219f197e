import { FleetVenueControl } from '@tickfleet/budget';
import { createRedisConnection, type RedisClient } from '@tickfleet/queues';
import { openStore, type StateStore } from '@tickfleet/store';
import { waitFor } from '@tickfleet/testkit';
import { FleetHarness } from '@tickfleet/testkit/fleet';
import type { FleetHistory, VenueHistory } from '../src/fleet-history.js';
import { DashboardServer, type FleetStatus } from '../src/index.js';

const DAY = 86_400_000;
const TOKEN = 'history-test-token';
const STATE_WAIT = { timeoutMs: 120_000, intervalMs: 200 };
const SAMPLE_MS = 250;
const STORM_MS = 10_000;

interface BackfillReport {
  id: string;
  unitsTotal: number;
}

/**
 * The history behind the overview's charts, against a real fleet: a `tickfleet worker` child
 * process backfilling Binance and Polygon from the venue emulations, a 429 storm on Binance in the
 * middle, and the dashboard sampling every 250 ms. The units and records it reports are checked
 * against the store (backfill chunks) and the sink (candles stored), the freeze against the
 * emulation's 429s.
 */
describe('dashboard history', () => {
  let fleet: FleetHarness;
  let store: StateStore;
  let redis: RedisClient;
  let server: DashboardServer;

  beforeAll(async () => {
    fleet = await FleetHarness.start({
      venues: {
        binance: { latencyMs: 60, limit: { weight: 100_000, windowMs: 10_000 } },
        polygon: { latencyMs: 60, limit: { requests: 100_000, windowMs: 10_000 } },
      },
    });
    store = await openStore(fleet.storeUrl);
    redis = createRedisConnection(fleet.redis.url, { blocking: false });
  });
  afterAll(async () => {
    await server?.stop();
    await store?.close();
    redis?.disconnect();
    await fleet?.stop();
  });

  const get = async <T>(path: string, token: string | null = TOKEN): Promise<{ status: number; body: T }> => {
    const res = await fetch(`${server.url}${path}`, { headers: token === null ? {} : { authorization: `Bearer ${token}` } });
    return { status: res.status, body: (await res.json()) as T };
  };
  const history = async (): Promise<FleetHistory> => (await get<FleetHistory>('/api/history?minutes=15')).body;
  const venueOf = (h: FleetHistory, venue: string): VenueHistory | undefined => h.venues.find((v) => v.venue === venue);

  it('samples every venue; units/s and records/s add up to the units and candles the fleet completed; the 429 freeze is a mark', async () => {
    const aimd = { min: 1, increaseAfterMs: 500, maxFailureRatio: 0.5, maxP95LatencyMs: 10_000 };
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

    server = new DashboardServer({ redis, store, prefix: fleet.prefix, historyIntervalMs: SAMPLE_MS, statusMaxAgeMs: 0, credentials: { token: TOKEN } });
    await server.start();
    // Same auth as every other page.
    expect((await get('/api/history', null)).status).toBe(401);
    expect(await get('/api/history?minutes=45')).toEqual({ status: 400, body: { error: 'invalid minutes: expected one of 15, 30, 60, got "45"' } });
    // Counting starts at the dashboard's first sample of each venue, before any work.
    await waitFor(async () => (await history()).venues.length === 2, 'first samples of both venues', STATE_WAIT);

    const to = Math.floor(Date.now() / DAY) * DAY - DAY;
    const binanceFrom = to - 12 * DAY;
    const polygonFrom = to - 12 * DAY;
    const backfills: Record<string, BackfillReport> = {
      binance: JSON.parse(await fleet.backfill('binance', 'BTC/USDT', '1m', binanceFrom, to, '--json')) as BackfillReport,
      polygon: JSON.parse(await fleet.backfill('polygon', 'AAPL', '1m', polygonFrom, to, '--json')) as BackfillReport,
    };
    const worker = fleet.spawn('worker', ['worker']);
    await fleet.ready(worker);

    // A 429 storm on Binance mid-run: the worker freezes it fleet-wide until the Retry-After.
    const control = new FleetVenueControl(redis, { prefix: fleet.prefix });
    await waitFor(() => fleet.mock.stats().venues.binance.requests >= 3, 'binance traffic', STATE_WAIT);
    const stormStart = Date.now();
    const stormEnd = fleet.mock.patchScenario({ venues: { binance: { stormForMs: STORM_MS } } }).venues?.binance?.storm?.toMs ?? stormStart + STORM_MS;
    const frozen = await waitFor(() => control.freezeOf('binance'), 'binance frozen by the storm', STATE_WAIT);
    expect(frozen?.cause).toBe('429');
    // The history sees a freeze only while it lasts (samples, not events): the storm outlasts any
    // stall of the sampler on a busy machine by far, and the mark is awaited, not assumed.
    await waitFor(async () => venueOf(await history(), 'binance')?.marks.some((m) => m.cause === '429'), 'the 429 freeze in the history', STATE_WAIT);

    for (const [venue, bf] of Object.entries(backfills)) {
      await waitFor(async () => (await store.backfills.get(bf.id))?.status === 'done', `${venue} backfill done`, STATE_WAIT);
    }
    // A clean stop sends the worker's last batched outcome report (units and records) before it
    // exits; two samples after that, the history has read every completion.
    await fleet.stopCleanly(worker);
    const doneAt = Date.now();
    await waitFor(async () => ((await history()).venues[0]?.t.at(-1) ?? 0) > doneAt + 2 * SAMPLE_MS, 'samples after the backfills', STATE_WAIT);

    const h = await history();
    const status = (await get<FleetStatus>('/api/status')).body;
    expect(h).toMatchObject({ minutes: 15, intervalMs: SAMPLE_MS, capacity: (60 * 60_000) / SAMPLE_MS + 1 });
    expect(h.venues.map((v) => v.venue)).toEqual(['binance', 'polygon']);

    const candles = {
      binance: await fleet.candleReport('binance', 'BTC/USDT', '1m', binanceFrom, to),
      polygon: await fleet.candleReport('polygon', 'AAPL', '1m', polygonFrom, to),
    };
    for (const venue of ['binance', 'polygon'] as const) {
      const v = venueOf(h, venue)!;
      const n = v.t.length;
      expect(n).toBeGreaterThan(4);
      for (const col of [v.budgetUsed, v.budgetLimit, v.unitsPerSec, v.recordsPerSec, v.concurrency, v.concurrencyMax, v.cursorLagSec])
        expect(col).toHaveLength(n);
      // Ground truth: every chunk of the backfill is one completed unit; every candle the sink holds is a record a unit wrote.
      expect(candles[venue]).toMatchObject({ missing: 0, duplicates: 0 });
      expect(v.totals).toEqual({ unitsCompleted: backfills[venue]!.unitsTotal, recordsWritten: candles[venue].stored });
      // The rates are those counts spread over the samples: rate × interval summed gives them back.
      const integral = (rates: (number | null)[]): number =>
        rates.reduce<number>((sum, r, i) => sum + (r === null ? 0 : (r * (v.t[i]! - v.t[i - 1]!)) / 1000), 0);
      expect(integral(v.unitsPerSec)).toBeCloseTo(backfills[venue]!.unitsTotal, 6);
      expect(integral(v.recordsPerSec)).toBeCloseTo(candles[venue].stored, 3);
      expect(Math.max(...v.unitsPerSec.map((r) => r ?? 0))).toBeGreaterThan(0);

      const now = status.venues.find((s) => s.venue === venue)!;
      expect(v.budgetLimit.at(-1)).toBe(now.budget!.limit);
      expect(Math.max(...v.budgetUsed.map((u) => u ?? 0))).toBeGreaterThan(0);
      expect(v.concurrencyMax.at(-1)).toBe(now.concurrency.max);
      for (const c of v.concurrency) expect(c).toBeLessThanOrEqual(now.concurrency.max);
    }

    // The storm: the emulation answered 429s, and Binance's timeline has the freeze as a band; Polygon has none.
    expect(fleet.mock.stats().venues.binance.responses429).toBeGreaterThan(0);
    const binance = venueOf(h, 'binance')!;
    const storm = binance.marks.filter((m) => m.cause === '429');
    expect(storm.length).toBeGreaterThanOrEqual(1);
    for (const m of storm) {
      expect(m.fromMs).toBeGreaterThanOrEqual(stormStart);
      expect(m.toMs).toBeGreaterThan(m.fromMs);
    }
    // The first band covers the freeze the test saw in Redis.
    expect(storm[0]!.fromMs).toBeLessThan(frozen!.untilMs);
    expect(storm[0]!.toMs).toBeGreaterThanOrEqual(Math.min(frozen!.untilMs, stormEnd - 1000));
    // A rate limit halves the venue's AIMD concurrency, and the chart's samples caught it below the ceiling.
    expect(Math.min(...binance.concurrency)).toBeLessThan(4);
    expect(venueOf(h, 'polygon')!.marks).toEqual([]);
  }, 300_000);
});
