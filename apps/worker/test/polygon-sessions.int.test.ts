import { calendarFor, chunkRange, jobId } from '@tickfleet/core';
import { DEFAULT_SEED, expectedCandles, startMockVenue, type MockVenue } from '@tickfleet/mock-venue';
import { createRedisConnection, VenueQueues, type QueuedUnit } from '@tickfleet/queues';
import { expectedCandleCount, findGaps, GapLedger, Pipeline, SqliteSink } from '@tickfleet/sinks';
import { openStore, type StateStore } from '@tickfleet/store';
import { createLogger, createRegistry } from '@tickfleet/telemetry';
import { ManualClock, startRedis, tempDir, waitFor, type TempDir, type TestRedis } from '@tickfleet/testkit';
import { FleetWorker } from '../src/fleet-worker.js';

const JOB = jobId({ venue: 'polygon', symbol: 'AAPL', timeframe: '1d', type: 'ohlcv' });
const SERIES = { venue: 'polygon', symbol: 'AAPL', timeframe: '1d' as const };
const JAN = Date.UTC(2024, 0, 1);
const FEB = Date.UTC(2024, 1, 1);

/**
 * Polygon day bars end to end, in one process on a manual clock shared by the emulation and the
 * worker: a backfill of January 2024 (weekends, New Year's Day and Martin Luther King Jr. Day)
 * stores exactly the calendar's sessions on the New York grid, the gap ledger finds no gap and the
 * count agrees; the bar of a session still trading is served by the emulation but not stored,
 * and is stored once its after-hours trading is over.
 */
