import { alignDown, jobId, type SeriesObservation } from '@tickfleet/core';
import { fredObservationDates, isBondMarketHoliday } from '@tickfleet/mock-venue';
import { waitFor } from '@tickfleet/testkit';
import { FleetHarness } from '@tickfleet/testkit/fleet';
import { TREASURY_CURVE_SERIES } from '@tickfleet/venues';

const DAY = 86_400_000;
const FRED_KEY = 'fredtestkey00000000000000000000a';

/**
 * FRED through a real scheduler and worker (redis-server, SQLite store and sink): one series unit
 * per day stores the whole Treasury constant-maturity curve, every tenor for every business day
 * since the job's start, with the bond-market holidays as null observations (not 0, not gaps); a
 * second run asks FRED again and stores nothing twice. FRED's limit is shrunk to 12 requests per
 * second, just above a curve unit (11 requests): the unit reserves its requests before the first
 * one, so none is sent twice however the windows fall, and FRED never says 429.
 */
describe('fleet: FRED economic series', () => {
  let fleet: FleetHarness;
  beforeAll(async () => {
    fleet = await FleetHarness.start({ venues: { fred: { limit: { requests: 12, windowMs: 1000 } } } });
  });
  afterAll(() => fleet.stop());

  it('stores every tenor of the curve per business day in one unit, holidays as nulls; a re-run stores nothing twice; a monthly series backfills with its revisions', async () => {
    await fleet.upsertConnector('fred', '--limit', '12', '--period', '1s', '--headroom', '1');
    // Created without --max-inflight: FRED's default cap.
    expect((await fleet.withStore((s) => s.connectors.get('fred')))!.maxInflight).toBe(2);
    // 75 days always hold at least one SIFMA close (the longest stretch without one is ~67 days).
    const today = alignDown(Date.now(), '1d');
    const since = today - 75 * DAY;
    const curve = jobId({ venue: 'fred', type: 'series', symbol: 'treasury-curve' });
    expect(await fleet.ok('jobs', 'add', 'fred', 'series', 'treasury-curve', '--since', new Date(since).toISOString())).toBe(`${curve}\n`);
    const env = { FRED_API_KEY: FRED_KEY, TICKFLEET_SCHEDULER_TICK_MS: '250' };
    const scheduler = fleet.spawn('scheduler', ['scheduler'], env);
    const worker = fleet.spawn('worker', ['worker'], env);
    await fleet.ready(worker);

    const runs = (n: number) => () => fleet.withStore(async (s) => ((await s.jobs.get(curve))?.stats.runs ?? 0) >= n);
    await waitFor(runs(1), 'the curve unit done', { timeoutMs: 120_000, intervalMs: 250 });

    // Ground truth: the emulation's business days from the start to the day before the unit ran
    // (its cursor; at least the day before the test started, a run after midnight collects one more).
    const cursor = (await fleet.withStore(async (s) => s.jobs.get(curve)))!.cursor!;
    expect(cursor).toBeGreaterThanOrEqual(fredObservationDates('DGS10', since, today - DAY).at(-1)!);
    const dates = fredObservationDates('DGS10', since, cursor);
    const holidays = dates.filter(isBondMarketHoliday).map((d) => new Date(d).toISOString().slice(0, 10));
    expect(holidays.length).toBeGreaterThanOrEqual(1);
    const stored = async (): Promise<SeriesObservation[]> =>
      fleet.withSink(async (sink) => {
        const out: SeriesObservation[] = [];
        for await (const { envelope } of sink.reader!.streamEnvelopes({ venue: 'fred', channel: 'series' })) out.push(envelope.payload as SeriesObservation);
        return out;
      });
    const first = await stored();
    expect(first).toHaveLength(TREASURY_CURVE_SERIES.length * dates.length);
    for (const tenor of TREASURY_CURVE_SERIES) {
      const rows = first.filter((o) => o.symbol === tenor);
      expect(rows.map((o) => o.date).sort()).toEqual(dates.map((d) => new Date(d).toISOString().slice(0, 10)));
      expect(
        rows
          .filter((o) => o.value === null)
          .map((o) => o.date)
          .sort(),
      ).toEqual(holidays);
      expect(rows.every((o) => o.value === null || o.value > 0)).toBe(true);
    }
    // One unit, one request per tenor (the FRED API has no multi-series observations call).
    expect((await fleet.mockStats('fred')).requests).toBe(TREASURY_CURVE_SERIES.length);
    expect(cursor).toBe(dates.at(-1));

    // `data count` reads the same: nulls are holes FRED declared, counted as such.
    const counted = JSON.parse(await fleet.ok('data', 'count', 'fred', 'DGS10', '--channel', 'series', '--json')) as Record<string, unknown>;
    expect(counted).toMatchObject({ records: dates.length, dates: dates.length, nulls: holidays.length, revisions: 0 });
    const csv = (await fleet.ok('data', 'export', 'fred', 'DGS10', '--channel', 'series', '--format', 'csv')).trim().split('\n');
    expect(csv[0]).toBe('series_id,date,value,realtime_start,realtime_end,units');
    // A holiday exports as an empty value cell, never 0.
    expect(
      csv
        .filter((line) => /^DGS10,[\d-]+,,/.test(line))
        .map((line) => line.split(',')[1])
        .sort(),
    ).toEqual(holidays);
    expect(csv).toHaveLength(dates.length + 1);

    // A re-run (due again now) asks FRED for the recent dates again; every vintage is already stored.
    await fleet.withStore((s) => s.jobs.upsert({ venue: 'fred', type: 'series', symbol: 'treasury-curve', nextRunAt: Date.now() }));
    await waitFor(runs(2), 'the second curve unit done', { timeoutMs: 120_000, intervalMs: 250 });
    const stats = await fleet.mockStats('fred');
    expect(stats.requests).toBe(2 * TREASURY_CURVE_SERIES.length);
    expect(stats).toMatchObject({ responses429: 0, overLimitRequests: 0 });
    expect(stats.maxWindowWeight).toBeLessThanOrEqual(12);
    // Nothing stored twice (a day that ended meanwhile may add its own new observations).
    const second = await stored();
    expect(new Set(second.map((o) => `${o.symbol}:${o.date}:${o.realtimeStart}`)).size).toBe(second.length);
    expect(second.filter((o) => Date.parse(`${o.date}T00:00:00Z`) <= cursor)).toHaveLength(first.length);

    // A backfill of a monthly series: two year-long units, one request each; every month published
    // by now stored with its first release and, where it came out, its revision.
    const before = (await fleet.mockStats('fred')).requests;
    const backfill = JSON.parse(
      await fleet.ok(
        'backfill',
        'fred',
        'CPIAUCSL',
        '--from',
        new Date(today - 500 * DAY).toISOString(),
        '--to',
        new Date(today).toISOString(),
        '--follow',
        '--json',
      ),
    ) as { status: string; unitsTotal: number };
    expect(backfill).toMatchObject({ status: 'done', unitsTotal: 2 });
    expect((await fleet.mockStats('fred')).requests).toBe(before + 2);
    const cpi = JSON.parse(await fleet.ok('data', 'count', 'fred', 'CPIAUCSL', '--channel', 'series', '--json')) as Record<string, number>;
    // About 16 months released (the newest one or two not revised yet).
    expect(cpi.dates).toBeGreaterThanOrEqual(15);
    expect(cpi).toMatchObject({ nulls: 0, records: cpi.dates! + cpi.revisions! });
    expect(cpi.revisions).toBeGreaterThanOrEqual(cpi.dates! - 2);

    await fleet.stopCleanly(worker);
    await fleet.stopCleanly(scheduler);
    expect(worker.output()).not.toContain(FRED_KEY);
  }, 240_000);
});
