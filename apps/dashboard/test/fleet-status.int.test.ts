import { alignDown, calendarFor } from '@tickfleet/core';
import { DEFAULT_AIMD_LIMITS, WorkerHeartbeat } from '@tickfleet/budget';
import { createRegistry } from '@tickfleet/telemetry';
import { startRedis, tempDir, type TempDir, type TestRedis } from '@tickfleet/testkit';
import { collectFleetStatus, FleetStatusMetrics } from '../src/index.js';
import { connector, fixedClock, liveUnits, openTestFleet, testNow, writeSpoolSegment, type TestFleet } from './fleet-fixture.js';

let redis: TestRedis;
let dir: TempDir;
let fleet: TestFleet;

beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await redis.stop();
});
beforeEach(async () => {
  dir = tempDir();
  fleet = await openTestFleet(redis.url, redis.namespace(), dir, testNow());
});
afterEach(async () => {
  await fleet.close();
  dir.remove();
});

/**
 * Four venues, one per situation an operator and an autoscaler must tell apart:
 * - binance: budget has room, no freeze: every waiting unit is runnable;
 * - coinbase: budget nearly spent: runnable capped by the weight left, the rest blocked;
 * - polygon: banned (418) with the budget spent: nothing runnable;
 * - kraken: frozen for its budget: cause `budget`;
 * - okx: paused connector: its units are blocked.
 * Health: binance idle (no unit reported), coinbase degraded (3 of 4 units timed out), polygon and
 * kraken frozen, okx paused.
 */
async function seed(): Promise<{ btcCursor: number }> {
  const { store, queues, control, now } = fleet;
  await store.connectors.upsert(
    connector('binance', 1200, { rateLimit: { policy: 'fixed-window', limit: 1200, periodMs: 60_000, headroom: 0.95 }, maxInflight: 8 }),
  );
  await store.connectors.upsert(connector('coinbase', 3));
  await store.connectors.upsert(connector('polygon', 5, { maxInflight: 2 }));
  await store.connectors.upsert(connector('kraken', 10));
  await store.connectors.upsert(connector('okx', 10, { status: 'paused' }));

  const btc = await store.jobs.upsert({ venue: 'binance', type: 'ohlcv', symbol: 'BTC/USDT', timeframe: '1m' });
  await store.jobs.upsert({ venue: 'binance', type: 'ohlcv', symbol: 'ETH/USDT', timeframe: '1m' });
  const sol = await store.jobs.upsert({ venue: 'binance', type: 'ohlcv', symbol: 'SOL/USDT', timeframe: '1m' });
  const aapl = await store.jobs.upsert({ venue: 'polygon', type: 'ohlcv', symbol: 'AAPL', timeframe: '1d' });
  const off = await store.jobs.upsert({ venue: 'polygon', type: 'ohlcv', symbol: 'MSFT', timeframe: '1d', enabled: false });
  const btcCursor = alignDown(now, '1m') - 3 * 60_000;
  await store.jobs.advanceCursor(btc.id, btcCursor);
  await store.jobs.advanceCursor(sol.id, alignDown(now, '1m') - 60_000);
  await store.jobs.advanceCursor(aapl.id, alignDown(now, '1d') - 86_400_000);
  await store.jobs.advanceCursor(off.id, 0);

  await store.gaps.record({ jobId: btc.id, fromMs: 0, toMs: 60_000 }, now);
  await store.gaps.record({ jobId: btc.id, fromMs: 120_000, toMs: 180_000 }, now);
  await store.gaps.record({ jobId: aapl.id, fromMs: 0, toMs: 86_400_000 }, now);
  await store.gaps.markFilled(btc.id, 120_000, 180_000, now);

  expect((await store.budgets.acquire('binance', 100)).ok).toBe(true);
  expect((await store.budgets.acquire('coinbase', 1)).ok).toBe(true);
  expect((await store.budgets.acquire('polygon', 5)).ok).toBe(true);

  await queues.enqueue([
    ...liveUnits('binance', 'BTC/USDT', 5, now),
    ...liveUnits('coinbase', 'BTC/USD', 4, now),
    ...liveUnits('polygon', 'AAPL', 3, now),
    ...liveUnits('kraken', 'XBT/USD', 2, now),
    ...liveUnits('okx', 'BTC/USDT', 1, now),
  ]);
  await control.freeze('polygon', now + 120_000, '418');
  await control.freeze('kraken', now + 30_000, 'budget');
  await queues.setGlobalConcurrency('binance', 8);
  const timedOut = { ok: false, latencyMs: 10_000, cause: 'timeout', message: 'coinbase candles timed out after 10000 ms' } as const;
  await control.reportOutcomes('coinbase', [{ ok: true, latencyMs: 50 }, timedOut, timedOut, timedOut]);

  for (const id of ['w1', 'w2']) await new WorkerHeartbeat(fleet.redis, id, { prefix: fleet.prefix, clock: fixedClock(now) }).beat('binance');
  return { btcCursor };
}

