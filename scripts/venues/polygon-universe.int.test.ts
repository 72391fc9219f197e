import { jobId, sessionDayCursor, usEquitySession, type Clock } from '@tickfleet/core';
import { DEFAULT_SEED, expectedCandles, startMockVenue, type MockVenue } from '@tickfleet/mock-venue';
import { Scheduler } from '@tickfleet/scheduler';
import { openSink, Pipeline, type Sink } from '@tickfleet/sinks';
import { openStore, type StateStore } from '@tickfleet/store';
import { createLogger, createRegistry } from '@tickfleet/telemetry';
import { runCli, startRedis, tempDir, waitFor, type TempDir, type TestRedis } from '@tickfleet/testkit';
import { FleetWorker } from '@tickfleet/worker';

/** Wednesday 2024-01-24 12:00Z: Tuesday's day bar is a full day old (final for Polygon), Wednesday's is not. */
const PIN = Date.UTC(2024, 0, 24, 12);
const SINCE = Date.UTC(2024, 0, 19);
const DAYS = ['2024-01-19', '2024-01-22', '2024-01-23'].map((d) => usEquitySession(d)!);
/** The universe `polygon/mix`, given unsorted: slices are taken in sorted order, 3 members each. */
const MEMBERS = ['MSFT', 'AAPL', 'NVDA', 'AMZN', 'GOOG', 'META', 'TSLA'];
const JOB = jobId({ venue: 'polygon', type: 'ohlcv', symbol: '@mix', timeframe: '1d' });
/** Polygon has no GOOG bar for Monday the 22nd (a hole of the venue): the gap ledger finds it on GOOG's series. */
const HOLE = { symbol: 'GOOG', fromMs: DAYS[1]!.dayStartMs, toMs: DAYS[1]!.dayStartMs + 1 };
const GOOG = jobId({ venue: 'polygon', type: 'ohlcv', symbol: 'GOOG', timeframe: '1d' });

/**
 * A Polygon day-bar job over a universe end to end (real Scheduler and FleetWorker in process,
 * redis-server, SQLite store and sink, the emulation over HTTP, a clock running in real time from a
 * pinned instant): each day is collected in slices of 3 members (one request per member), the job's
 * cursor passes a day only once every member's bar of it is stored, every request is made once, and
 * the gap ledger scans each member's series (a venue hole of one member is recorded on that member,
 * and `backfill --gaps` of that series tries it); `jobs add` takes the universe for day bars only.
 */
