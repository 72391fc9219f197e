import type { RedisClient } from './redis-connection.js';
import { UnrecoverableError, Worker, type Job } from 'bullmq';
import type { Cluster } from 'ioredis';
import { startRedis, startRedisCluster, waitFor, type TestRedis, type TestRedisCluster } from '@tickfleet/testkit';
import { createRedisConnection } from './redis-connection.js';
import type { QueuedUnit } from './queued-unit.js';
import { VenueQueues } from './venue-queues.js';

let redis: TestRedis;
let conn: RedisClient;
const closers: Array<() => Promise<unknown>> = [];

beforeAll(async () => {
  redis = await startRedis();
  conn = createRedisConnection(redis.url);
});
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});
afterAll(async () => {
  await conn.quit();
  await redis.stop();
});

function fresh(): VenueQueues {
  const q = new VenueQueues(conn, { prefix: redis.namespace() });
  closers.push(() => q.close());
  return q;
}

function worker(queues: VenueQueues, venue: string, fn: (job: Job<QueuedUnit>) => Promise<unknown>, concurrency = 1): Worker<QueuedUnit> {
  const connection = createRedisConnection(redis.url);
  const w = new Worker<QueuedUnit>(queues.queue(venue).name, fn, {
    connection,
    prefix: queues.prefix,
    concurrency,
  });
  closers.push(async () => {
    await w.close();
    await connection.quit().catch(() => undefined);
  });
  return w;
}

const unit = (dueAt: number, venue = 'binance', symbol = 'BTC/USDT'): QueuedUnit => ({
  kind: 'incremental',
  venue,
  jobId: `${venue}:${symbol}:1m:ohlcv`,
  dueAt,
  nextRunAt: dueAt + 60_000,
  enqueuedAt: dueAt,
});

