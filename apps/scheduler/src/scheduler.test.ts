import { UnrecoverableError, Worker } from 'bullmq';
import { ConfigError, jobId } from '@tickfleet/core';
import { createRedisConnection, type QueuedUnit } from '@tickfleet/queues';
import { openStore, type StateStore } from '@tickfleet/store';
import { createLogger, createRegistry } from '@tickfleet/telemetry';
import { startRedis, tempDir, waitFor, type TempDir, type TestRedis, ManualClock } from '@tickfleet/testkit';
import { parseConfig, type Env } from '@tickfleet/config';
import { SchedulerEnv } from './env.js';
import { Scheduler, type SchedulerOptions } from './scheduler.js';
import { SCHEDULER_DEFAULTS } from './scheduler-defaults.js';

let redis: TestRedis;
const cleanups: Array<() => Promise<unknown> | unknown> = [];
const logger = createLogger({ role: 'scheduler', level: 'silent' });

beforeAll(async () => {
  redis = await startRedis();
});
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});
afterAll(async () => {
  await redis.stop();
});

const START = Date.UTC(2024, 0, 1, 0, 0, 30);
const LEASE_MS = 10_000;

interface Fixture {
  dir: TempDir;
  store: StateStore;
  clock: ManualClock;
  prefix: string;
  scheduler(options?: Partial<SchedulerOptions>): Scheduler;
}

async function fixture(): Promise<Fixture> {
  const dir = tempDir();
  const clock = new ManualClock(START);
  const store = await openStore(dir.sqliteUrl(), { clock });
  cleanups.push(() => dir.remove());
  cleanups.push(() => store.close());
  const prefix = redis.namespace();
  for (const venue of ['binance', 'kraken']) {
    await store.connectors.upsert({ venue, baseUrl: `https://${venue}.example`, rateLimit: { limit: 1200, periodMs: 60_000 } });
  }
  await store.jobs.upsert({ venue: 'binance', type: 'ohlcv', symbol: 'BTC/USDT', timeframe: '1m' });
  await store.jobs.upsert({ venue: 'binance', type: 'ohlcv', symbol: 'ETH/USDT', timeframe: '1h', priority: 5 });
  await store.jobs.upsert({ venue: 'kraken', type: 'book', symbol: 'XBT/USD' });
  return {
    dir,
    store,
    clock,
    prefix,
    scheduler: (options = {}) => {
      const s = new Scheduler({
        store,
        redisUrl: redis.url,
        prefix,
        clock,
        logger,
        registry: createRegistry('scheduler', { defaultMetrics: false }),
        leaseMs: LEASE_MS,
        batchSize: 2, // smaller than the job count: a tick must claim again while batches are full
        ...options,
      });
      cleanups.push(() => s.stop());
      return s;
    },
  };
}

async function unitsIn(s: Scheduler, venue: string): Promise<Array<{ id: string; data: QueuedUnit }>> {
  const jobs = await s.queues.queue(venue).getJobs(['prioritized', 'waiting', 'active', 'completed', 'failed', 'delayed']);
  return jobs.map((j) => ({ id: j.id!, data: j.data })).sort((a, b) => a.id.localeCompare(b.id));
}

