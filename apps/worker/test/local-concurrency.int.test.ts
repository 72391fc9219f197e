import { chunkRange, jobId } from '@tickfleet/core';
import { DEFAULT_SEED, expectedCandles, startMockVenue, type MockVenue } from '@tickfleet/mock-venue';
import { createRedisConnection, VenueQueues, type QueuedUnit, type RedisClient } from '@tickfleet/queues';
import { Pipeline, SqliteSink } from '@tickfleet/sinks';
import { openStore, type StateStore } from '@tickfleet/store';
import { createLogger, createRegistry } from '@tickfleet/telemetry';
import { startRedis, tempDir, waitFor, type TempDir, type TestRedis } from '@tickfleet/testkit';
import { FleetWorker } from '../src/fleet-worker.js';

const SERIES = { venue: 'binance', symbol: 'BTC/USDT', timeframe: '1m' as const };
const JOB = jobId({ ...SERIES, type: 'ohlcv' });
const MIN = 60_000;
/** Emulated request latency: units overlap, so every worker holds units while others start. */
const LATENCY_MS = 100;

/** Calls of one Redis command so far (INFO commandstats). */
async function calls(redis: RedisClient, command: string): Promise<number> {
  const m = new RegExp(`^cmdstat_${command}:calls=(\\d+)`, 'm').exec(await redis.info('commandstats'));
  return Number(m?.[1] ?? 0);
}

/**
 * Each worker's BullMQ local concurrency is its share of the venue's cap over the venue's live
 * workers (`ceil(cap / live)`), counted from the heartbeat at every connector refresh: the
 * workers together hold the whole cap, and no worker has free slots while the queue's global
 * concurrency is full (with the whole cap each, BullMQ woke an idle worker for every unit another
 * one started, to find the queue full).
 */
describe('worker local concurrency: a share of the venue cap per live worker', () => {
  let redis: TestRedis;
  let dir: TempDir;
  let mock: MockVenue;
  let store: StateStore;
  let sink: SqliteSink;
  let pipeline: Pipeline;
  let connection: RedisClient;
  let queues: VenueQueues;
  const prefix = `t${process.pid}lc`;
  const workers: FleetWorker[] = [];
  const logger = createLogger({ role: 'worker', level: 'warn' });

  /** A worker in this process; connector refreshes only when the test calls them. */
  async function startWorker(name: string): Promise<FleetWorker> {
    const w = new FleetWorker({
      redisUrl: redis.url,
      store,
      pipeline,
      logger,
      registry: createRegistry('worker'),
      prefix,
      workerId: name,
      connectorPollMs: 3_600_000,
    });
    workers.push(w);
    await w.start();
    return w;
  }
  /** A worker's share of binance's cap, as its /healthz reports it. */
  const share = (w: FleetWorker): number | undefined => w.venueShares().find((v) => v.venue === 'binance')?.localConcurrency;
  const setCap = (maxInflight: number) =>
    store.connectors.upsert({ venue: 'binance', baseUrl: mock.baseUrl('binance'), rateLimit: { limit: 1_000_000, periodMs: 60_000 }, maxInflight });

  beforeAll(async () => {
    redis = await startRedis();
    dir = tempDir('local-concurrency-');
    mock = await startMockVenue({ scenario: { venues: { binance: { latencyMs: LATENCY_MS, limit: { enabled: false } } } } });
    store = await openStore(dir.sqliteUrl('state.db'));
    sink = new SqliteSink(dir.file('data.db'));
    pipeline = new Pipeline({ sink });
    connection = createRedisConnection(redis.url, { blocking: false });
    queues = new VenueQueues(connection, { prefix });
    await setCap(4);
    await store.jobs.upsert({ ...SERIES, type: 'ohlcv', enabled: false });
  }, 60_000);

  afterAll(async () => {
    for (const w of workers) await w.stop(5_000);
    await queues?.close();
    connection?.disconnect();
    await pipeline?.close();
    await sink?.close();
    await store?.close();
    await mock?.stop();
    await redis?.stop();
    dir?.remove();
  });

  it('follows the live workers: the whole cap alone, ceil(cap / live) with others, all of it again when they leave', async () => {
    const a = await startWorker('worker-a');
    expect(share(a)).toBe(4);
    const b = await startWorker('worker-b');
    // B counted A and itself at its first refresh; A sees B at its next one.
    expect(share(b)).toBe(2);
    expect(share(a)).toBe(4);
    await a.refreshConnectors();
    expect(share(a)).toBe(2);

    // A cap that does not divide: the shares round up, so together they still reach it.
    await setCap(5);
    await a.refreshConnectors();
    await b.refreshConnectors();
    expect([share(a), share(b)]).toEqual([3, 3]);
    await setCap(4);
    await a.refreshConnectors();
    await b.refreshConnectors();
    expect([share(a), share(b)]).toEqual([2, 2]);
  }, 60_000);

  it('two workers at their shares run a backfill exactly, no worker woken to find the queue full', async () => {
    const [a, b] = workers;
    expect([share(a!), share(b!)]).toEqual([2, 2]);
    // 40 five-candle chunks: each unit one request of LATENCY_MS, four at a time over two workers.
    const toMs = Math.floor(Date.now() / MIN) * MIN - 60 * MIN;
    const fromMs = toMs - 200 * MIN;
    const chunks = chunkRange(fromMs, toMs, '1m', 5);
    expect(chunks).toHaveLength(40);
    await store.backfills.create({ id: 'bf-shares', jobId: JOB, fromMs, toMs, chunks });
    const units: QueuedUnit[] = chunks.map((c, chunkIndex) => ({
      kind: 'backfill',
      venue: 'binance',
      jobId: JOB,
      backfillId: 'bf-shares',
      fromMs: c.fromMs,
      toMs: c.toMs,
      chunkIndex,
      priority: 0,
      enqueuedAt: Date.now(),
    }));
    const bzpopmin0 = await calls(connection, 'bzpopmin');
    const served0 = mock.stats().venues.binance!.requests;
    await queues.enqueue(units);
    await waitFor(async () => (await store.backfills.get('bf-shares'))?.status === 'done', 'backfill done', { timeoutMs: 60_000 });
    const bzpopmin = (await calls(connection, 'bzpopmin')) - bzpopmin0;

    // Ground truth: one request per chunk, every candle stored once.
    expect(mock.stats().venues.binance!.requests - served0).toBe(chunks.length);
    await pipeline.flush();
    const stored: number[] = [];
    for await (const c of sink.reader!.streamCandles({ ...SERIES, fromMs, toMs })) stored.push(c.openTime);
    expect(stored).toEqual(expectedCandles('binance', 'BTC/USDT', '1m', fromMs, toMs, DEFAULT_SEED).map((c) => c.openTime));
    // A worker waits on the queue's marker only with a free slot: at the start (both idle) and
    // when the queue runs dry; a finished unit's slot takes the next unit in the same call. With
    // the whole cap as each worker's local concurrency it was about one wake-up per unit started
    // (35 and 38 here).
    expect(bzpopmin).toBeLessThan(units.length / 4);
  }, 90_000);

  it('gives a worker the whole cap again once the other leaves cleanly', async () => {
    const [a, b] = workers;
    await b!.stop(5_000);
    workers.splice(1, 1);
    await a!.refreshConnectors();
    expect(share(a!)).toBe(4);
  }, 60_000);
});