describe('collectFleetStatus', () => {
  it('reports every venue with exact budget, freeze, queue, lag, gap, worker and autoscaling figures', async () => {
    const { btcCursor } = await seed();
    const { now } = fleet;
    const spoolBytes = writeSpoolSegment(`${fleet.spoolDir}/worker-0`, now - 5000, 3);
    // A scheduler claimed two binance jobs: held by its lease until it ends.
    expect((await fleet.store.jobs.claimDue(now, 2, 300_000, 'epoch/scheduler-1')).map((j) => j.venue)).toEqual(['binance', 'binance']);
    const status = await collectFleetStatus({ ...fleet, spoolDir: fleet.spoolDir, now });

    expect(status.atMs).toBe(now);
    expect(status.venues.map((v) => v.venue)).toEqual(['binance', 'coinbase', 'kraken', 'okx', 'polygon']);
    const byVenue = Object.fromEntries(status.venues.map((v) => [v.venue, v]));
    const windowStartMs = Math.floor(now / 60_000) * 60_000;
    const window = { policy: 'fixed-window', periodMs: 60_000, windowStartMs, resetAtMs: windowStartMs + 60_000 };
    const noUnits = { waiting: 0, delayed: 0, active: 0, completed: 0, failed: 0 };

    expect(byVenue.binance).toEqual({
      venue: 'binance',
      status: 'active',
      maxInflight: 8,
      concurrency: { current: 8, min: 1, max: 8 },
      globalConcurrency: 8,
      budget: { ...window, used: 100, limit: 1140, remaining: 1040 },
      freeze: null,
      queue: { ...noUnits, prioritized: 5 },
      runnable: 5,
      blocked: 0,
      cursorLag: {
        maxMs: now - (btcCursor + 60_000),
        jobId: 'binance:BTC/USDT:1m:ohlcv',
        maxCadenceRatio: (now - (btcCursor + 60_000)) / 60_000,
        jobs: 3,
        withoutCursor: 1,
      },
      openGaps: 1,
      liveWorkers: 2,
      leases: { jobs: 2, untilMs: now + 300_000 },
      jobsCount: 3,
      activeJobsCount: 3,
      lastJobRunAt: null,
      health: {
        state: 'idle',
        reason: 'no unit finished in the last 5m',
        window: { ms: 300_000, ok: 0, failed: 0, byCause: {} },
        failureStreak: 0,
        successStreak: 0,
        lastError: null,
        lastSuccessAtMs: null,
        lastRateLimitAtMs: null,
      },
    });
    expect(byVenue.coinbase!.health).toEqual({
      state: 'degraded',
      reason: '3 of 4 units failed in the last 5m (timeout 3)',
      window: { ms: 300_000, ok: 1, failed: 3, byCause: { timeout: 3 } },
      failureStreak: 3,
      successStreak: 0,
      lastError: { cause: 'timeout', atMs: now, message: 'coinbase candles timed out after 10000 ms' },
      lastSuccessAtMs: now,
      lastRateLimitAtMs: null,
    });
    expect(Object.fromEntries(status.venues.map((v) => [v.venue, v.health.state]))).toEqual({
      binance: 'idle',
      coinbase: 'degraded',
      kraken: 'frozen',
      okx: 'paused',
      polygon: 'frozen',
    });
    expect(byVenue.polygon?.leases).toEqual({ jobs: 0, untilMs: null });
    expect(byVenue.coinbase).toMatchObject({
      budget: { ...window, used: 1, limit: 3, remaining: 2 },
      freeze: null,
      queue: { ...noUnits, prioritized: 4 },
      runnable: 2,
      blocked: 2,
      cursorLag: { maxMs: null, jobId: null, maxCadenceRatio: null, jobs: 0, withoutCursor: 0 },
      openGaps: 0,
      liveWorkers: 0,
    });
    const aaplLag = Math.max(0, now - calendarFor('polygon').nextExpectedOpen('1d', alignDown(now, '1d') - 86_400_000));
    expect(byVenue.polygon).toMatchObject({
      maxInflight: 2,
      concurrency: { current: 2, min: 1, max: 2 },
      budget: { ...window, used: 5, limit: 5, remaining: 0 },
      freeze: { cause: '418', untilMs: now + 120_000, remainingMs: 120_000 },
      queue: { ...noUnits, prioritized: 3 },
      runnable: 0,
      blocked: 3,
      // US equities: the lag counts from the next session's day bar after the cursor (none over weekends and holidays).
      cursorLag: {
        maxMs: aaplLag,
        jobId: 'polygon:AAPL:1d:ohlcv',
        maxCadenceRatio: aaplLag / 86_400_000,
        jobs: 1,
        withoutCursor: 0,
      },
      openGaps: 1,
    });
    const kraken = byVenue.kraken!;
    expect(kraken.freeze?.cause).toBe('budget');
    expect(kraken.freeze?.remainingMs).toBeGreaterThan(25_000);
    expect(kraken.freeze?.remainingMs).toBeLessThanOrEqual(30_000);
    expect(kraken.freeze?.untilMs).toBe(now + kraken.freeze!.remainingMs);
    expect(kraken).toMatchObject({ budget: { used: 0, limit: 10, remaining: 10 }, runnable: 0, blocked: 2 });
    expect(byVenue.okx).toMatchObject({ status: 'paused', freeze: null, runnable: 0, blocked: 1 });

    expect(status.spool).toEqual({ dir: fleet.spoolDir, segments: 1, bytes: spoolBytes, oldestReceivedAtMs: now - 5000, dirs: 1 });
    expect(status.totals).toEqual({ runnable: 7, blocked: 8, waiting: 15, active: 0, delayed: 0, failed: 0, openGaps: 2, frozenVenues: 2 });
  });

  it("counts each connector's jobs, its enabled jobs and when one last ran", async () => {
    await seed();
    const { store, now } = fleet;
    // A live unit of binance ends ok and one of polygon fails: both are runs (the store's clock is fixed at `now`).
    await store.jobs.complete('binance:ETH/USDT:1m:ohlcv', { nextRunAt: now + 60_000 });
    await store.jobs.fail('polygon:AAPL:1d:ohlcv', 'HTTP 503 from venue', now + 60_000);
    const status = await collectFleetStatus({ ...fleet, now });
    const jobs = Object.fromEntries(status.venues.map((v) => [v.venue, [v.jobsCount, v.activeJobsCount, v.lastJobRunAt]]));
    expect(jobs).toEqual({
      binance: [3, 3, now],
      coinbase: [0, 0, null],
      kraken: [0, 0, null],
      okx: [0, 0, null],
      // MSFT is disabled: a job, not an active one.
      polygon: [2, 1, now],
    });
  });

  it('reads the AIMD concurrency the fleet settled on, and no spool without a spool dir', async () => {
    const { store, control, now } = fleet;
    await store.connectors.upsert(connector('binance', 1200, { maxInflight: 6 }));
    // One 429 halves the fleet-wide concurrency: 6 -> 3.
    const limits = { ...DEFAULT_AIMD_LIMITS, min: 1, max: 6, halveCooldownMs: 0 };
    control.configure('binance', limits);
    await control.onRateLimited('binance', 0, '429');
    const status = await collectFleetStatus({ store, queues: fleet.queues, control, now });
    expect(status.venues[0]).toMatchObject({
      venue: 'binance',
      concurrency: { current: 3, min: 1, max: 6 },
      liveWorkers: null,
      freeze: null,
      globalConcurrency: null,
    });
    expect(status.spool).toBeNull();
  });

  it('sets the autoscaling and fleet gauges from a snapshot, dropping venues that went away', async () => {
    await seed();
    const registry = createRegistry('dashboard', { defaultMetrics: false });
    const metrics = new FleetStatusMetrics(registry);
    metrics.apply(await collectFleetStatus({ ...fleet, now: fleet.now }));
    const values = async (name: string): Promise<Array<{ labels: Record<string, unknown>; value: number }>> =>
      (await registry.getSingleMetric(name)!.get()).values.map((v) => ({ labels: v.labels, value: v.value }));

    expect(await values('tickfleet_venue_runnable_units')).toEqual(
      expect.arrayContaining([
        { labels: { venue: 'binance' }, value: 5 },
        { labels: { venue: 'coinbase' }, value: 2 },
        { labels: { venue: 'polygon' }, value: 0 },
      ]),
    );
    expect(await values('tickfleet_venue_budget_blocked_units')).toContainEqual({ labels: { venue: 'polygon' }, value: 3 });
    expect(await values('tickfleet_queue_units')).toContainEqual({ labels: { venue: 'binance', state: 'prioritized' }, value: 5 });
    /** The label sets of the series at 1, by venue. */
    const ones = (series: Array<{ labels: Record<string, unknown>; value: number }>) =>
      series
        .filter((v) => v.value === 1)
        .map((v) => v.labels)
        .sort((a, b) => String(a.venue).localeCompare(String(b.venue)));
    const frozen = await values('tickfleet_venue_frozen');
    expect(ones(frozen)).toEqual([
      { venue: 'kraken', cause: 'budget' },
      { venue: 'polygon', cause: '418' },
    ]);
    expect(frozen).toHaveLength(5 * 4);
    const health = await values('tickfleet_venue_health');
    expect(health).toHaveLength(5 * 7);
    expect(ones(health)).toEqual([
      { venue: 'binance', state: 'idle' },
      { venue: 'coinbase', state: 'degraded' },
      { venue: 'kraken', state: 'frozen' },
      { venue: 'okx', state: 'paused' },
      { venue: 'polygon', state: 'frozen' },
    ]);
    expect(await values('tickfleet_gaps_open')).toContainEqual({ labels: { venue: 'binance' }, value: 1 });
    expect(await values('tickfleet_live_workers')).toContainEqual({ labels: { venue: 'binance' }, value: 2 });
    const lag = await values('tickfleet_job_cursor_lag_max_seconds');
    expect(lag.map((v) => v.labels.venue).sort()).toEqual(['binance', 'polygon']);
    // binance's BTC job is 2 candles and 10 s behind its 1m cadence.
    expect(await values('tickfleet_job_cursor_lag_cadence_ratio_max')).toContainEqual({ labels: { venue: 'binance' }, value: 130_000 / 60_000 });

    metrics.apply({
      atMs: fleet.now,
      venues: [],
      spool: null,
      streams: null,
      bookLoops: null,
      totals: { runnable: 0, blocked: 0, waiting: 0, active: 0, delayed: 0, failed: 0, openGaps: 0, frozenVenues: 0 },
    });
    expect(await values('tickfleet_venue_runnable_units')).toEqual([]);
    const text = await registry.metrics();
    expect(text).toContain('# TYPE tickfleet_venue_runnable_units gauge');
  });
});