describe('Scheduler', () => {
  it('enqueues one unit per due job with a deterministic id, priority and next due time', async () => {
    const f = await fixture();
    const s = f.scheduler();
    expect(await s.tick()).toEqual({ leader: true, claimed: 3, added: 3, duplicates: 0, requeued: 0 });
    const binance = await unitsIn(s, 'binance');
    expect(binance.map((u) => u.id)).toEqual(['live|binance|BTC/USDT|1m|ohlcv|0', 'live|binance|ETH/USDT|1h|ohlcv|0']);
    const btc = binance[0]!.data;
    expect(btc).toMatchObject({ kind: 'incremental', venue: 'binance', jobId: 'binance:BTC/USDT:1m:ohlcv', dueAt: 0, enqueuedAt: START });
    // Next close (00:01:00) + 2 s close delay + the job's stable jitter (< 1 s).
    expect(btc.nextRunAt! - Date.UTC(2024, 0, 1, 0, 1, 2)).toBeGreaterThanOrEqual(0);
    expect(btc.nextRunAt! - Date.UTC(2024, 0, 1, 0, 1, 2)).toBeLessThan(1000);
    const [book] = await unitsIn(s, 'kraken');
    expect(book?.data.kind).toBe('book-poll');
    const eth = await s.queues.queue('binance').getJob('live|binance|ETH/USDT|1h|ohlcv|0');
    const btcJob = await s.queues.queue('binance').getJob('live|binance|BTC/USDT|1m|ohlcv|0');
    expect(eth!.opts.priority).toBeLessThan(btcJob!.opts.priority!); // job priority 5 runs first
    expect(btcJob!.opts.removeOnComplete).toEqual({ age: 3600, count: 1000 });
    expect(btcJob!.opts.removeOnFail).toMatchObject({ age: 86_400 });
    // The leases hold: the next tick claims nothing.
    expect(await s.tick()).toMatchObject({ leader: true, claimed: 0, added: 0 });
    const text = await s.registry.metrics();
    expect(text).toMatch(/tickfleet_scheduler_units_enqueued_total\{venue="binance",role="scheduler"\} 2/);
    expect(text).toMatch(/tickfleet_scheduler_claimed_total\{role="scheduler"\} 3/);
    expect(text).toMatch(/tickfleet_scheduler_is_leader\{role="scheduler"\} 1/);
    expect(text).toMatch(/tickfleet_scheduler_tick_seconds_count\{role="scheduler"\} 2/);
  });

  it('reclaims expired leases without enqueuing a unit twice, also after a restart', async () => {
    const f = await fixture();
    const first = f.scheduler();
    await first.tick();
    await first.stop();
    f.clock.advance(LEASE_MS + 1);
    const restarted = f.scheduler();
    expect(await restarted.tick()).toEqual({ leader: true, claimed: 3, added: 0, duplicates: 3, requeued: 0 });
    expect(await restarted.tick()).toMatchObject({ claimed: 0 });
    expect(await unitsIn(restarted, 'binance')).toHaveLength(2);
    expect(await unitsIn(restarted, 'kraken')).toHaveLength(1);
    expect(await restarted.registry.metrics()).toMatch(/tickfleet_scheduler_duplicate_enqueues_total\{venue="binance",role="scheduler"\} 2/);
    const job = await f.store.jobs.get('binance:BTC/USDT:1m:ohlcv');
    expect(job?.lockedUntil).toBe(f.clock.now() + LEASE_MS);
  });

  it('runs one leader among several replicas and never duplicates a unit', async () => {
    const f = await fixture();
    const replicas = [f.scheduler({ id: 'a' }), f.scheduler({ id: 'b' }), f.scheduler({ id: 'c' })];
    const results = [];
    for (let round = 0; round < 3; round++) {
      results.push(...(await Promise.all(replicas.map((r) => r.tick()))));
      f.clock.advance(LEASE_MS + 1); // leases lapse each round: every round reclaims all jobs
    }
    expect(replicas.filter((r) => r.isLeader)).toHaveLength(1);
    expect(results.reduce((n, r) => n + r.added, 0)).toBe(3);
    expect(results.reduce((n, r) => n + r.duplicates, 0)).toBe(6);
    expect((await unitsIn(replicas[0]!, 'binance')).length + (await unitsIn(replicas[0]!, 'kraken')).length).toBe(3);
    // The leader resigns on stop: a follower leads at its next tick, without waiting for the TTL.
    const leader = replicas.find((r) => r.isLeader)!;
    await leader.stop();
    const follower = replicas.find((r) => r !== leader)!;
    expect((await follower.tick()).leader).toBe(true);
  });

  it('gives nothing to paused or disabled connectors and disabled jobs', async () => {
    const f = await fixture();
    await f.store.connectors.setStatus('kraken', 'paused');
    await f.store.jobs.setEnabled('binance:ETH/USDT:1h:ohlcv', false);
    const s = f.scheduler();
    expect(await s.tick()).toMatchObject({ claimed: 1, added: 1 });
    expect(await unitsIn(s, 'kraken')).toHaveLength(0);
    expect((await unitsIn(s, 'binance')).map((u) => u.data.jobId)).toEqual(['binance:BTC/USDT:1m:ohlcv']);
    await f.store.connectors.setStatus('kraken', 'disabled');
    f.clock.advance(60_000);
    expect((await s.tick()).added).toBe(0);
    await f.store.connectors.setStatus('kraken', 'active');
    await f.store.jobs.setEnabled('binance:ETH/USDT:1h:ohlcv', true);
    expect((await s.tick()).added).toBe(2);
  });

  it('queues no book units for a venue polled by its book loop, and frees their leases until the next check', async () => {
    const f = await fixture();
    await f.store.connectors.upsert({
      venue: 'kraken',
      baseUrl: 'https://kraken.example',
      rateLimit: { limit: 1200, periodMs: 60_000 },
      bookLoop: { cadenceMs: 1000 },
    });
    const s = f.scheduler();
    expect(await s.tick()).toMatchObject({ claimed: 3, added: 2 });
    expect(await unitsIn(s, 'kraken')).toHaveLength(0);
    const book = await f.store.jobs.get(jobId({ venue: 'kraken', type: 'book', symbol: 'XBT/USD' }));
    expect(book?.nextRunAt).toBe(START + SCHEDULER_DEFAULTS.bookLoopRecheckMs);
    // the loop turned off: book units again once the venue list is read anew
    await f.store.connectors.upsert({ venue: 'kraken', baseUrl: 'https://kraken.example', rateLimit: { limit: 1200, periodMs: 60_000 }, bookLoop: null });
    f.clock.advance(SCHEDULER_DEFAULTS.bookLoopRecheckMs);
    await s.tick();
    expect((await unitsIn(s, 'kraken')).map((u) => u.data.kind)).toEqual(['book-poll']);
  });

  it('enqueues the next run at the time the worker stored, and requeues a unit that finished without updating its job', async () => {
    const f = await fixture();
    const s = f.scheduler();
    await f.store.connectors.setStatus('binance', 'paused');
    const completed: string[] = [];
    const connection = createRedisConnection(redis.url);
    let failNext = false;
    const worker = new Worker<QueuedUnit>(
      s.queues.queue('kraken').name,
      async (job) => {
        if (failNext) throw new UnrecoverableError('worker gave up without telling the store');
        await f.store.jobs.complete(job.data.jobId, { nextRunAt: job.data.nextRunAt! });
        completed.push(job.id!);
      },
      { connection, prefix: f.prefix },
    );
    cleanups.push(async () => {
      await worker.close();
      await connection.quit();
    });
    await s.tick();
    await waitFor(() => completed.length === 1, 'the first book unit to complete');
    const stored = await f.store.jobs.get('kraken:XBT/USD:-:book');
    expect(stored?.lockedUntil).toBeNull();
    expect(await s.tick()).toMatchObject({ claimed: 0 }); // not due yet
    f.clock.set(stored!.nextRunAt);
    failNext = true;
    const failed = new Promise((resolve) => worker.once('failed', resolve));
    expect(await s.tick()).toMatchObject({ claimed: 1, added: 1 });
    await failed;
    expect(completed[0]).toBe('live|kraken|XBT/USD|-|book|0');
    // The unit failed but the job still shows the same due time: after the lease it runs again.
    failNext = false;
    f.clock.advance(LEASE_MS + 1);
    expect(await s.tick()).toMatchObject({ claimed: 1, added: 0, requeued: 1 });
    await waitFor(() => completed.length === 2, 'the requeued unit to complete');
    expect(completed[1]).toBe(`live|kraken|XBT/USD|-|book|${stored!.nextRunAt}`);
  });

  it('frees the leases when the queue cannot be reached', async () => {
    const f = await fixture();
    const s = f.scheduler({ redisUrl: 'redis://127.0.0.1:1' });
    s.election.tryLead = async () => true; // leadership is not under test here
    await expect(s.tick()).rejects.toThrow();
    const job = await f.store.jobs.get('binance:BTC/USDT:1m:ohlcv');
    expect(job?.lockedUntil).toBeNull();
  });

  it('claims the next batches while earlier chunks are enqueued, and queues every due job exactly once', async () => {
    const f = await fixture();
    for (let i = 0; i < 40; i++) {
      await f.store.jobs.upsert({ venue: i % 2 ? 'kraken' : 'binance', type: 'ohlcv', symbol: `S${i}/USDT`, timeframe: '1m', priority: i % 5 });
    }
    // Batches of 10 in chunks of 3, 3, 3 and 1, up to three chunks under way.
    const s = f.scheduler({ batchSize: 10, enqueueChunk: 3, enqueueDepth: 3 });
    expect(await s.tick()).toEqual({ leader: true, claimed: 43, added: 43, duplicates: 0, requeued: 0 });
    const units = [...(await unitsIn(s, 'binance')), ...(await unitsIn(s, 'kraken'))];
    expect(units).toHaveLength(43);
    expect(new Set(units.map((u) => u.data.jobId)).size).toBe(43);
    for (const job of await f.store.jobs.list()) expect(job.lockedUntil).toBe(START + LEASE_MS);
    // Every lease lapsed while every unit still waits: the rescan adds nothing.
    f.clock.advance(LEASE_MS + 1);
    expect(await s.tick()).toEqual({ leader: true, claimed: 43, added: 0, duplicates: 43, requeued: 0 });
    expect((await unitsIn(s, 'binance')).length + (await unitsIn(s, 'kraken')).length).toBe(43);
    const text = await s.registry.metrics();
    expect(text).toMatch(/tickfleet_scheduler_units_enqueued_total\{venue="binance",role="scheduler"\} 22/);
    expect(text).toMatch(/tickfleet_scheduler_units_enqueued_total\{venue="kraken",role="scheduler"\} 21/);
    expect(text).toMatch(/tickfleet_scheduler_duplicate_enqueues_total\{venue="kraken",role="scheduler"\} 21/);
  });

  it('sends and claims nothing more once an enqueue failed, and frees the lease of every job it claimed', async () => {
    const f = await fixture();
    for (let i = 0; i < 9; i++) await f.store.jobs.upsert({ venue: 'binance', type: 'ohlcv', symbol: `S${i}/USDT`, timeframe: '1m' });
    const s = f.scheduler({ redisUrl: 'redis://127.0.0.1:1', batchSize: 6, enqueueChunk: 2, enqueueDepth: 2 });
    s.election.tryLead = async () => true; // leadership is not under test here
    await expect(s.tick()).rejects.toThrow();
    // One batch of 6: two chunks were under way when the first failed, the third was never sent,
    // and the next 6 jobs were never claimed.
    expect(await s.registry.metrics()).toMatch(/tickfleet_scheduler_claimed_total\{role="scheduler"\} 6\n/);
    for (const job of await f.store.jobs.list()) expect(job.lockedUntil).toBeNull();
  });

  /** What a Redis restart without persistence leaves of this test's namespace: nothing. */
  async function loseRedis(prefix: string): Promise<void> {
    const conn = createRedisConnection(redis.url);
    try {
      const keys = await conn.keys(`${prefix}:*`);
      if (keys.length > 0) await conn.del(...keys);
    } finally {
      await conn.quit();
    }
  }

  it('re-claims live jobs after Redis lost their units, once their lease expires', async () => {
    const f = await fixture();
    const s = f.scheduler();
    expect((await s.tick()).added).toBe(3);
    const before = (await unitsIn(s, 'binance')).map((u) => u.id);
    await loseRedis(f.prefix);
    expect(await unitsIn(s, 'binance')).toEqual([]);
    // Leased: nothing claimed until the lease ends (a live unit may still be running).
    expect(await s.tick()).toMatchObject({ claimed: 0, added: 0 });
    f.clock.advance(LEASE_MS + 1);
    expect(await s.tick()).toMatchObject({ claimed: 3, added: 3, duplicates: 0 });
    // Same due times, so the same deterministic ids as before the loss.
    expect((await unitsIn(s, 'binance')).map((u) => u.id)).toEqual(before);
  });

  it('ends the leases it took when it stops: a restarted fleet with a fresh Redis queues every job at once', async () => {
    const f = await fixture();
    const first = f.scheduler({ id: 'first' });
    expect((await first.tick()).added).toBe(3);
    const before = [...(await unitsIn(first, 'binance')), ...(await unitsIn(first, 'kraken'))].map((u) => u.id);
    await first.stop();
    for (const job of await f.store.jobs.list()) expect(job.lockedUntil).toBeNull();
    expect(await f.store.jobs.leases(f.clock.now())).toEqual([]);
    // `tickfleet up` stopped: its private Redis is gone with the units. The next fleet, at the same
    // instant, claims every job and queues its unit again (same due times, same ids).
    await loseRedis(f.prefix);
    const next = f.scheduler({ id: 'next' });
    expect(await next.tick()).toEqual({ leader: true, claimed: 3, added: 3, duplicates: 0, requeued: 0 });
    expect([...(await unitsIn(next, 'binance')), ...(await unitsIn(next, 'kraken'))].map((u) => u.id)).toEqual(before);
  });

  it('as a new leader, ends the leases of units a lost Redis held and keeps those of units still queued', async () => {
    const f = await fixture();
    const dead = f.scheduler({ id: 'dead' });
    expect((await dead.tick()).added).toBe(3);
    const [lease] = await f.store.jobs.leases(f.clock.now());
    expect(lease?.holder).toMatch(/^[0-9a-f]{16}\/dead$/);
    // The leader dies without stopping (SIGKILL): its lock lapses, its leases stay.
    await dead.election.resign();
    // Another replica of the same Redis leads: the units are still queued there, so their leases stay.
    const next = f.scheduler({ id: 'next' });
    expect(await next.tick()).toEqual({ leader: true, claimed: 0, added: 0, duplicates: 0, requeued: 0 });
    expect((await unitsIn(next, 'binance')).length + (await unitsIn(next, 'kraken')).length).toBe(3);
    expect((await f.store.jobs.leases(f.clock.now())).map((l) => l.holder)).toEqual([lease!.holder, lease!.holder]);
    // Redis loses everything (a restart without persistence, or the fresh private Redis of the next
    // `tickfleet up`): the lead is lost with its lock, and the replica that takes it again ends the
    // dead leases at once and queues every job again, at the same instant.
    await loseRedis(f.prefix);
    await next.election.resign();
    const after = await next.tick();
    expect(after).toEqual({ leader: true, claimed: 3, added: 3, duplicates: 0, requeued: 0 });
    const holders = new Set((await f.store.jobs.leases(f.clock.now())).map((l) => l.holder));
    expect([...holders]).toEqual([expect.stringMatching(/\/next$/)]);
    expect(holders.has(lease!.holder)).toBe(false);
  });

  it('re-creates the units of owed backfill chunks from the store and the missing global concurrency, idempotently', async () => {
    const f = await fixture();
    const s = f.scheduler();
    await f.store.connectors.upsert({ venue: 'binance', baseUrl: 'https://binance.example', rateLimit: { limit: 1200, periodMs: 60_000 }, maxInflight: 3 });
    const jobId = 'binance:BTC/USDT:1m:ohlcv';
    const chunks = [0, 1, 2, 3].map((i) => ({ fromMs: START + i * 600_000, toMs: START + (i + 1) * 600_000 }));
    await f.store.backfills.create({ id: 'bf-r', jobId, fromMs: chunks[0]!.fromMs, toMs: chunks[3]!.toMs, chunks });
    await f.store.backfills.create({ id: 'bf-x', jobId, fromMs: chunks[0]!.fromMs, toMs: chunks[1]!.toMs, chunks: chunks.slice(0, 2) });
    await f.store.backfills.setStatus('bf-x', 'cancelled');
    await f.store.backfills.chunkDone('bf-r', chunks[1]!);
    await f.store.backfills.chunkFailed('bf-r', chunks[3]!, 'unrecoverable: HTTP 400');
    const idOf = (c: { fromMs: number; toMs: number }) => `bf|bf-r|${c.fromMs}-${c.toMs}`;

    // Just created: the command that recorded the backfill is still enqueueing its units, so a
    // repair leaves them to it (re-creating them would report units lost that never were). The
    // queue's missing global concurrency is set at once.
    expect(await s.queues.globalConcurrency('binance')).toBeNull();
    expect(await s.repair()).toEqual({
      owed: 0,
      recreated: 0,
      concurrency: [
        { venue: 'binance', value: 3 },
        { venue: 'kraken', value: expect.any(Number) },
      ],
    });
    expect(await s.queues.globalConcurrency('binance')).toBe(3);
    expect(await unitsIn(s, 'binance')).toEqual([]);

    // Past the grace, still nothing in Redis (the units were lost): the owed chunks 0 and 2 come
    // back; done, failed and cancelled ones do not.
    f.clock.advance(15_000);
    expect(await s.repair()).toEqual({ owed: 2, recreated: 2, concurrency: [] });
    const units = await unitsIn(s, 'binance');
    expect(units.map((u) => u.id)).toEqual([idOf(chunks[0]!), idOf(chunks[2]!)]);
    expect(units[0]!.data).toMatchObject({ kind: 'backfill', jobId, backfillId: 'bf-r', fromMs: chunks[0]!.fromMs, toMs: chunks[0]!.toMs, chunkIndex: 0 });

    // Still queued: a second pass adds nothing.
    expect(await s.repair()).toEqual({ owed: 2, recreated: 0, concurrency: [] });

    // BullMQ finished a unit without the chunk being recorded (failed as stalled, or the store
    // could not record the failure): the chunk is still owed, so its unit is replaced.
    const connection = createRedisConnection(redis.url);
    const worker = new Worker<QueuedUnit>(
      s.queues.queue('binance').name,
      async (job) => {
        if (job.data.fromMs === chunks[0]!.fromMs) throw new UnrecoverableError('died without telling the store');
        await f.store.backfills.chunkDone(job.data.backfillId!, { fromMs: job.data.fromMs!, toMs: job.data.toMs! });
      },
      { connection, prefix: f.prefix },
    );
    cleanups.push(async () => {
      await worker.close();
      await connection.quit();
    });
    await waitFor(
      async () => (await s.queues.counts('binance')).failed === 1 && (await s.queues.counts('binance')).completed === 1,
      'one unit failed, one completed',
    );
    await worker.close();
    expect(await s.repair()).toEqual({ owed: 1, recreated: 1, concurrency: [] });
    expect((await s.queues.queue('binance').getJob(idOf(chunks[0]!)))?.finishedOn).toBeUndefined();

    // Redis loses everything again: the one owed unit and the concurrency come back.
    await loseRedis(f.prefix);
    expect(await s.repair()).toMatchObject({ owed: 1, recreated: 1, concurrency: [{ venue: 'binance', value: 3 }, { venue: 'kraken' }] });
    expect((await unitsIn(s, 'binance')).map((u) => u.id)).toEqual([idOf(chunks[0]!)]);
  });

  it('repairs on its own while running (after a lost Redis, within one repair period)', async () => {
    const f = await fixture();
    const s = f.scheduler({ tickMs: 50, repairEveryMs: 100 });
    const chunks = [{ fromMs: START, toMs: START + 600_000 }];
    await f.store.backfills.create({ id: 'bf-auto', jobId: 'binance:BTC/USDT:1m:ohlcv', fromMs: START, toMs: START + 600_000, chunks });
    f.clock.advance(15_000); // past the grace a repair leaves to the backfill's creator
    s.start();
    const id = `bf|bf-auto|${START}-${START + 600_000}`;
    await waitFor(async () => (await s.queues.queue('binance').getJob(id)) !== undefined, 'the owed unit queued by the running scheduler');
    await loseRedis(f.prefix);
    // The ManualClock's monotonic time does not move by itself: advance it so the next repair is due.
    f.clock.advance(100);
    await waitFor(
      async () => (await s.queues.queue('binance').getJob(id)) !== undefined && (await s.queues.globalConcurrency('binance')) !== null,
      'unit and concurrency back after the loss',
    );
  });
});

