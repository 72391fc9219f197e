import { alignDown, lastClosedOpenTime, systemClock, TransientError, type Job } from '@tickfleet/core';
import { startMockVenue, type MockVenue } from '@tickfleet/mock-venue';
import { createRedisConnection, type RedisClient } from '@tickfleet/queues';
import { Pipeline, SqliteSink } from '@tickfleet/sinks';
import { openStore, type StateStore } from '@tickfleet/store';
import { createLogger, createRegistry } from '@tickfleet/telemetry';
import { startRedis, tempDir, type TempDir, type TestRedis } from '@tickfleet/testkit';
import { createVenueAdapter, isCandleSource, type CandleSource, type VenueAdapter } from '@tickfleet/venues';
import { ActiveSets } from '../src/active-set.js';
import { UnitExecutor } from '../src/unit-executor.js';
import { WorkerMetrics } from '../src/worker-metrics.js';

const MINUTE = 60_000;
const logger = createLogger({ role: 'test', level: 'silent' });

let redis: TestRedis;
let connection: RedisClient;
let dir: TempDir;
let store: StateStore;
let sink: SqliteSink;
let pipeline: Pipeline;
let mock: MockVenue;
let executor: UnitExecutor;

beforeAll(async () => {
  redis = await startRedis();
  connection = createRedisConnection(redis.url);
  dir = tempDir('live-cursor-');
  store = await openStore(dir.sqliteUrl('state.db'));
  sink = new SqliteSink(dir.file('data.db'));
  pipeline = new Pipeline({ sink, logger });
  mock = await startMockVenue({ scenario: { venues: { binance: { limit: { enabled: false } } } } });
  executor = new UnitExecutor({
    store,
    pipeline,
    clock: systemClock,
    metrics: new WorkerMetrics(createRegistry('test', { defaultMetrics: false })),
    activeSets: new ActiveSets(connection, redis.namespace(), () => performance.now()),
  });
});
afterAll(async () => {
  await pipeline?.close();
  await sink?.close();
  await store?.close();
  await mock?.stop();
  connection?.disconnect();
  await redis?.stop();
  dir?.remove();
});

/** A live `1m` job 2,500 candles behind: its unit fetches three klines pages (1,000, 1,000, 500). */
async function jobBehind(symbol: string): Promise<{ job: Job; lastOpen: number }> {
  // The unit collects up to the last candle closed 2 s (the close delay) ago; start a minute clear of that edge.
  const lastOpen = lastClosedOpenTime(Date.now() - 2000 - MINUTE, '1m');
  const job = await store.jobs.upsert({ venue: 'binance', type: 'ohlcv', symbol, timeframe: '1m', since: alignDown(lastOpen - 2499 * MINUTE, '1m') });
  return { job, lastOpen };
}

function run(job: Job, adapter: VenueAdapter) {
  return executor.run({
    unit: { kind: 'incremental', venue: 'binance', jobId: job.id, dueAt: Date.now(), enqueuedAt: Date.now() },
    adapter,
    signal: new AbortController().signal,
    heartbeat: async () => undefined,
    logger,
  });
}

async function storedCandles(job: Job): Promise<number> {
  await pipeline.flush();
  return (await sink.reader!.countCandles({ venue: job.venue, symbol: job.symbol, timeframe: '1m' })).count;
}

/**
 * A live unit's last page: its records are durable when the executor returns, and its cursor comes
 * back to the runner, which stores it with the job's completion (one statement per unit); every
 * earlier page's cursor is stored during the run, as before.
 */
describe('live unit cursor', () => {
  it("stores every page but the last during the run and hands the last page's cursor to the completion", async () => {
    const { job } = await jobBehind('BTC/USDT');
    const requests0 = mock.stats().venues.binance.requests;
    const outcome = await run(job, createVenueAdapter('binance', { baseUrl: mock.baseUrl('binance') }));
    expect(mock.stats().venues.binance.requests - requests0).toBe(3);
    expect(outcome.records).toBeGreaterThanOrEqual(2500);
    expect(await storedCandles(job)).toBe(outcome.records);
    // The stored cursor is the second page's last candle; the unit's cursor is the third page's.
    const since = job.since!;
    expect((await store.jobs.get(job.id))!.cursor).toBe(since + 1999 * MINUTE);
    expect(outcome.cursor).toBe(since + (outcome.records - 1) * MINUTE);
    await store.jobs.complete(job.id, { nextRunAt: Date.now(), records: outcome.records, cursor: outcome.cursor! });
    expect((await store.jobs.get(job.id))!.cursor).toBe(outcome.cursor);
  });

  it('a run that fails after two durable pages keeps their cursor', async () => {
    const { job } = await jobBehind('ETH/USDT');
    const real = createVenueAdapter('binance', { baseUrl: mock.baseUrl('binance') });
    if (!isCandleSource(real)) throw new Error('the Binance adapter has no candle source');
    let pages = 0;
    // The venue starts answering 500 once the second page is handed over: the third request fails over HTTP.
    const failing = Object.assign(Object.create(real) as VenueAdapter, {
      async *fetchCandles(...args: Parameters<CandleSource['fetchCandles']>) {
        for await (const page of real.fetchCandles(...args)) {
          yield page;
          if (++pages === 2) mock.patchScenario({ venues: { binance: { errorRate: 1, errorStatuses: [500] } } });
        }
      },
    });
    try {
      await expect(run(job, failing)).rejects.toBeInstanceOf(TransientError);
    } finally {
      mock.patchScenario({ venues: { binance: { errorRate: 0 } } });
    }
    expect(pages).toBe(2);
    expect(await storedCandles(job)).toBe(2000);
    expect((await store.jobs.get(job.id))!.cursor).toBe(job.since! + 1999 * MINUTE);
  });
});
