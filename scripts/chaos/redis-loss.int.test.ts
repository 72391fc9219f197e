import { aimdLimitsFor, FleetVenueControl } from '@tickfleet/budget';
import { alignDown } from '@tickfleet/core';
import { createRedisConnection, VenueQueues } from '@tickfleet/queues';
import { waitFor } from '@tickfleet/testkit';
import { FleetHarness, type CandleReport, type FleetProcess } from '@tickfleet/testkit/fleet';

const DAY = 86_400_000;
const MIN = 60_000;
const CAP = 2;
const BACKFILL_SYMBOLS = ['BTC/USDT', 'ETH/USDT'];
const LIVE_SYMBOL = 'SOL/USDT';
const LIVE_JOB = `binance:${LIVE_SYMBOL}:1m:ohlcv`;
const REDIS_DOWN_MS = 10_000;

/** One result line per experiment, for docs/reliability.md (printed at the end of the run). */
const results: string[] = [];

/**
 * Chaos: the fleet's redis-server is SIGKILLed in the middle of two backfills and a live job, and
 * started again on the same port 10 s later — once with an append-only file, once without
 * persistence. Workers and the scheduler reconnect by themselves. With the AOF nothing is lost
 * (no unit has to be re-created); without it every queued unit and the queue's global concurrency
 * are gone, and the fleet repairs itself from the store (the scheduler re-creates the owed chunks'
 * units and the concurrency; the live job is claimed again when its lease ends), with `backfill
 * --gaps` covering anything the live job lost. Each run ends comparing the sink with the
 * emulation's `expectedCandles` and its `/_mock/stats` counters.
 */
describe('chaos: Redis SIGKILL mid-backfill, restarted on the same port after 10 s', () => {
  afterAll(() => {
    if (results.length) process.stdout.write(`\n${results.sort().join('\n')}\n`);
  });

  // The two runs share nothing (each its own redis-server, emulation, store and sink) and mostly
  // wait (1.5 s venue latency, 10 s without Redis), so they run side by side: the file takes about
  // as long as one of them.
  for (const aof of [true, false]) {
    it.concurrent(
      `${aof ? 'with AOF: nothing is lost' : 'without persistence: the loss is detected and repaired'}`,
      async () => {
        const fleet = await FleetHarness.start({ venues: { binance: { latencyMs: 1500 } } }, { restartableRedis: { aof } });
        const started = Date.now();
        try {
          await runExperiment(fleet, aof, started);
        } finally {
          await fleet.stop();
        }
      },
      240_000,
    );
  }
});