const parseSchedulerEnv = (env: Env) => parseConfig(SchedulerEnv, env);

describe('the scheduler environment', () => {
  it('reads durations and defaults', () => {
    const env = parseSchedulerEnv({ REDIS_URL: 'redis://127.0.0.1:6379', TICKFLEET_SCHEDULER_TICK_MS: '250ms', PORT: '9100' });
    expect(env).toMatchObject({ TICKFLEET_SCHEDULER_TICK_MS: 250, PORT: 9100, TICKFLEET_SCHEDULER_BATCH: 5000, TICKFLEET_PREFIX: 'tickfleet' });
  });

  it.each([
    [{}, 'REDIS_URL'],
    [{ REDIS_URL: 'http://x' }, 'REDIS_URL'],
    [{ REDIS_URL: 'redis://x', TICKFLEET_SCHEDULER_TICK_MS: 'often' }, 'TICKFLEET_SCHEDULER_TICK_MS'],
    [{ REDIS_URL: 'redis://x', PORT: '70000' }, 'PORT'],
    [{ REDIS_URL: 'redis://x', TICKFLEET_SCHEDULER_BATCH: '-3' }, 'TICKFLEET_SCHEDULER_BATCH'],
  ])('rejects %j naming %s', (env, variable) => {
    expect(() => parseSchedulerEnv(env)).toThrow(ConfigError);
    expect(() => parseSchedulerEnv(env)).toThrow(new RegExp(`invalid configuration ${variable}: expected`));
  });
});

