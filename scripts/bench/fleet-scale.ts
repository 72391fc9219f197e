/**
 * Fleet scale benchmark: 10 000 candle jobs against a fast emulated Binance (no latency, no
 * limit in the way); units/s end to end (scheduler claim + enqueue -> worker -> venue -> SQLite
 * sink -> cursor and job completion) with 1, 2 and 4 worker processes. Baseline measured in the
 * same run: the scheduler alone claiming and enqueueing the same 10 000 units (no workers), the
 * ceiling any number of workers shares.
 *
 *   node --import tsx scripts/bench/fleet-scale.ts [--jobs 10000] [--workers 1,2,4] [--inflight 128]
 *
 * Each measurement uses a fresh fleet (redis-server, emulations with one instrument per job,
 * temp SQLite store and sink). Each job starts 5 minutes back, so a unit is one klines request.
 */
import { createRedisConnection, VenueQueues } from '@tickfleet/queues';
import { waitFor } from '@tickfleet/testkit';
import { FleetHarness } from '@tickfleet/testkit/fleet';

const args = process.argv.slice(2);
const argOf = (name: string): string | undefined => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : undefined;
};
const JOBS = Number(argOf('jobs') ?? 10_000);
const WORKERS = (argOf('workers') ?? '1,2,4').split(',').map(Number);
/** Fleet-wide in-flight cap of the venue (also each worker's local concurrency). */
const INFLIGHT = Number(argOf('inflight') ?? 128);

const symbols = Array.from({ length: JOBS }, (_, i) => `T${String(i).padStart(5, '0')}/USDT`);

async function seed(fleet: FleetHarness): Promise<void> {
  await fleet.withStore(async (store) => {
    await store.connectors.upsert({
      venue: 'binance',
      baseUrl: fleet.mock.baseUrl('binance'),
      rateLimit: { limit: 100_000_000, periodMs: 10_000 },
      maxInflight: INFLIGHT,
    });
    const since = Math.floor(Date.now() / 60_000) * 60_000 - 5 * 60_000;
    for (const symbol of symbols) await store.jobs.upsert({ venue: 'binance', type: 'ohlcv', symbol, timeframe: '1m', since, nextRunAt: 0 });
  });
}

async function run(workers: number): Promise<number> {
  const fleet = await FleetHarness.start({ venues: { binance: { symbols, limit: { enabled: false } } } });
  const redis = createRedisConnection(fleet.redis.url, { blocking: false });
  const queues = new VenueQueues(redis, { prefix: fleet.prefix });
  try {
    await seed(fleet);
    const procs = Array.from({ length: workers }, (_, i) => fleet.spawn(`worker-${i}`, ['worker'], { LOG_LEVEL: 'warn' }));
    await new Promise((r) => setTimeout(r, 3000));
    const started = performance.now();
    const scheduler = fleet.spawn('scheduler', ['scheduler'], { LOG_LEVEL: 'warn', TICKFLEET_SCHEDULER_TICK_MS: '200' });
    // Polling must not compete with what it measures: the queue's counters are one cheap Redis
    // call; the store's full job list (10,000 rows) is read only once the queue looks drained.
    await waitFor(
      async () => {
        const c = await queues.counts('binance');
        if (c.waiting + c.prioritized + c.delayed + c.active > 0) return false;
        return fleet.withStore(async (store) => (await store.jobs.list({ venue: 'binance' })).every((j) => j.stats.runs >= 1));
      },
      'every job ran once',
      { timeoutMs: 900_000, intervalMs: 250 },
    );
    const seconds = (performance.now() - started) / 1000;
    await fleet.stopProcess(scheduler);
    await Promise.all(procs.map((p) => fleet.stopProcess(p)));
    return JOBS / seconds;
  } finally {
    await queues.close();
    redis.disconnect();
    await fleet.stop();
  }
}

async function schedulerOnly(): Promise<number> {
  const fleet = await FleetHarness.start({ venues: { binance: { symbols } } });
  const redis = createRedisConnection(fleet.redis.url, { blocking: false });
  const queues = new VenueQueues(redis, { prefix: fleet.prefix });
  try {
    await seed(fleet);
    const started = performance.now();
    const scheduler = fleet.spawn('scheduler', ['scheduler'], { LOG_LEVEL: 'warn', TICKFLEET_SCHEDULER_TICK_MS: '200' });
    await waitFor(
      async () => {
        const c = await queues.counts('binance');
        return c.waiting + c.prioritized >= JOBS;
      },
      'all units enqueued',
      { timeoutMs: 300_000, intervalMs: 100 },
    );
    const seconds = (performance.now() - started) / 1000;
    await fleet.stopProcess(scheduler);
    return JOBS / seconds;
  } finally {
    await queues.close();
    redis.disconnect();
    await fleet.stop();
  }
}

const baseline = await schedulerOnly();
process.stderr.write(`scheduler alone: ${baseline.toFixed(0)} units/s\n`);
const rows: Array<[string, number]> = [];
for (const w of WORKERS) {
  const r = await run(w);
  process.stderr.write(`${w} worker(s): ${r.toFixed(0)} units/s\n`);
  rows.push([`${w} worker process${w > 1 ? 'es' : ''}`, r]);
}
console.log(`| ${JOBS} jobs | units/s | ratio to scheduler-alone |`);
console.log('| --- | ---: | ---: |');
console.log(`| scheduler claim + enqueue only (baseline; process start included) | ${baseline.toFixed(0)} | 1.00 |`);
for (const [name, r] of rows) console.log(`| end to end, ${name} | ${r.toFixed(0)} | ${(r / baseline).toFixed(2)} |`);
