import { calendarFor, candleEnvelope, type Envelope, type Gap, type Timeframe } from '@tickfleet/core';
import { openStore, type StateStore } from '@tickfleet/store';
import { tempDir, waitFor, type TempDir, ManualClock } from '@tickfleet/testkit';
import { GapLedger, Pipeline, Spool, SqliteSink, findGaps, gapsToRanges, splitByRequest } from './index.js';
import { candles, T0 } from '../test/fixtures/envelopes.js';
import { holdWriteLock } from '../test/fixtures/sqlite-lock.js';

const JOB = 'binance:BTC/USDT:1m:ohlcv';
const M = 60_000;

describe('gap ledger', () => {
  let dir: TempDir;
  let store: StateStore;
  let sink: SqliteSink;
  let ledger: GapLedger;
  const clock = new ManualClock(T0 + 86_400_000);
  beforeEach(async () => {
    dir = tempDir('gaps-');
    store = await openStore(dir.sqliteUrl('state.db'));
    sink = new SqliteSink(dir.file('data.db'));
    ledger = new GapLedger(store, sink.reader, { clock, holeAfterAttempts: 2 });
  });
  afterEach(async () => {
    await sink.close();
    await store.close();
    dir.remove();
  });

  it('finds missing intervals between stored candles within a range', async () => {
    await sink.write(candles([0, 1, 4, 5, 6, 10]));
    const q = { venue: 'binance', symbol: 'BTC/USDT', timeframe: '1m' as const };
    expect(await findGaps(sink.reader, q)).toEqual([
      { fromMs: T0 + 2 * M, toMs: T0 + 4 * M },
      { fromMs: T0 + 7 * M, toMs: T0 + 10 * M },
    ]);
    expect(await findGaps(sink.reader, { ...q, fromMs: T0 + 4 * M })).toEqual([{ fromMs: T0 + 7 * M, toMs: T0 + 10 * M }]);
  });

  it('US equities (polygon): nights, weekends and holidays are not gaps; a missing session or minute is', async () => {
    const bar = (timeframe: Timeframe, openTime: number): Envelope =>
      candleEnvelope({ venue: 'polygon', symbol: 'AAPL', timeframe, openTime, open: '1', high: '2', low: '0.5', close: '1.5', volume: '1' }, openTime + 1);
    // January 2024: weekends and two holidays (New Year's Day, Martin Luther King Jr. Day)
    const days = calendarFor('polygon').expectedOpenTimes('1d', Date.UTC(2024, 0, 1), Date.UTC(2024, 1, 1));
    expect(days).toHaveLength(21);
    await sink.write(days.map((t) => bar('1d', t)));
    const q = { venue: 'polygon', symbol: 'AAPL', timeframe: '1d' as const };
    expect(await findGaps(sink.reader, q)).toEqual([]);
    expect((await ledger.scan('polygon:AAPL:1d:ohlcv')).open).toEqual([]);
    // the sink without Tuesday the 16th, Friday the 19th and Monday the 22nd: one gap per run of grid days
    await sink.close();
    sink = new SqliteSink(dir.file('data2.db'));
    const missing = [Date.UTC(2024, 0, 16, 5), Date.UTC(2024, 0, 19, 5), Date.UTC(2024, 0, 22, 5)];
    await sink.write(days.filter((t) => !missing.includes(t)).map((t) => bar('1d', t)));
    const D = 86_400_000;
    expect(await findGaps(sink.reader, q)).toEqual(missing.map((t) => ({ fromMs: t, toMs: t + D })));
    // minutes: two sessions with a night and a weekend between them, one regular minute missing
    const minutes = calendarFor('polygon').expectedOpenTimes('1m', Date.UTC(2024, 0, 12), Date.UTC(2024, 0, 17));
    expect(minutes).toHaveLength(2 * 390); // Friday 12th and Tuesday 16th (Monday is a holiday)
    const lost = minutes[500]!;
    await sink.write(minutes.filter((t) => t !== lost).map((t) => bar('1m', t)));
    expect(await findGaps(sink.reader, { ...q, timeframe: '1m' })).toEqual([{ fromMs: lost, toMs: lost + M }]);
  });

  it('records gaps once, marks them filled after a fill, replaces a partly filled gap by what remains', async () => {
    await sink.write(candles([0, 1, 4, 5, 10]));
    const first = await ledger.scan(JOB);
    expect(first).toMatchObject({ recorded: 2, filled: 0 });
    expect((await ledger.scan(JOB)).recorded).toBe(0);
    expect((await store.gaps.list({ jobId: JOB, open: true })).map((g) => [g.fromMs - T0, g.toMs - T0])).toEqual([
      [2 * M, 4 * M],
      [6 * M, 10 * M],
    ]);
    // Fill the first gap completely and the second one partly.
    await sink.write(candles([2, 3, 6, 7]));
    const second = await ledger.scan(JOB);
    expect(second).toMatchObject({ recorded: 1, filled: 2 });
    const open = await store.gaps.list({ jobId: JOB, open: true });
    expect(open.map((g) => [g.fromMs - T0, g.toMs - T0])).toEqual([[8 * M, 10 * M]]);
    expect(gapsToRanges(open)).toEqual([{ fromMs: T0 + 8 * M, toMs: T0 + 10 * M }]);
  });

  it('turns a gap the venue keeps returning nothing for into a venue hole, no longer made into units', async () => {
    await sink.write(candles([0, 3]));
    await ledger.scan(JOB);
    const [gap] = await store.gaps.list({ jobId: JOB, open: true });
    await ledger.fillAttempted(gap!, 0);
    expect((await store.gaps.list({ jobId: JOB, open: true }))[0]).toMatchObject({ kind: 'missing', attempts: 1 });
    expect(gapsToRanges(await store.gaps.list({ jobId: JOB, open: true }))).toHaveLength(1);
    await ledger.fillAttempted(gap!, 0);
    const after = await store.gaps.list({ jobId: JOB });
    expect(after).toHaveLength(1);
    expect(after[0]).toMatchObject({ kind: 'venue-hole', attempts: 2 });
    expect(gapsToRanges(after)).toEqual([]);
    // Rescans do not bring it back as missing.
    await ledger.scan(JOB);
    expect((await store.gaps.list({ jobId: JOB }))[0]!.kind).toBe('venue-hole');
  });

  it('a fill that brings candles to one end of a gap, or only to another gap, leaves what is still missing open', async () => {
    await sink.write(candles([0, 5, 9]));
    await ledger.scan(JOB);
    const [first, second] = await store.gaps.list({ jobId: JOB, open: true });
    // One unit over both gaps: the venue returned the first gap's first two minutes and nothing else.
    await sink.write(candles([1, 2]));
    await ledger.fillAttempted(first!, 2);
    await ledger.fillAttempted(second!, 2);
    const open = await store.gaps.list({ jobId: JOB, open: true });
    expect(open.map((g) => [(g.fromMs - T0) / M, (g.toMs - T0) / M, g.attempts])).toEqual([
      [3, 5, 0],
      [6, 9, 1],
    ]);

    // US equity day bars: the gap's neighbours are a holiday weekend away (Monday the 15th is MLK Day).
    const day = (d: number): number => Date.UTC(2024, 0, d, 5);
    const bar = (openTime: number): Envelope =>
      candleEnvelope(
        { venue: 'polygon', symbol: 'AAPL', timeframe: '1d', openTime, open: '1', high: '2', low: '0.5', close: '1.5', volume: '1' },
        openTime + 1,
      );
    await sink.write([11, 12, 18, 19].map((d) => bar(day(d))));
    const job = 'polygon:AAPL:1d:ohlcv';
    await ledger.scan(job);
    const [gap] = await store.gaps.list({ jobId: job, open: true });
    expect([gap!.fromMs, gap!.toMs]).toEqual([day(16), day(18)]);
    // Only Wednesday came back: Tuesday is still missing.
    await sink.write([bar(day(17))]);
    await ledger.fillAttempted(gap!, 1);
    expect((await store.gaps.list({ jobId: job, open: true })).map((g) => [g.fromMs, g.toMs])).toEqual([[day(16), day(17)]]);
  });

  it('records holes only inside what was requested; reports what was never requested and drops its old records', async () => {
    const minutes = (from: number, to: number): number[] => Array.from({ length: to - from }, (_, i) => from + i);
    const at = (from: number, to: number) => ({ fromMs: T0 + from * M, toMs: T0 + to * M });
    const backfill = (id: string, from: number, to: number) =>
      store.backfills.create({ id, jobId: JOB, fromMs: T0 + from * M, toMs: T0 + to * M, chunks: [at(from, to)] });
    // Two backfilled islands, [0, 10) and [20, 30) (minute 25 lost), and live data from minute 50 on (minute 55 lost).
    await backfill('bf-1', 0, 10);
    await backfill('bf-2', 20, 30);
    await sink.write(candles([...minutes(0, 10), ...minutes(20, 30).filter((m) => m !== 25), ...minutes(50, 60).filter((m) => m !== 55)]));
    // What an earlier version recorded: everything between stored candles.
    for (const [from, to] of [
      [10, 20],
      [30, 50],
    ] as const)
      await store.gaps.record({ jobId: JOB, ...at(from, to) }, T0);
    const scan = await ledger.scan(JOB);
    expect(scan).toMatchObject({ open: [at(25, 26), at(55, 56)], neverRequested: [at(10, 20), at(30, 50)], recorded: 2, removed: 2, filled: 0 });
    expect((await store.gaps.list({ jobId: JOB })).map((g) => [(g.fromMs - T0) / M, (g.toMs - T0) / M, g.filledAt])).toEqual([
      [25, 26, null],
      [55, 56, null],
    ]);
    expect((await ledger.scan(JOB)).recorded).toBe(0);

    // A job whose live collection started at `since` (minute 45): its head up to the first stored candle is a hole.
    await store.jobs.upsert({ venue: 'binance', type: 'ohlcv', symbol: 'BTC/USDT', timeframe: '1m', since: T0 + 45 * M });
    await store.jobs.advanceCursor(JOB, T0 + 59 * M);
    const series = { venue: 'binance', symbol: 'BTC/USDT', timeframe: '1m' as const };
    expect(await splitByRequest(store, sink.reader, series, [at(30, 50)])).toEqual({ requested: [at(45, 50)], neverRequested: [at(30, 45)] });
    // A range one backfill was asked to fetch is requested, across a cut that is not on the grid.
    await store.backfills.create({
      id: 'bf-3',
      jobId: JOB,
      fromMs: T0 + 12 * M + 30_000,
      toMs: T0 + 15 * M,
      chunks: [{ fromMs: T0 + 12 * M + 30_000, toMs: T0 + 15 * M }],
    });
    const rescan = await ledger.scan(JOB);
    expect(rescan).toMatchObject({ neverRequested: [at(10, 12.5), at(15, 20), at(30, 45)], recorded: 2 });
    expect(rescan.open).toEqual([at(13, 15), at(25, 26), at(45, 50), at(55, 56)]);

    // Live data from minute 0 and a backfill of [3, 5) in it: the live start is looked for over the
    // whole series, before the backfill too, whatever range the caller asks about.
    await sink.write(
      candles(
        minutes(0, 10).filter((m) => m !== 5),
        'binance',
        'ETH/USDT',
      ),
    );
    await store.backfills.create({ id: 'bf-eth', jobId: 'binance:ETH/USDT:1m:ohlcv', fromMs: T0 + 3 * M, toMs: T0 + 5 * M, chunks: [at(3, 5)] });
    const eth = { venue: 'binance', symbol: 'ETH/USDT', timeframe: '1m' as const, fromMs: T0 + 4 * M, toMs: T0 + 8 * M };
    expect(await splitByRequest(store, sink.reader, eth, await findGaps(sink.reader, eth))).toEqual({ requested: [at(5, 6)], neverRequested: [] });
  });

  it('merges touching and overlapping open gaps into ranges', () => {
    const g = (fromMs: number, toMs: number, kind: Gap['kind'] = 'missing', filledAt: number | null = null): Gap => ({
      jobId: JOB,
      fromMs,
      toMs,
      kind,
      detectedAt: 0,
      filledAt,
      attempts: 0,
    });
    expect(gapsToRanges([g(50, 60), g(0, 10), g(10, 20), g(15, 30), g(40, 45, 'venue-hole'), g(70, 80, 'missing', 5)])).toEqual([
      { fromMs: 0, toMs: 30 },
      { fromMs: 50, toMs: 60 },
    ]);
  });

  it('records no gap where candles still sit in the spool; scans the range again after replay (true gaps kept)', async () => {
    // A sink that gives up fast, so a locked database sends batches to the spool at once.
    const outageSink = new SqliteSink(dir.file('outage.db'), { busyTimeoutMs: 20, maxRetries: 0 });
    const pipeline = new Pipeline({
      sink: outageSink,
      spool: Spool.open({ dir: dir.file('spool') }),
      batch: { maxBatchAgeMs: 5 },
      replay: { retryIntervalMs: 50 },
    });
    const spooledLedger = new GapLedger(store, outageSink.reader, { clock, spooled: pipeline });
    try {
      await pipeline.push(candles([0, 1, 8, 9]));
      const lock = holdWriteLock(dir.file('outage.db'));
      // Minute 6 is a true hole (the venue never returned it); 2..5 and 7 are collected during the outage.
      const res = await pipeline.push(candles([2, 3, 4, 5, 7]));
      expect(res.spooled).toBe(5);
      const scan = await spooledLedger.scan(JOB, { fromMs: T0, toMs: T0 + 10 * M });
      // Read from the sink alone, 2..8 looks missing; none of it is recorded while it is spooled.
      expect(scan.open).toEqual([{ fromMs: T0 + 2 * M, toMs: T0 + 8 * M }]);
      expect(scan).toMatchObject({ recorded: 0, deferred: true });
      expect(await store.gaps.list({ jobId: JOB, open: true })).toEqual([]);
      lock.release();
      // Replay moves the spooled candles into the sink, then the deferred range is scanned again.
      await waitFor(
        async () => (await store.gaps.list({ jobId: JOB, open: true })).length > 0 && spooledLedger.deferred.length === 0,
        'deferred scan after replay',
        { timeoutMs: 20_000 },
      );
      expect((await store.gaps.list({ jobId: JOB, open: true })).map((g) => [g.fromMs - T0, g.toMs - T0])).toEqual([[6 * M, 7 * M]]);
    } finally {
      await pipeline.close();
      await outageSink.close();
    }
  });

  it('rejects non-candle jobs by name', async () => {
    await expect(ledger.scan('polymarket:TOKEN1:-:book')).rejects.toMatchObject({ code: 'E_VALIDATION', field: 'jobId' });
  });
});