describe('polygon: day bars over a universe, in slices', () => {
  let redis: TestRedis;
  let dir: TempDir;
  let mock: MockVenue;
  let store: StateStore;
  let sink: Sink;
  let pipeline: Pipeline;
  let worker: FleetWorker;
  let scheduler: Scheduler;
  const workerRegistry = createRegistry('worker', { defaultMetrics: false });

  beforeAll(async () => {
    // whole minutes away from the wall clock, so the emulation's, the budget's and Redis' windows agree
    const offsetMs = Math.round((PIN - Date.now()) / 60_000) * 60_000;
    const clock: Clock = { now: () => Date.now() + offsetMs, monotonic: () => performance.now() };
    redis = await startRedis();
    dir = tempDir('tickfleet-polygon-universe-');
    // a paid plan's limit (the free plan's 5 a minute would make the test wait minutes); cap 1, Polygon's default
    mock = await startMockVenue({
      clock,
      scenario: { venues: { polygon: { apiKeys: ['test-key'], limit: { requests: 100, windowMs: 60_000 }, holes: { ranges: [HOLE] } } } },
    });
    store = await openStore(`sqlite://${dir.file('state.db')}`, { clock });
    sink = await openSink(`sqlite://${dir.file('data.db')}`);
    const logger = createLogger({ role: 'polygon-universe', level: 'warn' });
    pipeline = new Pipeline({ sink, clock, logger });
    await store.connectors.upsert({ venue: 'polygon', baseUrl: mock.baseUrl('polygon'), rateLimit: { limit: 100, periodMs: 60_000 }, maxInflight: 1 });
    worker = new FleetWorker({
      redisUrl: redis.url,
      store,
      pipeline,
      logger,
      registry: workerRegistry,
      clock,
      connectorPollMs: 500,
      adapterOptions: { polygon: { apiKey: 'test-key' } },
    });
    scheduler = new Scheduler({ store, redisUrl: redis.url, clock, tickMs: 200, logger, registry: createRegistry('scheduler', { defaultMetrics: false }) });
    await worker.start();
    scheduler.start();
  }, 60_000);

  afterAll(async () => {
    await scheduler?.stop();
    await worker?.stop(5000);
    await pipeline?.close();
    await sink?.close();
    await store?.close();
    await mock?.stop();
    await redis?.stop();
    dir?.remove();
  });

  const stored = async (symbol: string): Promise<number[]> => {
    const times: number[] = [];
    for await (const c of sink.reader!.streamCandles({ venue: 'polygon', symbol, timeframe: '1d' })) times.push(c.openTime);
    return times;
  };

  it('collects each day in slices of 3 members, moves the cursor only past complete days, scans every member for gaps; backfill --gaps and jobs add take it', async () => {
    await store.universes.set('polygon', 'mix', MEMBERS);
    await store.jobs.upsert({ venue: 'polygon', type: 'ohlcv', symbol: '@mix', timeframe: '1d', since: SINCE });
    const holes = mock.scenario().venues!.polygon!.holes;
    const truth = (symbol: string, toMs: number): number[] =>
      expectedCandles('polygon', symbol, '1d', SINCE, toMs, DEFAULT_SEED, { nowMs: PIN, holes }).map((c) => c.openTime);
    const last = sessionDayCursor('1d', DAYS.at(-1)!);
    /** Every cursor the job was seen at, each checked against the sink when seen. */
    const seen = new Set<number>();
    await waitFor(
      async () => {
        const cursor = (await store.jobs.get(JOB))?.cursor ?? null;
        if (cursor !== null && !seen.has(cursor)) {
          seen.add(cursor);
          // the cursor is past a day only once every member's bar of it is stored
          for (const symbol of MEMBERS) expect((await stored(symbol)).filter((t) => t <= cursor)).toEqual(truth(symbol, cursor + 1));
        }
        return cursor === last;
      },
      'the universe job at its last final day',
      { timeoutMs: 120_000, intervalMs: 100 },
    );
    expect(await store.jobs.get(JOB)).toMatchObject({ cursor: last, memberCursor: null });
    for (const symbol of MEMBERS) expect(await stored(symbol)).toEqual(truth(symbol, last + 1));
    expect(truth('GOOG', last + 1)).toHaveLength(DAYS.length - 1);
    // each day in 3 units (AAPL AMZN GOOG, META MSFT NVDA, TSLA); one request per member and day, none twice
    const units = (await workerRegistry.getSingleMetric('tickfleet_units_total')!.get()).values;
    expect(units.filter((v) => v.labels.kind === 'session-day').map((v) => [v.labels.outcome, v.value])).toEqual([['ok', DAYS.length * 3]]);
    const stats = mock.stats().venues.polygon!;
    expect({ requests: stats.requests, ok: stats.responses2xx }).toEqual({ requests: MEMBERS.length * DAYS.length, ok: MEMBERS.length * DAYS.length });
    // the gap ledger holds each member's series: GOOG's Monday is a gap, no other member has one
    const gaps = await store.gaps.list({ open: true });
    expect(gaps.map((g) => ({ jobId: g.jobId, fromMs: g.fromMs, kind: g.kind, attempts: g.attempts }))).toEqual([
      { jobId: GOOG, fromMs: DAYS[1]!.dayStartMs, kind: 'missing', attempts: 0 },
    ]);

    // `backfill --gaps` takes the member's series (no job of its own: a disabled one is made for the
    // backfill units); the venue still has no bar there, so the fill attempt is counted on the gap.
    const env = { REDIS_URL: redis.url, POLYGON_API_KEY: 'test-key' };
    const bf = await runCli(['--store', `sqlite://${dir.file('state.db')}`, 'backfill', '--gaps', GOOG, '--json'], { env });
    expect(bf.stderr).toBe('');
    expect(JSON.parse(bf.stdout)).toMatchObject({ jobId: GOOG });
    await waitFor(async () => (await store.gaps.list({ jobId: GOOG }))[0]?.attempts === 1, 'the fill attempt recorded on the gap', { timeoutMs: 60_000 });
    expect((await store.gaps.list({ jobId: GOOG }))[0]).toMatchObject({ kind: 'missing', filledAt: null });
    expect(await store.jobs.get(GOOG)).toMatchObject({ enabled: false, cursor: null });
    expect(mock.stats().venues.polygon!.requests).toBe(MEMBERS.length * DAYS.length + 1);

    // `jobs add` takes a universe for Polygon day bars (the job as it is: adding it again keeps its progress), not for its other timeframes
    const cli = (...args: string[]) => runCli(['--store', `sqlite://${dir.file('state.db')}`, ...args], { env });
    const [again, hours] = await Promise.all([
      cli('jobs', 'add', 'polygon', 'ohlcv', '@mix', '--timeframe', '1d', '--json'),
      cli('jobs', 'add', 'polygon', 'ohlcv', '@mix', '--timeframe', '1h'),
    ]);
    expect(JSON.parse(again.stdout)).toMatchObject({ id: JOB, symbol: '@mix', cursor: last, memberCursor: null });
    expect(hours.stderr).toMatch(/invalid symbol: expected one symbol for ohlcv jobs .*by polygon ohlcv 1d jobs/);
  }, 180_000);
});
