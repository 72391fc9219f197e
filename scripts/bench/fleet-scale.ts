/**
 * Fleet scale benchmark: 10 000 candle jobs against a fast emulated Binance (no latency, no
 * limit in the way); units/s end to end (scheduler claim + enqueue -> worker -> venue -> SQLite
 * sink -> cursor and job completion) with 1, 2 and 4 worker processes. Baseline measured in the
 * same run: the scheduler alone claiming and enqueueing the same 10 000 units (no workers), the
 * ceiling any number of workers shares.
 *
 *   node --import tsx scripts/bench/fleet-scale.ts [--jobs 10000] [--workers 1,2,4] [--inflight 128] [--rounds 3]
 *
 * Each measurement uses a fresh fleet (redis-server, emulations with one instrument per job,
 * temp SQLite store and sink). Each job starts 5 minutes back, so a unit is one klines request.
 * Rounds are interleaved (every worker count once per round); the table shows medians. Per run it
 * also reports where the CPU went over the measured window: the machine's busy share (from
 * /proc/stat, over all cores), the worker processes, the scheduler, redis-server (INFO cpu) and this process (the
 * emulations and the benchmark's own polling), so the saturated resource is visible.
 */
import { createRedisConnection, type RedisClient, VenueQueues } from '@tickfleet/queues';
import { waitFor } from '@tickfleet/testkit';
import { FleetHarness } from '@tickfleet/testkit/fleet';
import { loadavg } from 'node:os';
import { machineCpuMs, procCpuMs } from './fixtures/proc-cpu.js';

const args = process.argv.slice(2);
const argOf = (name: string): string | undefined => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : undefined;
};
const JOBS = Number(argOf('jobs') ?? 10_000);
const WORKERS = (argOf('workers') ?? '1,2,4').split(',').map(Number);
/** Fleet-wide in-flight cap of the venue (also each worker's local concurrency). */
const INFLIGHT = Number(argOf('inflight') ?? 128);
const ROUNDS = Number(argOf('rounds') ?? 3);

/** One measured run: units/s and the CPU spent in the window, in cores (1.0 = one core busy throughout). */
interface Run {
  unitsPerSec: number;
  machineBusy: number;
  cores: number;
  workers: number;
  scheduler: number;
  bench: number;
  /** redis-server CPU over the window, in cores. */
  redis: number;
}

/** redis-server's CPU so far, ms (INFO cpu: the server's user + system time). */
async function redisCpuMs(redis: RedisClient): Promise<number> {
  const text = await redis.info('cpu');
  const cpu = (name: string): number => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(text)?.[1] ?? 0);
  return (cpu('used_cpu_user') + cpu('used_cpu_sys')) * 1000;
}

/** Measures CPU from `start()` to `stop()` for the given processes. */
function cpuWindow(pids: () => { workers: Array<number | undefined>; scheduler: number | undefined }, redis0: number) {
  const m0 = machineCpuMs();
  const b0 = process.cpuUsage();
  const t0 = performance.now();
  const p0 = pids();
  const w0 = p0.workers.map(procCpuMs);
  return (unitsPerSec: number, schedulerCpu0: number, redis1: number): Run => {
    const seconds = (performance.now() - t0) / 1000;
    const m1 = machineCpuMs();
    const p1 = pids();
    const b = process.cpuUsage(b0);
    const workers = p1.workers.reduce<number>((sum, pid, i) => sum + (procCpuMs(pid) - (w0[i] ?? 0)), 0);
    return {
      unitsPerSec,
      machineBusy: (m1.busy - m0.busy) / (m1.total - m0.total),
      cores: m1.cores,
      workers: workers / 1000 / seconds,
      scheduler: (procCpuMs(p1.scheduler) - schedulerCpu0) / 1000 / seconds,
      bench: (b.user + b.system) / 1e6 / seconds,
      redis: (redis1 - redis0) / 1000 / seconds,
    };
  };
}

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