async function runExperiment(fleet: FleetHarness, aof: boolean, started: number): Promise<void> {
  await fleet.upsertConnector('binance', '--limit', '600', '--period', '10s', '--max-inflight', String(CAP));
  const to = Math.floor(Date.now() / DAY) * DAY - DAY;
  const from = to - 8 * DAY;
  const liveSince = alignDown(Date.now() - 3 * 3_600_000, '1m');
  await fleet.ok('jobs', 'add', 'binance', 'ohlcv', LIVE_SYMBOL, '--timeframe', '1m', '--since', new Date(liveSince).toISOString());

  const scheduler = fleet.spawnScheduler();
  const workers: FleetProcess[] = [fleet.spawn('worker-1', ['worker']), fleet.spawn('worker-2', ['worker'])];
  await fleet.ready(scheduler, 'scheduler started');
  for (const w of workers) await fleet.ready(w);

  const backfillIds = await Promise.all(
    BACKFILL_SYMBOLS.map(async (s) => (JSON.parse(await fleet.backfill('binance', s, '1m', from, to, '--json')) as { id: string }).id),
  );
  const progress = (): Promise<{ done: number; total: number; statuses: string[] }> =>
    fleet.withStore(async (store) => {
      const all = await Promise.all(backfillIds.map((id) => store.backfills.get(id)));
      return {
        done: all.reduce((n, b) => n + (b?.unitsDone ?? 0), 0),
        total: all.reduce((n, b) => n + (b?.unitsTotal ?? 0), 0),
        statuses: all.map((b) => b?.status ?? 'gone'),
      };
    });

  // Mid-backfill: a quarter of the chunks stored, most still queued.
  await waitFor(
    async () => {
      const p = await progress();
      return p.done >= p.total / 4;
    },
    'a quarter of the backfill chunks done',
    { timeoutMs: 90_000, intervalMs: 200 },
  );
  const atKill = await progress();
  expect(atKill.done).toBeLessThan(atKill.total);
  await fleet.killRedis();
  await new Promise((r) => setTimeout(r, REDIS_DOWN_MS));
  await fleet.startRedisAgain();
  const restartedAt = Date.now();

  // Right after the restart the store tells the truth: not done, and never more than was stored.
  const afterRestart = await progress();
  for (const status of afterRestart.statuses) expect(['pending', 'running']).toContain(status);
  expect(afterRestart.done).toBeGreaterThanOrEqual(atKill.done);
  expect(afterRestart.done).toBeLessThan(afterRestart.total);

  await waitFor(async () => (await progress()).statuses.every((s) => s === 'done'), 'every backfill done after the restart', {
    timeoutMs: 120_000,
    intervalMs: 500,
  });
  const recoveredMs = Date.now() - restartedAt;

  // The live job catches up; whatever it lost before its first stored candle or between candles is
  // owed and collected by `backfill --gaps`.
  const gapFill = await fleet.settleLiveJob(LIVE_JOB);

  // Both roles reconnected on their own: still the same processes.
  for (const p of [scheduler, ...workers])
    expect({ name: p.name, exit: p.child.exitCode, signal: p.child.signalCode }).toEqual({ name: p.name, exit: null, signal: null });

  const reports: Record<string, CandleReport> = {};
  for (const s of BACKFILL_SYMBOLS) reports[s] = await fleet.candleReport('binance', s, '1m', from, to);
  const liveJob = await fleet.withStore((store) => store.jobs.get(LIVE_JOB));
  const live = await fleet.candleReport('binance', LIVE_SYMBOL, '1m', liveSince, liveJob!.cursor! + MIN);
  const stats = await fleet.mockStats('binance');
  const connection = createRedisConnection(fleet.redis.url, { blocking: false });
  const queues = new VenueQueues(connection, { prefix: fleet.prefix });
  const concurrency = await queues.globalConcurrency('binance');
  // The fleet-wide AIMD value (it may have lowered the cap: the emulation answers in 1.5 s).
  const control = new FleetVenueControl(connection, { prefix: fleet.prefix });
  const connector = await fleet.withStore((store) => store.connectors.get('binance'));
  control.configure('binance', aimdLimitsFor(connector!));
  const aimd = await control.concurrency('binance');
  await queues.close();
  connection.disconnect();
  const repairs = [...scheduler.output().matchAll(/"recreatedUnits":(\d+)/g)].map((m) => Number(m[1]));
  const recreated = repairs.reduce((a, b) => a + b, 0);

  for (const s of BACKFILL_SYMBOLS) expect(reports[s]).toMatchObject({ expected: 8 * 1440, stored: 8 * 1440, missing: 0, duplicates: 0, unexpected: 0 });
  expect(live).toMatchObject({ missing: 0, duplicates: 0, unexpected: 0 });
  expect(liveJob!.cursor).toBe(live.newest);
  expect(stats.overLimitRequests).toBe(0);
  expect(concurrency).toBe(Math.min(aimd, CAP));
  if (aof) {
    // Everything queued survived: the scheduler never had to re-create a unit.
    expect(recreated).toBe(0);
  } else {
    // The queued units were lost and re-created from the store.
    expect(recreated).toBeGreaterThan(0);
  }

  const total = BACKFILL_SYMBOLS.length * 8 * 1440;
  results.push(
    `redis-loss ${aof ? 'AOF' : 'no-persistence'}: killed at ${atKill.done}/${atKill.total} chunks, down ${REDIS_DOWN_MS / 1000} s; ` +
      `backfills done ${Math.round(recoveredMs / 1000)} s after restart; units re-created by the scheduler ${recreated}; ` +
      `gap backfill ${gapFill ? 'ran' : 'not needed'}; stored ${total + live.stored}/${total + live.expected} candles (missing 0, duplicates 0); ` +
      `over-limit ${stats.overLimitRequests} of ${stats.requests} requests; global concurrency ${concurrency} (AIMD ${aimd}, cap ${CAP}); live cursor = newest stored; ` +
      `wall ${Math.round((Date.now() - started) / 1000)} s`,
  );

  for (const w of workers) await fleet.stopCleanly(w);
  await fleet.stopCleanly(scheduler);
}
