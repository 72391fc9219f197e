import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { systemClock } from '@tickfleet/core';
import { createRedisConnection, type RedisClient } from '@tickfleet/queues';
import { Pipeline, SqliteSink } from '@tickfleet/sinks';
import { openStore, type StateStore } from '@tickfleet/store';
import { createLogger, createRegistry } from '@tickfleet/telemetry';
import { startRedis, tempDir, type TempDir, type TestRedis } from '@tickfleet/testkit';
import { BinanceAdapter } from '@tickfleet/venues';
import { ActiveSets } from '../src/active-set.js';
import { UnitExecutor } from '../src/unit-executor.js';
import { WorkerMetrics } from '../src/worker-metrics.js';

const logger = createLogger({ role: 'test', level: 'silent' });
const T = 1_712_000_000_000;

/** `GET /api/v3/historicalTrades` rows (the documented shape) for `ids`. */
function rows(ids: number[]): string {
  return JSON.stringify(
    ids.map((id) => ({ id, price: '4.00000100', qty: '12.00000000', quoteQty: '48.000012', time: T + id, isBuyerMaker: id % 2 === 0, isBestMatch: true })),
  );
}

/**
 * A trades job over a venue whose trade ids are contiguous (Binance): ids an answer skips go on the
 * gap ledger as `trade-ids` (the unit streams report unhealed trades in) before the cursor passes
 * them; the trades that came are stored once, even when a page is fetched again.
 */
describe('trades job: holes in contiguous ids', () => {
  let redis: TestRedis;
  let connection: RedisClient;
  let dir: TempDir;
  let store: StateStore;
  let sink: SqliteSink;
  let pipeline: Pipeline;
  let server: Server;
  let executor: UnitExecutor;
  const served: string[] = [];

  beforeAll(async () => {
    redis = await startRedis();
    connection = createRedisConnection(redis.url);
    dir = tempDir('trade-holes-');
    store = await openStore(dir.sqliteUrl('state.db'));
    sink = new SqliteSink(dir.file('data.db'));
    pipeline = new Pipeline({ sink, logger });
    // ids 101, 102, then 105, 106: 103..104 never come
    server = createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://127.0.0.1');
      served.push(url.search);
      const from = Number(url.searchParams.get('fromId'));
      const body = url.pathname === '/api/v3/historicalTrades' ? rows([101, 102, 105, 106].filter((id) => id >= from)) : '[]';
      res.writeHead(200, { 'content-type': 'application/json' }).end(body);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
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
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve));
    connection?.disconnect();
    await redis?.stop();
    dir?.remove();
  });

  it('records the skipped ids as a trade-ids gap and hands the last id to the completion as the cursor', async () => {
    const job = await store.jobs.upsert({ venue: 'binance', type: 'trades', symbol: 'BTC/USDT' });
    await store.jobs.advanceCursor(job.id, 100);
    const adapter = new BinanceAdapter({ baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
    const run = () =>
      executor.run({
        unit: { kind: 'incremental', venue: 'binance', jobId: job.id, dueAt: Date.now(), enqueuedAt: Date.now() },
        adapter,
        signal: new AbortController().signal,
        heartbeat: async () => undefined,
        logger,
      });
    const first = await run();
    expect(first).toMatchObject({ outcome: 'ok', records: 4, cursor: 106, detail: 'trades missing in 1 range: on the gap ledger' });
    expect(served[0]).toBe('?symbol=BTCUSDT&fromId=101&limit=1000');
    const gaps = await store.gaps.list({ jobId: job.id, open: true });
    expect(gaps.map((g) => [g.kind, g.fromMs, g.toMs])).toEqual([['trade-ids', 103, 105]]);
    // The same page once more (a unit whose completion was lost): nothing stored twice, the gap kept once.
    await run();
    await pipeline.flush();
    const ids: string[] = [];
    for await (const { envelope } of sink.reader!.streamEnvelopes({ venue: 'binance', channel: 'trades', symbol: 'BTC/USDT' }))
      ids.push(String(envelope.messageId));
    expect(ids.sort()).toEqual([101, 102, 105, 106].map((id) => `binance:BTCUSDT:trade:${id}`));
    expect(await store.gaps.list({ jobId: job.id })).toHaveLength(1);
  }, 60_000);
});
