import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { jobId, type PollStatsRecord } from '@tickfleet/core';
import { startMockVenue, type MockVenue } from '@tickfleet/mock-venue';
import { createRedisConnection, type QueuedUnit, type RedisClient, VenueQueues } from '@tickfleet/queues';
import { JsonlSink, Pipeline } from '@tickfleet/sinks';
import { openStore } from '@tickfleet/store';
import { createLogger, createRegistry } from '@tickfleet/telemetry';
import { startRedis, tempDir, waitFor, type TempDir, type TestRedis } from '@tickfleet/testkit';
import { ActiveSets, type ActiveSet } from '../src/active-set.js';
import { FleetWorker } from '../src/fleet-worker.js';

const STATE_WAIT = { timeoutMs: 60_000, intervalMs: 50 };
const venue = 'polymarket';

/**
 * Polymarket books through two real FleetWorkers (BullMQ units in a real Redis, the emulation over
 * HTTP) into a JSONL sink: the files follow the order-book design's layout: books under
 * `<venue>/orderbooks/`, statistics under `<venue>/poll_stats/` with each worker's pool size, and
 * the active set copied to `<venue>/state/active_instruments.snapshot.json` at every swap.
 */
describe('order-book files in the design layout', () => {
  let redis: TestRedis;
  let dir: TempDir;
  let mock: MockVenue;
  let connection: RedisClient;
  let queues: VenueQueues;
  const workers: FleetWorker[] = [];
  const prefix = `lay${Date.now() % 100_000}`;
  const logger = createLogger({ role: 'test', level: 'silent' });

  const tree = (...parts: string[]): string => join(dir.path, 'jsonl', venue, ...parts);
  /** Every record line of one stream directory of the venue, open files included. */
  const lines = <T>(stream: string): T[] => {
    const root = tree(stream);
    if (!existsSync(root)) return [];
    return readdirSync(root).flatMap((day) =>
      readdirSync(join(root, day))
        .filter((f) => f.startsWith('part-'))
        .flatMap((f) =>
          readFileSync(join(root, day, f), 'utf8')
            .split('\n')
            .filter(Boolean),
        )
        .map((l) => JSON.parse(l) as T),
    );
  };
  const snapshot = (): ActiveSet | null => {
    const path = tree('state', 'active_instruments.snapshot.json');
    return existsSync(path) ? (JSON.parse(readFileSync(path, 'utf8')) as ActiveSet) : null;
  };
  const settled = async (): Promise<number> => {
    const c = await queues.counts(venue);
    return c.completed + c.failed;
  };
  const discovery = (dueAt: number): QueuedUnit => ({
    kind: 'discovery',
    venue,
    jobId: jobId({ venue, type: 'discovery', symbol: 'markets' }),
    enqueuedAt: Date.now(),
    dueAt,
  });

  /** What the suite opened, closed in reverse order after it. */
  const closers: Array<() => unknown> = [];
  const opened = <T>(value: T, close: (v: T) => unknown): T => {
    closers.unshift(() => close(value));
    return value;
  };
  /** Flushed, beaten and refreshed by the test only. */
  const byHand = { pollStatsMs: 3_600_000, heartbeatMs: 3_600_000, connectorPollMs: 3_600_000 };

  beforeAll(async () => {
    redis = opened(await startRedis(), (r) => r.stop());
    dir = opened(tempDir('book-layout-'), (d) => d.remove());
    mock = opened(await startMockVenue({ scenario: { venues: { polymarket: { markets: 5 } } } }), (m) => m.stop());
    const store = opened(await openStore(dir.sqliteUrl('state.db')), (s) => s.close());
    const sink = opened(new JsonlSink(dir.file('jsonl')), (s) => s.close());
    const pipeline = opened(new Pipeline({ sink, logger }), (p) => p.close());
    await store.connectors.upsert({ venue, baseUrl: mock.baseUrl(venue), rateLimit: { limit: 1000, periodMs: 10_000 }, maxInflight: 5 });
    await store.jobs.upsert({ venue, type: 'discovery', symbol: 'markets' });
    connection = opened(createRedisConnection(redis.url), (c) => c.disconnect());
    queues = opened(new VenueQueues(connection, { prefix }), (q) => q.close());
    for (const workerId of ['w1', 'w2']) {
      const common = { redisUrl: redis.url, store, pipeline, logger, prefix, venues: [venue], ...byHand };
      const w = opened(new FleetWorker({ ...common, registry: createRegistry('worker'), workerId }), (x) => x.stop(5_000));
      await w.start();
      workers.push(w);
    }
    // Both count each other: each holds ceil(5 / 2) = 3 of the venue's 5 slots.
    for (const w of workers) await w.refreshConnectors();
    expect(workers.map((w) => w.venueShares()[0]?.localConcurrency)).toEqual([3, 3]);
  }, 60_000);

  afterAll(async () => {
    for (const close of closers) await close();
  });

  it('copies each active set swapped in to state/, stores books under orderbooks/ and poll statistics with the pool size', async () => {
    const sets = new ActiveSets(connection, prefix);
    await queues.enqueue([discovery(1)]);
    const first = await waitFor(async () => (snapshot()?.version === 1 ? snapshot() : null), 'the snapshot of version 1', STATE_WAIT);
    // The file is the set in force, as Redis holds it.
    expect(first).toEqual(await sets.read(venue));
    const symbols = Object.keys(first.instruments);
    expect(symbols).toHaveLength(8);
    await waitFor(async () => (await settled()) >= 1, 'the discovery unit settled', STATE_WAIT);

    await queues.enqueue(
      symbols.map((symbol) => ({ kind: 'book-poll', venue, jobId: jobId({ venue, type: 'book', symbol }), enqueuedAt: Date.now(), dueAt: 1 })),
    );
    await waitFor(async () => (await settled()) >= 1 + symbols.length, 'every book polled', STATE_WAIT);
    for (const w of workers) await w.flushPollStats();

    // Books: one per instrument, under orderbooks/ (the channel is still `book`), nothing under book/.
    const books = lines<{ channel: string; symbol: string }>('orderbooks');
    expect(books.map((b) => b.symbol).sort()).toEqual([...symbols].sort());
    expect(books.every((b) => b.channel === 'book')).toBe(true);
    expect(existsSync(tree('book'))).toBe(false);
    expect(readdirSync(tree('orderbooks')).every((d) => /^date=\d{4}-\d{2}-\d{2}$/.test(d))).toBe(true);

    // Statistics: the polls add up, and each worker's record names its pool: 3 slots, not the cap of 5.
    const stats = lines<{ payload: PollStatsRecord }>('poll_stats').map((l) => l.payload);
    expect(stats.reduce((n, s) => n + s.submitted, 0)).toBe(symbols.length);
    expect(stats.length).toBeGreaterThanOrEqual(1);
    for (const s of stats) expect(s).toMatchObject({ venue, poolSize: 3, activeInstruments: 8 });

    // The next swap replaces the copy: version 2, still the set in force.
    await queues.enqueue([discovery(2)]);
    const second = await waitFor(async () => (snapshot()?.version === 2 ? snapshot() : null), 'the snapshot of version 2', STATE_WAIT);
    expect(second).toEqual(await sets.read(venue));
    expect(readdirSync(tree('state'))).toEqual(['active_instruments.snapshot.json']);
  }, 120_000);
});