describe('VenueQueues', () => {
  it('adds a unit once however often it is enqueued', async () => {
    const queues = fresh();
    const first = await queues.enqueue([unit(1000), unit(1000, 'kraken')]);
    expect(first.map((r) => r.outcome)).toEqual(['added', 'added']);
    const again = await queues.enqueue([unit(1000), unit(1000), unit(2000)]);
    expect(again.map((r) => r.outcome)).toEqual(['duplicate', 'duplicate', 'added']);
    expect(again[0]?.existing).toBe('queued');
    const counts = await queues.counts('binance');
    expect(counts.prioritized + counts.waiting).toBe(2);
    expect((await queues.counts('kraken')).prioritized).toBe(1);
  });

  it('adds units with trimming options, priority and the deterministic id', async () => {
    const queues = fresh();
    const [r] = await queues.enqueue([unit(5000)]);
    const job = await queues.queue('binance').getJob(r!.id);
    expect(job?.id).toBe('live|binance|BTC/USDT|1m|ohlcv|5000');
    expect(job?.opts.removeOnComplete).toEqual({ age: 3600, count: 1000 });
    expect(job?.opts.removeOnFail).toEqual({ age: 86_400, count: 5000 });
    expect(job?.opts.priority).toBeGreaterThanOrEqual(1);
    expect(job?.data).toMatchObject({ jobId: 'binance:BTC/USDT:1m:ohlcv', dueAt: 5000, nextRunAt: 65_000 });
  });

  it('keeps every key of a venue under its hash tag (one Redis Cluster slot)', async () => {
    const queues = fresh();
    await queues.enqueue([unit(1), unit(2, 'kraken')]);
    await queues.setGlobalConcurrency('binance', 3);
    const keys = await conn.keys(`${queues.prefix}:*`);
    expect(keys.length).toBeGreaterThan(4);
    for (const key of keys) expect(key).toMatch(/^[^{]*\{(binance|kraken)\}/);
    expect(keys.filter((k) => k.includes('{kraken}')).length).toBeGreaterThan(1);
  });

  it('caps in-flight units of a venue across workers with the global concurrency', async () => {
    const queues = fresh();
    await queues.setGlobalConcurrency('binance', 2);
    expect(await queues.globalConcurrency('binance')).toBe(2);
    let inflight = 0;
    let peak = 0;
    let done = 0;
    const run = async (): Promise<void> => {
      inflight += 1;
      peak = Math.max(peak, inflight);
      await new Promise((r) => setTimeout(r, 40));
      // Until two units have overlapped, a unit stays in flight until a second one starts: on a
      // loaded machine the next fetch can take longer than 40 ms, and a cap of 2 must still be
      // seen reached. (With a cap of 1 this ends after 10 s and the peak stays 1.)
      if (peak < 2) await waitFor(() => peak >= 2, 'a second unit in flight', { timeoutMs: 10_000 }).catch(() => undefined);
      inflight -= 1;
      done += 1;
    };
    worker(queues, 'binance', run, 5);
    worker(queues, 'binance', run, 5);
    await queues.enqueue(Array.from({ length: 12 }, (_, i) => unit(i + 1)));
    await waitFor(() => done === 12, '12 units done', { timeoutMs: 60_000 });
    expect(peak).toBe(2);
  });

  it('serves live units before backfill chunks, then by job priority', async () => {
    const queues = fresh();
    const backfill = (i: number): QueuedUnit => ({
      kind: 'backfill',
      venue: 'binance',
      jobId: 'binance:BTC/USDT:1m:ohlcv',
      backfillId: 'bf1',
      fromMs: i * 60_000,
      toMs: (i + 1) * 60_000,
      chunkIndex: i,
      priority: 1000,
      enqueuedAt: 0,
    });
    await queues.enqueue([backfill(0), backfill(1), { ...unit(1), priority: -5 }, { ...unit(1, 'binance', 'ETH/USDT'), priority: 7 }]);
    const order: string[] = [];
    worker(queues, 'binance', async (job) => void order.push(job.id!));
    await waitFor(() => order.length === 4, 'all four units');
    expect(order).toEqual(['live|binance|ETH/USDT|1m|ohlcv|1', 'live|binance|BTC/USDT|1m|ohlcv|1', 'bf|bf1|0-60000', 'bf|bf1|60000-120000']);
  });

  it('requeues a finished unit with the same id only when asked', async () => {
    const queues = fresh();
    const failed: string[] = [];
    const w = worker(queues, 'binance', async () => {
      throw new UnrecoverableError('boom');
    });
    w.on('failed', (job) => job && failed.push(job.id ?? ''));
    const [r] = await queues.enqueue([unit(7)]);
    await waitFor(() => failed.length === 1, 'the unit to fail');
    await w.pause();
    expect((await queues.enqueue([unit(7)]))[0]).toMatchObject({ outcome: 'duplicate', existing: 'failed' });
    expect((await queues.enqueue([unit(7)], { replaceFinished: true }))[0]).toMatchObject({ outcome: 'requeued', id: r!.id });
    expect(await queues.queue('binance').getJobState(r!.id)).toBe('prioritized');
  });

  it('checks a whole batch in one script: adds absent units, reports queued and finished ones, adds an id given twice once', async () => {
    const queues = fresh();
    const finished: string[] = [];
    const w = worker(queues, 'binance', async (job) => {
      if (job.data.dueAt === 3) throw new UnrecoverableError('boom');
    });
    w.on('completed', (job) => finished.push(job.id ?? ''));
    w.on('failed', (job) => job && finished.push(job.id ?? ''));
    await queues.enqueue([unit(2), unit(3)]);
    await waitFor(() => finished.length === 2, 'one unit completed and one failed');
    await w.pause();
    await queues.enqueue([unit(1)]);
    const results = await queues.enqueue([unit(1), unit(2), unit(3), unit(4), unit(4)]);
    expect(results.map((r) => [r.id.split('|').pop(), r.outcome, r.existing])).toEqual([
      ['1', 'duplicate', 'queued'],
      ['2', 'duplicate', 'completed'],
      ['3', 'duplicate', 'failed'],
      ['4', 'added', undefined],
      ['4', 'duplicate', 'queued'],
    ]);
    expect(await queues.counts('binance')).toMatchObject({ prioritized: 2, completed: 1, failed: 1 });
    const replaced = await queues.enqueue([unit(2), unit(3), unit(4)], { replaceFinished: true });
    expect(replaced.map((r) => r.outcome)).toEqual(['requeued', 'requeued', 'duplicate']);
    expect(await queues.counts('binance')).toMatchObject({ prioritized: 4, completed: 0, failed: 0 });
  });

  it('adds a batch of thousands of units over several venues once, and finds them all on the next call', async () => {
    const queues = fresh();
    const units = Array.from({ length: 3000 }, (_, i) => unit(1000 + i, i % 3 === 0 ? 'kraken' : 'binance', `S${i % 7}/USDT`));
    const first = await queues.enqueue(units);
    expect(first.filter((r) => r.outcome === 'added')).toHaveLength(3000);
    expect((await queues.counts('binance')).prioritized).toBe(2000);
    expect((await queues.counts('kraken')).prioritized).toBe(1000);
    const again = await queues.enqueue(units);
    expect(again.every((r) => r.outcome === 'duplicate' && r.existing === 'queued')).toBe(true);
    expect((await queues.counts('binance')).prioritized).toBe(2000);
  });
});

describe('VenueQueues on a Redis Cluster', () => {
  let cluster: TestRedisCluster;
  let clusterConn: RedisClient;

  beforeAll(async () => {
    cluster = await startRedisCluster();
    clusterConn = createRedisConnection(cluster.url, { blocking: false });
  }, 60_000);
  afterAll(async () => {
    await clusterConn?.quit();
    await cluster?.stop();
  });

  it('checks and adds the batch of each venue inside its slot, on whichever master holds it', async () => {
    const queues = new VenueQueues(clusterConn, { prefix: 'clustertest' });
    closers.push(() => queues.close());
    // Venue tags that hash to different slots; with three masters some land on different nodes.
    const venues = ['binance', 'kraken', 'coinbase', 'bybit', 'okx'];
    const units = venues.flatMap((venue) => [unit(1, venue), unit(2, venue), unit(3, venue)]);
    expect((await queues.enqueue(units)).map((r) => r.outcome)).toEqual(units.map(() => 'added'));
    const again = await queues.enqueue([...units, unit(4, 'okx')]);
    expect(again.filter((r) => r.outcome === 'duplicate')).toHaveLength(units.length);
    expect(again.filter((r) => r.outcome === 'added').map((r) => r.id)).toEqual(['live|okx|BTC/USDT|1m|ohlcv|4']);
    for (const venue of venues) expect((await queues.counts(venue)).prioritized).toBe(venue === 'okx' ? 4 : 3);
    // The venues really are spread over masters: the scripts ran on more than one node.
    const masters = (clusterConn as Cluster).nodes('master');
    const holding = await Promise.all(masters.map(async (node) => (await node.keys('clustertest:*')).length > 0));
    expect(holding.filter(Boolean).length).toBeGreaterThan(1);
  });
});