describe('polygon sessions: backfill, gap ledger and end-of-day gating', () => {
  let redis: TestRedis;
  let dir: TempDir;
  let mv: MockVenue;
  let store: StateStore;
  let sink: SqliteSink;
  let pipeline: Pipeline;
  let worker: FleetWorker;
  let queues: VenueQueues;
  let connection: ReturnType<typeof createRedisConnection>;
  const prefix = `t${process.pid}`;
  // Thursday 2024-02-01 13:00 New York: the session is trading, its day bar is served but partial.
  const clock = new ManualClock(Date.UTC(2024, 1, 1, 18));

  beforeAll(async () => {
    redis = await startRedis();
    dir = tempDir('polygon-sessions-');
    mv = await startMockVenue({ clock, scenario: { venues: { polygon: { apiKeys: ['test-key'] } } } });
    store = await openStore(dir.sqliteUrl('state.db'));
    await store.connectors.upsert({ venue: 'polygon', baseUrl: mv.baseUrl('polygon'), rateLimit: { limit: 1000, periodMs: 60_000 } });
    await store.jobs.upsert({ venue: 'polygon', type: 'ohlcv', symbol: 'AAPL', timeframe: '1d', enabled: false });
    sink = new SqliteSink(dir.file('data.db'));
    pipeline = new Pipeline({ sink });
    const logger = createLogger({ role: 'worker', level: 'warn' });
    worker = new FleetWorker({
      redisUrl: redis.url,
      store,
      pipeline,
      logger,
      registry: createRegistry('worker'),
      prefix,
      clock,
      adapterOptions: { polygon: { apiKey: 'test-key' } },
    });
    await worker.start();
    connection = createRedisConnection(redis.url, { blocking: false });
    queues = new VenueQueues(connection, { prefix });
  }, 60_000);

  afterAll(async () => {
    await queues?.close();
    connection?.disconnect();
    await worker?.stop(5_000);
    await pipeline?.close();
    await sink?.close();
    await store?.close();
    await mv?.stop();
    await redis?.stop();
    dir?.remove();
  });

  /** Records a backfill of [fromMs, toMs) as the CLI does (page-sized chunks on the UTC grid) and waits for it. */
  async function backfill(id: string, fromMs: number, toMs: number): Promise<void> {
    const chunks = chunkRange(fromMs, toMs, '1d', 10); // small pages: the month spans several units
    await store.backfills.create({ id, jobId: JOB, fromMs, toMs, chunks });
    const units: QueuedUnit[] = chunks.map((c, chunkIndex) => ({
      kind: 'backfill',
      venue: 'polygon',
      jobId: JOB,
      backfillId: id,
      fromMs: c.fromMs,
      toMs: c.toMs,
      chunkIndex,
      priority: 0,
      enqueuedAt: clock.now(),
    }));
    await queues.enqueue(units);
    await waitFor(async () => (await store.backfills.get(id))?.status === 'done', `backfill ${id} done`, { timeoutMs: 60_000 });
  }

  const stored = async (): Promise<number[]> => {
    const out: number[] = [];
    for await (const c of sink.reader.streamCandles(SERIES)) out.push(c.openTime);
    return out;
  };

  it('stores exactly the sessions of a month with a holiday and weekends; no gaps; the count agrees', async () => {
    const sessions = calendarFor('polygon').expectedOpenTimes('1d', JAN, FEB);
    expect(sessions).toHaveLength(21); // 23 weekdays minus New Year's Day and Martin Luther King Jr. Day
    expect(new Date(sessions[0]!).toISOString()).toBe('2024-01-02T05:00:00.000Z');

    // The range runs to now: it holds today's session, which the emulation serves while it trades.
    const servedToday = expectedCandles('polygon', 'AAPL', '1d', JAN, clock.now(), DEFAULT_SEED, { nowMs: clock.now() });
    expect(servedToday).toHaveLength(21); // the final ones only: today's bar is still partial
    await backfill('bf-jan', JAN, clock.now());
    expect(await stored()).toEqual(sessions);
    const candles = [];
    for await (const c of sink.reader.streamCandles(SERIES)) candles.push({ open: c.open, high: c.high, low: c.low, close: c.close, volume: c.volume });
    expect(candles).toEqual(servedToday.map((c) => ({ open: c.open, high: c.high, low: c.low, close: c.close, volume: c.volume })));

    // The gap ledger (run after each backfill unit, and on demand) records nothing: weekends and holidays are not gaps.
    expect(await store.gaps.list({ jobId: JOB })).toEqual([]);
    expect((await new GapLedger(store, sink.reader).scan(JOB)).open).toEqual([]);
    expect(await findGaps(sink.reader, { ...SERIES, fromMs: JAN, toMs: FEB })).toEqual([]);
    // What `data count` reports: stored count equals the calendar's expected count, no missing candles.
    expect((await sink.reader.countCandles({ ...SERIES, fromMs: JAN, toMs: FEB })).count).toBe(expectedCandleCount('polygon', '1d', JAN, FEB));
  }, 120_000);

  it("stores today's day bar only once its session, after-hours included, is over", async () => {
    const today = Date.UTC(2024, 1, 1, 5);
    const requestsBefore = mv.stats().venues.polygon!.requests;
    // 19:59 New York: regular trading closed at 16:00, after-hours still adds volume.
    clock.set(Date.UTC(2024, 1, 2, 0, 59));
    await backfill('bf-late', FEB, clock.now());
    expect(mv.stats().venues.polygon!.requests).toBeGreaterThan(requestsBefore);
    // what the venue answered meanwhile: today's bar, still moving
    const served = (await (await fetch(`${mv.baseUrl('polygon')}/v2/aggs/ticker/AAPL/range/1/day/2024-02-01/2024-02-01?apiKey=test-key`)).json()) as {
      results: Array<{ t: number }>;
    };
    expect(served.results.map((b) => b.t)).toEqual([today]);
    expect((await stored()).includes(today)).toBe(false);

    clock.set(Date.UTC(2024, 1, 2, 1)); // 20:00 New York: the session is over
    await backfill('bf-final', FEB, clock.now());
    const all = await stored();
    expect(all.at(-1)).toBe(today);
    expect(all).toEqual(calendarFor('polygon').expectedOpenTimes('1d', JAN, clock.now()));
    const [final] = expectedCandles('polygon', 'AAPL', '1d', today, today + 1, DEFAULT_SEED, { nowMs: clock.now() });
    const [row] = await (async () => {
      const out = [];
      for await (const c of sink.reader.streamCandles({ ...SERIES, fromMs: today })) out.push(c);
      return out;
    })();
    expect({ open: row!.open, close: row!.close, volume: row!.volume }).toEqual({ open: final!.open, close: final!.close, volume: final!.volume });
    expect(await findGaps(sink.reader, SERIES)).toEqual([]);
  }, 120_000);
});