describe('per-day units', () => {
  it('groups per-day jobs by venue and owed day (Alpaca: one unit, Polygon: 3 symbols per unit); a day not final yet gets no unit', async () => {
    const f = await fixture();
    // Wednesday 2024-01-24 12:00Z: Tuesday's Polygon day bar is a full day old, Wednesday's session has not opened
    const now = Date.UTC(2024, 0, 24, 12);
    f.clock.set(now);
    const since = Date.UTC(2024, 0, 23);
    for (const symbol of ['A', 'B', 'C', 'D', 'E', 'F', 'G']) await f.store.jobs.upsert({ venue: 'polygon', type: 'ohlcv', symbol, timeframe: '1d', since });
    const late = await f.store.jobs.upsert({ venue: 'polygon', type: 'ohlcv', symbol: 'LATE', timeframe: '1d', since: Date.UTC(2024, 0, 24) });
    for (const symbol of ['AAPL', 'MSFT']) await f.store.jobs.upsert({ venue: 'alpaca', type: 'ohlcv', symbol, timeframe: '1d', since });
    const jobs = (await f.store.jobs.list()).filter((j) => j.venue === 'polygon' || j.venue === 'alpaca');
    const units = await f.scheduler().unitsFor(jobs, now);
    const tuesday = Date.UTC(2024, 0, 23, 5);
    expect(units.map((u) => [u.kind, u.venue, u.fromMs, u.toMs, u.jobIds?.map((id) => id.split(':')[1])])).toEqual([
      ['session-day', 'alpaca', tuesday, tuesday + 86_400_000, ['AAPL', 'MSFT']],
      ['session-day', 'polygon', tuesday, tuesday + 86_400_000, ['A', 'B', 'C']],
      ['session-day', 'polygon', tuesday, tuesday + 86_400_000, ['D', 'E', 'F']],
      ['session-day', 'polygon', tuesday, tuesday + 86_400_000, ['G']],
    ]);
    // Wednesday's bars are final after its after-hours session and the SIP delay (Alpaca, 20:15 New York) or at Thursday's New York midnight (Polygon), plus the close delay
    expect(units.find((u) => u.venue === 'alpaca')!.nextRunAt).toBe(Date.UTC(2024, 0, 25, 1, 15, 2));
    expect(units[1]!.nextRunAt).toBe(Date.UTC(2024, 0, 25, 5, 0, 2));
    // the job owing Wednesday got no unit: its lease is free and it is due when Wednesday is final
    expect(await f.store.jobs.get(late.id)).toMatchObject({ lockedUntil: null, nextRunAt: Date.UTC(2024, 0, 25, 5, 0, 2) });
  });

  it('plans a Polygon universe job one slice of 3 members at a time from its member cursor, the last slice with the day', async () => {
    const f = await fixture();
    const now = Date.UTC(2024, 0, 24, 12);
    f.clock.set(now);
    const tuesday = Date.UTC(2024, 0, 23, 5);
    await f.store.universes.set('polygon', 'mix', ['G', 'B', 'F', 'A', 'E', 'C', 'D']);
    const job = await f.store.jobs.upsert({ venue: 'polygon', type: 'ohlcv', symbol: '@mix', timeframe: '1d', since: Date.UTC(2024, 0, 23) });
    const single = await f.store.jobs.upsert({ venue: 'polygon', type: 'ohlcv', symbol: 'SPY', timeframe: '1d', since: Date.UTC(2024, 0, 23) });
    const s = f.scheduler();
    const plan = async () => {
      const units = await s.unitsFor([(await f.store.jobs.get(job.id))!, (await f.store.jobs.get(single.id))!], now);
      return units.map((u) => ({ jobIds: u.jobIds, fromMs: u.fromMs, members: u.members, lastSlice: u.lastSlice, nextRunAt: u.nextRunAt }));
    };
    const dayFinal = Date.UTC(2024, 0, 25, 5, 0, 2);
    // the universe job's slice is a unit of its own; the single job is planned as before
    expect(await plan()).toEqual([
      { jobIds: [job.id], fromMs: tuesday, members: ['A', 'B', 'C'], lastSlice: false, nextRunAt: now },
      { jobIds: [single.id], fromMs: tuesday, members: undefined, lastSlice: undefined, nextRunAt: dayFinal },
    ]);
    await f.store.jobs.advanceMembers(job.id, { member: 'C' });
    expect((await plan())[0]).toEqual({ jobIds: [job.id], fromMs: tuesday, members: ['D', 'E', 'F'], lastSlice: false, nextRunAt: now });
    // members changed during the day: one sorting after the member cursor is in today's slices, one before it waits for the next day
    await f.store.universes.set('polygon', 'mix', ['G', 'B', 'F', 'A', 'E', 'C', 'D', 'H', 'BB']);
    await f.store.jobs.advanceMembers(job.id, { member: 'F' });
    expect((await plan())[0]).toEqual({ jobIds: [job.id], fromMs: tuesday, members: ['G', 'H'], lastSlice: true, nextRunAt: dayFinal });
    // members removed past the member cursor: the last slice names the last members again, only to close the day
    await f.store.universes.set('polygon', 'mix', ['A', 'B', 'C', 'D']);
    expect((await plan())[0]).toMatchObject({ members: ['B', 'C', 'D'], lastSlice: true, nextRunAt: dayFinal });
    // the day done, the next slice is Wednesday's first (not final yet: the job is released until it is)
    await f.store.jobs.advanceMembers(job.id, { dayCursor: tuesday });
    expect((await plan()).map((u) => u.jobIds)).toEqual([[single.id]]);
    expect(await f.store.jobs.get(job.id)).toMatchObject({ cursor: tuesday, memberCursor: null, nextRunAt: dayFinal });
  });
});