async function run(workers: number): Promise<Run> {
  const fleet = await FleetHarness.start({ venues: { binance: { symbols, limit: { enabled: false } } } });
  const redis = createRedisConnection(fleet.redis.url, { blocking: false });
  const queues = new VenueQueues(redis, { prefix: fleet.prefix });
  try {
    await seed(fleet);
    const procs = Array.from({ length: workers }, (_, i) => fleet.spawn(`worker-${i}`, ['worker'], { LOG_LEVEL: 'warn' }));
    await new Promise((r) => setTimeout(r, 3000));
    const started = performance.now();
    const scheduler = fleet.spawn('scheduler', ['scheduler'], { LOG_LEVEL: 'warn', TICKFLEET_SCHEDULER_TICK_MS: '200' });
    const done = cpuWindow(() => ({ workers: procs.map((p) => p.child.pid), scheduler: scheduler.child.pid }), await redisCpuMs(redis));
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
    const measured = done(JOBS / seconds, 0, await redisCpuMs(redis));
    await fleet.stopProcess(scheduler);
    await Promise.all(procs.map((p) => fleet.stopProcess(p)));
    return measured;
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

const median = (xs: number[]): number => {
  const v = [...xs].sort((a, b) => a - b);
  return v.length % 2 ? v[(v.length - 1) / 2]! : (v[v.length / 2 - 1]! + v[v.length / 2]!) / 2;
};
process.stderr.write(
  `fleet-scale: ${JOBS} jobs, workers ${WORKERS.join(',')}, cap ${INFLIGHT}, ${ROUNDS} round(s); load average ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}\n`,
);
const baselines: number[] = [];
const runs = new Map<number, Run[]>(WORKERS.map((w) => [w, []]));
for (let round = 1; round <= ROUNDS; round++) {
  const b = await schedulerOnly();
  baselines.push(b);
  process.stderr.write(`round ${round}: scheduler alone ${b.toFixed(0)} units/s\n`);
  for (const w of WORKERS) {
    const r = await run(w);
    runs.get(w)!.push(r);
    process.stderr.write(
      `round ${round}: ${w} worker(s) ${r.unitsPerSec.toFixed(0)} units/s; CPU in cores: machine ${(r.machineBusy * r.cores).toFixed(2)} of ${r.cores}, workers ${r.workers.toFixed(2)}, scheduler ${r.scheduler.toFixed(2)}, redis-server ${r.redis.toFixed(2)}, emulation + benchmark ${r.bench.toFixed(2)}; load ${loadavg()[0]!.toFixed(1)}\n`,
    );
  }
}
const baseline = median(baselines);
console.log(
  `| ${JOBS} jobs, cap ${INFLIGHT} in flight, median of ${ROUNDS} | units/s | ratio to scheduler-alone | machine CPU busy | worker processes (cores) | scheduler (cores) | redis-server (cores) | emulation + benchmark (cores) |`,
);
console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
console.log(`| scheduler claim + enqueue only (baseline; process start included) | ${baseline.toFixed(0)} | 1.00 | | | | | |`);
for (const w of WORKERS) {
  const rs = runs.get(w)!;
  const m = (f: (r: Run) => number) => median(rs.map(f));
  const u = m((r) => r.unitsPerSec);
  console.log(
    `| end to end, ${w} worker process${w > 1 ? 'es' : ''} | ${u.toFixed(0)} | ${(u / baseline).toFixed(2)} | ${(100 * m((r) => r.machineBusy)).toFixed(0)}% | ${m((r) => r.workers).toFixed(2)} | ${m((r) => r.scheduler).toFixed(2)} | ${m((r) => r.redis).toFixed(2)} | ${m((r) => r.bench).toFixed(2)} |`,
  );
}
console.log(`per round: ${JSON.stringify({ baselines, runs: Object.fromEntries(runs) })}`);
