import { jobId, type PollStatsRecord } from '@tickfleet/core';
import { startMockVenue, type MockVenue } from '@tickfleet/mock-venue';
import { createRedisConnection, type RedisClient } from '@tickfleet/queues';
import { Pipeline, SqliteSink } from '@tickfleet/sinks';
import { openStore, type StateStore } from '@tickfleet/store';
import { createLogger, createRegistry } from '@tickfleet/telemetry';
import { startRedis, tempDir, waitFor, type TempDir, type TestRedis } from '@tickfleet/testkit';
import { createVenueAdapter } from '@tickfleet/venues';
import { ActiveSets } from '../src/active-set.js';
import { FleetWorker } from '../src/fleet-worker.js';
import { UnitExecutor } from '../src/unit-executor.js';
import { WorkerMetrics } from '../src/worker-metrics.js';

const STATE_WAIT = { timeoutMs: 90_000, intervalMs: 100 };
const logger = createLogger({ role: 'test', level: 'silent' });
/** 150 pairs: more than one bookTicker request (100 symbols at most) per cycle. */
const PAIRS = Array.from({ length: 150 }, (_, i) => `C${String(i).padStart(3, '0')}/USDT`);

let redis: TestRedis;
let dir: TempDir;
let store: StateStore;
let sink: SqliteSink;
let pipeline: Pipeline;
let mock: MockVenue;
let connection: RedisClient;
let worker: FleetWorker | undefined;

beforeAll(async () => {
  redis = await startRedis();
  dir = tempDir('book-loop-binance-');
  store = await openStore(dir.sqliteUrl('state.db'));
  sink = new SqliteSink(dir.file('data.db'));
  pipeline = new Pipeline({ sink, logger });
  mock = await startMockVenue({ scenario: { venues: { binance: { symbols: PAIRS } } } });
  connection = createRedisConnection(redis.url);
}, 60_000);

afterAll(async () => {
  await worker?.stop(2000).catch(() => undefined);
  connection?.disconnect();
  await pipeline?.close();
  await sink?.close();
  await store?.close();
  await mock?.stop();
  await redis?.stop();
  dir?.remove();
});

describe('book poll loop at depth 1 on Binance (ticker/bookTicker batches, the emulation over HTTP)', () => {
  it('polls the top of book of every active symbol in bookTicker requests of at most 100 symbols, weight 4 each', async () => {
    const prefix = redis.namespace();
    await store.connectors.upsert({
      venue: 'binance',
      baseUrl: mock.baseUrl('binance'),
      rateLimit: { limit: 6000, periodMs: 60_000 },
      bookLoop: { cadenceMs: 1000, shares: 2, depth: 1 },
    });
    await store.jobs.upsert({ venue: 'binance', type: 'discovery', symbol: 'markets' });
    await new UnitExecutor({
      store,
      pipeline,
      clock: { now: () => Date.now(), monotonic: () => performance.now() },
      metrics: new WorkerMetrics(createRegistry('worker')),
      activeSets: new ActiveSets(connection, prefix),
    }).run({
      unit: { kind: 'discovery', venue: 'binance', jobId: jobId({ venue: 'binance', type: 'discovery', symbol: 'markets' }), enqueuedAt: Date.now() },
      adapter: createVenueAdapter('binance', { baseUrl: mock.baseUrl('binance') }),
      signal: new AbortController().signal,
      heartbeat: async () => undefined,
      logger,
    });
    const stats0 = mock.stats().venues.binance;
    worker = new FleetWorker({
      redisUrl: redis.url,
      store,
      pipeline,
      logger,
      registry: createRegistry('worker'),
      prefix,
      workerId: 'loop-binance',
      venues: ['binance'],
      pollStatsMs: 3_600_000,
      bookLoopLeaseTtlMs: 1500,
    });
    await worker.start();
    const books = async () => {
      await pipeline.flush();
      const out: Array<{ symbol: string; bids: unknown[]; asks: unknown[]; messageId?: string }> = [];
      for await (const { envelope } of sink.reader!.streamEnvelopes({ venue: 'binance', channel: 'book' })) {
        out.push({ ...(envelope.payload as { symbol: string; bids: unknown[]; asks: unknown[] }), messageId: envelope.messageId });
      }
      return out;
    };
    // every pair's top of book stored 3 times (the emulation's books change every second)
    await waitFor(
      async () => {
        const got = await books();
        return PAIRS.every((p) => got.filter((b) => b.symbol === p).length >= 3);
      },
      'every pair stored 3 times',
      STATE_WAIT,
    );
    await worker.flushPollStats();
    const stats = mock.stats().venues.binance;
    const requests = stats.requests - stats0.requests;
    // every request the loop sent was a bookTicker batch: weight 4 each (a depth request weighs 5, a single bookTicker 2)
    expect(stats.weightUsed - stats0.weightUsed).toBe(4 * requests);
    const loop = (
      await (async () => {
        await pipeline.flush();
        const out: PollStatsRecord[] = [];
        for await (const { envelope } of sink.reader!.streamEnvelopes({ venue: 'binance', channel: 'poll_stats' }))
          out.push(envelope.payload as PollStatsRecord);
        return out;
      })()
    ).filter((s) => s.loop !== undefined);
    const cycles = loop.reduce((n, s) => n + s.loop!.cycles, 0);
    // two requests a cycle for 150 symbols (100 + 50), none per symbol
    expect(requests).toBeLessThanOrEqual(2 * cycles);
    expect(requests).toBeGreaterThanOrEqual(2 * 3);
    const stored = await books();
    expect(stored.every((b) => b.bids.length <= 1 && b.asks.length <= 1 && /:bookTicker:/.test(b.messageId ?? ''))).toBe(true);
    expect(stats.overLimitRequests - stats0.overLimitRequests).toBe(0);
  }, 180_000);
});
