import { alignDown } from '@tickfleet/core';
import { DEFAULT_SEED, expectedCandles } from '@tickfleet/mock-venue';
import { waitFor } from '@tickfleet/testkit';
import { FleetHarness } from '@tickfleet/testkit/fleet';

const DAY = 86_400_000;
const HOUR = 3_600_000;
const MIN = 60_000;
const JOB = 'binance:BTC/USDT:1m:ohlcv';

interface Range {
  fromMs: number;
  toMs: number;
}

interface Count {
  count: number;
  expected: number;
  firstOpenTime: number;
  lastOpenTime: number;
  openGaps: number;
  missingIntervals: number;
  missingCandles: number;
  neverRequestedCandles: number;
  neverRequested: Array<Range & { candles: number }>;
}

/**
 * History never requested apart from holes in what was: a live job and two backfilled islands of
 * a past month. Between the islands and up to the live range nothing was ever asked for, so
 * `gaps scan`, `data count`, `gaps` and the fleet status (the dashboard's open gaps) report no
 * hole there and name the never-requested stretches with exact candle counts; candles lost
 * inside a backfill or the live range are holes, and `backfill --gaps` fills those alone.
 */
describe('fleet: holes apart from history never requested', () => {
  let fleet: FleetHarness;
  beforeAll(async () => {
    fleet = await FleetHarness.start();
  });
  afterAll(() => fleet.stop());

  const candlesIn = (r: Range): number => expectedCandles('binance', 'BTC/USDT', '1m', r.fromMs, r.toMs, DEFAULT_SEED).length;
  const count = async (): Promise<Count> =>
    JSON.parse(await fleet.ok('data', 'count', 'binance', 'BTC/USDT', '--timeframe', '1m', '--sink', fleet.sinkUrl, '--json')) as Count;
  const scan = async (): Promise<{ open: Range[]; neverRequested: Range[]; recorded: number; removed: number }> =>
    JSON.parse(await fleet.ok('gaps', 'scan', JOB, '--sink', fleet.sinkUrl, '--json')) as {
      open: Range[];
      neverRequested: Range[];
      recorded: number;
      removed: number;
    };
  const binanceOpenGaps = async (): Promise<number> => {
    const status = JSON.parse(await fleet.ok('status', '--json')) as { venues: Array<{ venue: string; openGaps: number }> };
    return status.venues.find((v) => v.venue === 'binance')!.openGaps;
  };

  it('reports never-requested history apart from holes in gaps, data count and the fleet status; backfill --gaps fills the holes only', async () => {
    await fleet.upsertConnector('binance', '--limit', '100000', '--period', '10s');
    // A live job without `since`: it starts the worker's initial lookback (2 h here) before its first run.
    await fleet.ok('jobs', 'add', 'binance', 'ohlcv', 'BTC/USDT', '--timeframe', '1m');
    const startedMs = Date.now();
    const scheduler = fleet.spawnScheduler();
    const worker = fleet.spawn('worker', ['worker'], { TICKFLEET_INITIAL_LOOKBACK_MS: '2h' });
    await fleet.ready(worker);

    // Two islands of six hours, 30 and 20 days back.
    const today = alignDown(Date.now(), '1d');
    const islandA = { fromMs: today - 30 * DAY, toMs: today - 30 * DAY + 6 * HOUR };
    const islandB = { fromMs: today - 20 * DAY, toMs: today - 20 * DAY + 6 * HOUR };
    for (const island of [islandA, islandB]) {
      const bf = JSON.parse(await fleet.backfill('binance', 'BTC/USDT', '1m', island.fromMs, island.toMs, '--json')) as { id: string };
      await fleet.backfillDone(bf.id, `island backfill ${bf.id} done`);
    }
    await waitFor(
      () => fleet.withStore(async (store) => ((await store.jobs.get(JOB))?.cursor ?? 0) >= alignDown(Date.now(), '1m') - 3 * MIN),
      'the live job caught up',
      { timeoutMs: 90_000, intervalMs: 500 },
    );
    // Where live collection started: 2 h before its first run, which came after the job was added.
    const liveFrom = (await fleet.storedOpenTimes('binance', 'BTC/USDT', '1m')).find((t) => t >= islandB.toMs)!;
    expect(liveFrom).toBeGreaterThanOrEqual(alignDown(startedMs - 2 * HOUR, '1m') - MIN);
    expect(liveFrom).toBeLessThanOrEqual(alignDown(Date.now() - 2 * HOUR, '1m'));
    const never = [
      { fromMs: islandA.toMs, toMs: islandB.fromMs },
      { fromMs: islandB.toMs, toMs: liveFrom },
    ];
    const neverCandles = never.reduce((n, r) => n + candlesIn(r), 0);
    expect(neverCandles).toBe((islandB.fromMs - islandA.toMs + liveFrom - islandB.toMs) / MIN);

    // What an earlier version recorded: every stretch between stored candles as missing.
    await fleet.withStore(async (store) => {
      for (const r of never) await store.gaps.record({ jobId: JOB, ...r }, Date.now());
    });
    expect(await binanceOpenGaps()).toBe(2);

    const first = await scan();
    expect(first).toMatchObject({ open: [], neverRequested: never, recorded: 0, removed: 2 });
    expect(JSON.parse(await fleet.ok('gaps', JOB, '--json'))).toEqual([]);
    expect(await binanceOpenGaps()).toBe(0);
    expect(JSON.parse(await fleet.ok('gaps', JOB, '--never-requested', '--sink', fleet.sinkUrl, '--json'))).toEqual(
      never.map((r) => ({ jobId: JOB, ...r, candles: candlesIn(r) })),
    );

    const whole = await count();
    const requested = [islandA, islandB, { fromMs: liveFrom, toMs: whole.lastOpenTime + MIN }];
    expect(whole).toMatchObject({
      count: requested.reduce((n, r) => n + candlesIn(r), 0),
      expected: requested.reduce((n, r) => n + candlesIn(r), 0),
      firstOpenTime: islandA.fromMs,
      openGaps: 0,
      missingIntervals: 0,
      missingCandles: 0,
      neverRequestedCandles: neverCandles,
      neverRequested: never.map((r) => ({ ...r, candles: candlesIn(r) })),
    });
    const table = await fleet.ok('data', 'count', 'binance', 'BTC/USDT', '--timeframe', '1m', '--sink', fleet.sinkUrl);
    expect(table).toContain(
      `never requested: ${neverCandles} candles (${new Date(never[0]!.fromMs).toISOString()} to ${new Date(never[0]!.toMs).toISOString()}, ${new Date(never[1]!.fromMs).toISOString()} to ${new Date(liveFrom).toISOString()})`,
    );

    // Real losses: 10 candles inside island B and 5 inside the live range.
    const lostB = { fromMs: islandB.fromMs + 100 * MIN, toMs: islandB.fromMs + 110 * MIN };
    const lostLive = { fromMs: liveFrom + 30 * MIN, toMs: liveFrom + 35 * MIN };
    const { default: Database } = await import('better-sqlite3');
    const db = new Database(new URL(fleet.sinkUrl.replace('sqlite://', 'file://')).pathname);
    const del = db.prepare('DELETE FROM candles WHERE symbol = ? AND open_time >= ? AND open_time < ?');
    expect(del.run('BTC/USDT', lostB.fromMs, lostB.toMs).changes + del.run('BTC/USDT', lostLive.fromMs, lostLive.toMs).changes).toBe(15);
    db.close();

    expect(await scan()).toMatchObject({ open: [lostB, lostLive], neverRequested: never, recorded: 2, removed: 0 });
    expect(await binanceOpenGaps()).toBe(2);
    expect(await count()).toMatchObject({ openGaps: 2, missingIntervals: 2, missingCandles: 15, neverRequestedCandles: neverCandles });

    // backfill --gaps fetches the holes, not the never-requested history between them.
    const gapFill = JSON.parse(await fleet.ok('backfill', '--gaps', JOB, '--json')) as { id: string; unitsTotal: number };
    expect(gapFill.unitsTotal).toBe(2);
    await fleet.backfillDone(gapFill.id, 'gap backfill done');
    expect(await scan()).toMatchObject({ open: [], neverRequested: never });
    expect(await count()).toMatchObject({ openGaps: 0, missingCandles: 0, neverRequestedCandles: neverCandles });
    expect(await binanceOpenGaps()).toBe(0);

    await fleet.stopCleanly(worker);
    await fleet.stopCleanly(scheduler);
  }, 240_000);
});
