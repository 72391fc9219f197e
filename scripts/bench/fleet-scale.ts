/**
 * Fleet scale benchmark: 10 000 candle jobs against a fast emulated Binance (no latency, no
 * limit in the way); units/s end to end (scheduler claim + enqueue -> worker -> venue -> SQLite
 * sink -> cursor and job completion) with 1, 2 and 4 worker processes. Baseline measured in the
 * same run: the scheduler alone claiming and enqueueing the same 10 000 units (no workers), the
 * ceiling any number of workers shares.
 *
 *   node --import tsx scripts/bench/fleet-scale.ts [--jobs 10000] [--workers 1,2,4] [--inflight 128] [--rounds 3] [--warm 10000] [--budget store|redis] [--cpu-prof DIR] [--windows FILE] [--node-options FLAGS] [--sched other,batch,pin]
 *
 * Each measurement uses a fresh fleet (redis-server, emulations with one instrument per job,
 * temp SQLite store and sink). Each job starts 5 minutes back, so a unit is one klines request.
 * Rounds are interleaved (every worker count once per round); the table shows medians. Per run it
 * also reports where the CPU went over the measured window: the machine's busy share (from
 * /proc/stat, over all cores), the worker processes, the scheduler, redis-server (INFO cpu) and this process (the
 * emulations and the benchmark's own polling), so the saturated resource is visible.
 *
 * The fleet is warmed up first: every worker process runs `--warm N` (default 10,000) units of
 * other jobs through the same scheduler before the measured pass, so each process meets the pass
 * as warm as any other, whatever the fleet's size (V8 optimises per process: a process that ran a
 * quarter of the warm-up still compiles and runs slower code, see docs/benchmarks/fleet.md). Every
 * run seeds the same N x (largest process count) warm-up jobs, so every fleet's store and emulation
 * hold the same rows: a fleet of w processes runs N x w of them, the rest wait a day, and all are
 * disabled before the pass. `--warm 0` measures cold processes, started just before the window.
 *
 * `--cpu-prof DIR` profiles every worker process over the measured window (the preload of
 * hot-path.ts, fixtures/hot-path-cpu-prof.ts): DIR/w<count>[-<sched>]-r<round>-worker-<i>.cpuprofile
 * (the `--sched` variant named unless `other`).
 *
 * `--sched other,batch,pin` runs every worker count once per listed variant each round
 * (interleaved): `other`, the default; `batch` puts every thread of each worker under SCHED_BATCH
 * (`chrt -a -b -p 0`), which the kernel does not let preempt other tasks on waking; `pin` pins
 * worker i to core i modulo the cores (`taskset -a -p -c`). Both are applied at start and again
 * before the window (threads started since).
 *
 * `--windows FILE` appends one JSON line per measured run: the worker processes' pids and the
 * window in CLOCK_MONOTONIC seconds, for scripts/bench/perf-split.ts to read a system-wide
 * `perf record -k CLOCK_MONOTONIC` of the whole benchmark (docs/benchmarks/fleet.md).
 */
import { createRedisConnection, VenueQueues } from '@tickfleet/queues';
import { isRunning, waitFor } from '@tickfleet/testkit';
import { FleetHarness, type FleetProcess } from '@tickfleet/testkit/fleet';
import { execFileSync } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { join } from 'node:path';
import { intArg, pathArg, positiveIntArg, stringArg } from './fixtures/args.js';
import { workerEnv } from './fixtures/worker-env.js';
import { cpuPressureUs, machineCpuMs, procCpuMs, procMinorFaults, procSwitches } from './fixtures/proc-cpu.js';
import { callsPerUnit, redisCalls, redisCpuMs } from './fixtures/redis-stats.js';

const args = process.argv.slice(2);
const JOBS = positiveIntArg(args, 'jobs', 10_000);
const WORKERS = (stringArg(args, 'workers') ?? '1,2,4').split(',').map(Number);
if (!WORKERS.every((w) => Number.isInteger(w) && w >= 1))
  throw new Error(`--workers: positive integers separated by commas, got ${JSON.stringify(stringArg(args, 'workers'))}`);
/** Fleet-wide in-flight cap of the venue (also each worker's local concurrency). */
const INFLIGHT = positiveIntArg(args, 'inflight', 128);
const ROUNDS = positiveIntArg(args, 'rounds', 3);
/** Warm-up jobs per worker process. */
const WARM = intArg(args, 'warm', 10_000, 0);
/** `--budget redis`: the venue budget in the fleet's Redis (TICKFLEET_BUDGET_URL) instead of the SQLite state store. */
const BUDGET = stringArg(args, 'budget') ?? 'store';
if (BUDGET !== 'store' && BUDGET !== 'redis') throw new Error(`--budget must be store or redis, not ${BUDGET}`);
const PROFILE_DIR = pathArg(args, 'cpu-prof');
/** `--node-options '--v8-pool-size=1'`: Node/V8 flags of the worker processes (their NODE_OPTIONS). */
const WORKER_NODE_OPTIONS = stringArg(args, 'node-options') ?? '';
const WINDOWS = pathArg(args, 'windows');
const SCHEDS = (stringArg(args, 'sched') ?? 'other').split(',');
if (!SCHEDS.every((x) => x === 'other' || x === 'batch' || x === 'pin')) throw new Error(`--sched: other, batch and/or pin, got ${stringArg(args, 'sched')}`);
/**
 * Applies a `--sched` variant to every thread of the worker processes: `batch` runs them under
 * SCHED_BATCH (`chrt -a -b -p 0`: no wakeup preemption of others), `pin` pins worker i to core i
 * modulo the machine's cores (`taskset -a -p -c`); `other` leaves them as started.
 */
function applySched(procs: FleetProcess[], sched: string): void {
  procs.forEach((p, i) => {
    const pid = String(p.child.pid);
    const stdio: ['ignore', 'ignore', 'pipe'] = ['ignore', 'ignore', 'pipe'];
    if (sched === 'batch') execFileSync('chrt', ['-a', '-b', '-p', '0', pid], { stdio });
    if (sched === 'pin') execFileSync('taskset', ['-a', '-p', '-c', String(i % availableParallelism()), pid], { stdio });
  });
}
if (PROFILE_DIR) mkdirSync(PROFILE_DIR, { recursive: true });

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
  /** Redis commands per unit over the window (every client: workers, scheduler, the benchmark's polling). */
  redisCallsPerUnit: number;
  /** The five most called commands, per unit. */
  redisTop: string;
  /** Mean of the queue's active units, sampled every 250 ms while units were still waiting. */
  inflight: number;
  /** Share of the window in which some runnable task waited for a core (PSI cpu `some`; NaN without PSI). */
  cpuPressure: number;
  /** The worker processes' CPU per unit, ms (their CPU from the window's start to its measurement, over the units). */
  workerCpuPerUnitMs: number;
  /** The worker processes' context switches per unit, voluntary (waits) and involuntary (preempted). */
  switchesPerUnit: { voluntary: number; involuntary: number };
  /** The worker processes' minor page faults per unit (/proc/<pid>/stat). */
  faultsPerUnit: number;
}

/** Measures CPU from `start()` to `stop()` for the given processes. */
function cpuWindow(pids: () => { workers: Array<number | undefined>; scheduler: number | undefined }, redis0: number) {
  const m0 = machineCpuMs();
  const b0 = process.cpuUsage();
  const t0 = performance.now();
  const p0 = pids();
  const w0 = p0.workers.map(procCpuMs);
  const s0 = p0.workers.map(procSwitches);
  const f0 = p0.workers.map(procMinorFaults);
  const psi0 = cpuPressureUs();
  return (units: number, seconds: number, schedulerCpu0: number, redis1: number): Omit<Run, 'inflight' | 'redisCallsPerUnit' | 'redisTop'> => {
    const elapsed = (performance.now() - t0) / 1000;
    const psi = (cpuPressureUs() - psi0) / 1e6 / elapsed;
    const m1 = machineCpuMs();
    const p1 = pids();
    const b = process.cpuUsage(b0);
    const workers = p1.workers.reduce<number>((sum, pid, i) => sum + (procCpuMs(pid) - (w0[i] ?? 0)), 0);
    const switches = { voluntary: 0, involuntary: 0 };
    let faults = 0;
    for (const [i, pid] of p1.workers.entries()) {
      faults += procMinorFaults(pid) - (f0[i] ?? 0);
      const s = procSwitches(pid);
      switches.voluntary += s.voluntary - (s0[i]?.voluntary ?? 0);
      switches.involuntary += s.involuntary - (s0[i]?.involuntary ?? 0);
    }
    return {
      unitsPerSec: units / seconds,
      cpuPressure: psi,
      workerCpuPerUnitMs: workers / units,
      switchesPerUnit: { voluntary: switches.voluntary / units, involuntary: switches.involuntary / units },
      faultsPerUnit: faults / units,
      machineBusy: (m1.busy - m0.busy) / (m1.total - m0.total),
      cores: m1.cores,
      workers: workers / 1000 / elapsed,
      scheduler: (procCpuMs(p1.scheduler) - schedulerCpu0) / 1000 / elapsed,
      bench: (b.user + b.system) / 1e6 / elapsed,
      redis: (redis1 - redis0) / 1000 / elapsed,
    };
  };
}

const symbols = Array.from({ length: JOBS }, (_, i) => `T${String(i).padStart(5, '0')}/USDT`);
/** Warm-up jobs of every run: the same count whatever the run's number of processes. */
const WARM_JOBS = WARM * Math.max(...WORKERS);
const warmSymbols = Array.from({ length: WARM_JOBS }, (_, i) => `W${String(i).padStart(6, '0')}/USDT`);

/** Upserts the connector and one due job per symbol; returns the job ids. */
async function seed(fleet: FleetHarness, of: string[], nextRunAt = Date.now()): Promise<string[]> {
  return fleet.withStore(async (store) => {
    await store.connectors.upsert({
      venue: 'binance',
      baseUrl: fleet.mock.baseUrl('binance'),
      // An hour's window: its boundary guard (the last second of a window, in which no request is
      // sent: boundaryGuardMs) falls in a measured pass only if one spans the top of an hour. With
      // 10 s windows it took 0.5 s of every 10 s, so about half the 5 s passes lost a tenth of theirs.
      rateLimit: { limit: 1_000_000_000, periodMs: 3_600_000 },
      maxInflight: INFLIGHT,
    });
    // Hourly candles: a job that ran is next due at the next hour, not within the measured window
    // (1m jobs came due again at the next minute boundary, adding up to 10,000 units to a window).
    const since = Math.floor(Date.now() / 3_600_000) * 3_600_000 - 5 * 3_600_000;
    const ids: string[] = [];
    for (const symbol of of) ids.push((await store.jobs.upsert({ venue: 'binance', type: 'ohlcv', symbol, timeframe: '1h', since, nextRunAt })).id);
    return ids;
  });
}

/** How long every unit left may sit delayed, none waiting or running, before the run is reported stalled. */
const STALL_MS = 60_000;

/**
 * Waits until the queue is drained and every job of `ids` has run once; returns when the last of
 * them completed (its `lastSuccessAt`, epoch ms), so the time this poll takes to notice is not
 * counted. Polling must not compete with what it measures: the queue's counters are one cheap
 * Redis call; the store's full job list is read only once the queue looks drained. Fails at once,
 * with its output, when a worker process has exited (one that cannot start: a flag Node refuses in
 * NODE_OPTIONS, say) instead of waiting out the timeout for units nobody takes, and after
 * `STALL_MS` in which every unit left sat delayed, naming the venue budget's state (a fallback after
 * a slow store call once parked a run until the top of the hour: docs/benchmarks/fleet.md).
 */
async function allRan(fleet: FleetHarness, queues: VenueQueues, workers: FleetProcess[], ids: string[], active: number[] = []): Promise<number> {
  const wanted = new Set(ids);
  let lastMs = 0;
  let dead: FleetProcess | undefined;
  /** Since when every unit left has been delayed, none waiting or running (the budget or a freeze holds them). */
  let delayedOnlySince: number | undefined;
  let stalled = 0;
  await waitFor(
    async () => {
      dead = workers.find((p) => !isRunning(p.child));
      if (dead) return true;
      const c = await queues.counts('binance');
      if (c.waiting + c.prioritized > 0) active.push(c.active);
      delayedOnlySince = c.delayed > 0 && c.waiting + c.prioritized + c.active === 0 ? (delayedOnlySince ?? Date.now()) : undefined;
      if (delayedOnlySince !== undefined && Date.now() - delayedOnlySince > STALL_MS) {
        stalled = c.delayed;
        return true;
      }
      if (c.waiting + c.prioritized + c.delayed + c.active > 0) return false;
      const ran = (await fleet.withStore((store) => store.jobs.list({ venue: 'binance' }))).filter((j) => wanted.has(j.id) && j.stats.runs >= 1);
      // A loop, not Math.max(...spread): a spread of 100,000+ values overflows the stack.
      lastMs = ran.reduce((max, j) => Math.max(max, j.stats.lastSuccessAt ?? 0), 0);
      return ran.length === wanted.size;
    },
    `${ids.length} jobs ran once`,
    { timeoutMs: 900_000, intervalMs: 250 },
  );
  if (dead) throw fleet.ended(dead);
  if (stalled > 0) {
    const usage = await fleet.withStore((store) => store.budgets.usage('binance'));
    throw new Error(
      `the fleet stopped: ${stalled} units delayed and none waiting or running for ${STALL_MS / 1000} s; the venue budget has used ` +
        `${usage?.used ?? '?'} of ${usage?.limit ?? '?'} in the window ending ${usage ? new Date(usage.resetAtMs).toISOString() : '?'} ` +
        '(its requests alone never fill it; a worker recovering from its fallback budget after a slow store call marks the rest of the window spent: docs/reliability.md)',
    );
  }
  return lastMs;
}

/**
 * Seeds every warm-up job, runs `WARM` of them per worker process once through the workers and
 * `scheduler` (the others are due a day later), then disables them all; returns how long seeding
 * them took (the measured jobs, seeded next, take about as long).
 */
async function warmUp(fleet: FleetHarness, queues: VenueQueues, workers: FleetProcess[], scheduler: () => void): Promise<number> {
  const t0 = performance.now();
  const running = WARM * workers.length;
  const runIds = await seed(fleet, warmSymbols.slice(0, running));
  const laterIds = await seed(fleet, warmSymbols.slice(running), Date.now() + 86_400_000);
  const seedMs = performance.now() - t0;
  scheduler();
  await allRan(fleet, queues, workers, runIds);
  await fleet.withStore(async (store) => {
    for (const id of [...runIds, ...laterIds]) await store.jobs.setEnabled(id, false);
  });
  return seedMs;
}

async function run(workers: number, round: number, sched = 'other'): Promise<Run> {
  const fleet = await FleetHarness.start({
    venues: { binance: { symbols: [...symbols, ...warmSymbols], limit: { enabled: false } } },
  });
  const redis = createRedisConnection(fleet.redis.url, { blocking: false });
  const queues = new VenueQueues(redis, { prefix: fleet.prefix });
  try {
    const variant = sched === 'other' ? '' : `-${sched}`;
    const profile = (i: number): string => join(PROFILE_DIR ?? '', `w${workers}${variant}-r${round}-worker-${i}.cpuprofile`);
    const procs = Array.from({ length: workers }, (_, i) =>
      fleet.spawn(`worker-${i}`, ['worker'], {
        LOG_LEVEL: 'warn',
        ...(BUDGET === 'redis' ? { TICKFLEET_BUDGET_URL: fleet.redis.url } : {}),
        ...workerEnv(WORKER_NODE_OPTIONS, PROFILE_DIR ? profile(i) : undefined),
      }),
    );
    applySched(procs, sched);
    let scheduler: FleetProcess | undefined;
    const startScheduler = (): void => {
      scheduler = fleet.spawn('scheduler', ['scheduler'], { LOG_LEVEL: 'warn', TICKFLEET_SCHEDULER_TICK_MS: '200' });
    };
    let ids: string[];
    if (WARM > 0) {
      // Warm: the same scheduler and workers go on; the measured jobs fall due together at `dueAt`,
      // after they are all seeded, and the window starts there.
      const seedMs = await warmUp(fleet, queues, procs, startScheduler);
      const dueAt = Math.ceil(Date.now() + (2 * seedMs * JOBS) / WARM_JOBS + 3000);
      ids = await seed(fleet, symbols, dueAt);
      if (Date.now() >= dueAt) throw new Error('seeding the measured jobs took longer than planned: the window would include it');
      await new Promise((r) => setTimeout(r, dueAt - Date.now()));
    } else {
      ids = await seed(fleet, symbols);
      await new Promise((r) => setTimeout(r, 3000));
    }
    // Again before the window, for any thread a worker started while the first call ran.
    applySched(procs, sched);
    if (PROFILE_DIR) for (const p of procs) p.child.kill('SIGUSR2');
    const served0 = fleet.mock.stats().venues.binance?.requests ?? 0;
    const startedAt = Date.now();
    /** CLOCK_MONOTONIC (perf's `-k CLOCK_MONOTONIC`) minus the wall clock, in seconds. */
    const monotonicOffset = Number(process.hrtime.bigint()) / 1e9 - startedAt / 1000;
    const schedulerCpu0 = procCpuMs(scheduler?.child.pid);
    if (!scheduler) startScheduler();
    const calls0 = await redisCalls(redis);
    const done = cpuWindow(() => ({ workers: procs.map((p) => p.child.pid), scheduler: scheduler!.child.pid }), await redisCpuMs(redis));
    const active: number[] = [];
    const lastDoneAt = await allRan(fleet, queues, procs, ids, active);
    // The window ends at the last completion stored (the workers' clocks, on this machine).
    const endedAt = lastDoneAt > startedAt ? lastDoneAt : Date.now();
    const seconds = (endedAt - startedAt) / 1000;
    // Units counted by the emulation (one klines request each), not assumed: a job run twice in
    // the window would show here.
    const units = (fleet.mock.stats().venues.binance?.requests ?? 0) - served0;
    if (units !== JOBS) process.stderr.write(`note: the emulation served ${units} klines requests for ${JOBS} jobs\n`);
    const calls = callsPerUnit(calls0, await redisCalls(redis), units);
    const measured = {
      ...done(units, seconds, Number.isNaN(schedulerCpu0) ? 0 : schedulerCpu0, await redisCpuMs(redis)),
      redisCallsPerUnit: calls.total,
      redisTop: calls.top,
      inflight: active.length ? active.reduce((a, b) => a + b, 0) / active.length : NaN,
    };
    if (WINDOWS) {
      const window = {
        workers,
        sched,
        round,
        pids: procs.map((p) => p.child.pid),
        from: startedAt / 1000 + monotonicOffset,
        to: endedAt / 1000 + monotonicOffset,
        units,
      };
      appendFileSync(WINDOWS, `${JSON.stringify(window)}\n`);
    }
    if (PROFILE_DIR) {
      for (const p of procs) p.child.kill('SIGUSR2');
      for (let i = 0; i < workers; i++) await waitFor(() => existsSync(profile(i)), `profile of worker ${i}`, { timeoutMs: 30_000 });
    }
    await fleet.stopProcess(scheduler!);
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
    await seed(fleet, symbols);
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
  `fleet-scale: ${JOBS} jobs (after ${WARM} warm-up units per worker process; ${WARM_JOBS} warm-up jobs seeded in every run), workers ${WORKERS.join(',')}, cap ${INFLIGHT}, budget in ${BUDGET === 'redis' ? 'Redis' : 'the state store'}, ${ROUNDS} round(s); load average ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}\n`,
);
const baselines: number[] = [];
/** Every worker count under every `--sched` variant; the variant is named only when several are compared. */
const variants = SCHEDS.flatMap((sc) =>
  WORKERS.map((w) => ({ w, sc, key: `${w}${SCHEDS.length > 1 ? ` ${sc}` : ''}`, label: SCHEDS.length > 1 ? `, ${sc}` : '' })),
);
const runs = new Map<string, Run[]>(variants.map((v) => [v.key, []]));
for (let round = 1; round <= ROUNDS; round++) {
  const b = await schedulerOnly();
  baselines.push(b);
  process.stderr.write(`round ${round}: scheduler alone ${b.toFixed(0)} units/s\n`);
  for (const { w, sc, key } of variants) {
    const r = await run(w, round, sc);
    runs.get(key)!.push(r);
    process.stderr.write(
      `round ${round}: ${key} worker(s) ${r.unitsPerSec.toFixed(0)} units/s; CPU in cores: machine ${(r.machineBusy * r.cores).toFixed(2)} of ${r.cores}, workers ${r.workers.toFixed(2)}, scheduler ${r.scheduler.toFixed(2)}, redis-server ${r.redis.toFixed(2)}, emulation + benchmark ${r.bench.toFixed(2)}; CPU pressure ${(100 * r.cpuPressure).toFixed(0)}%; worker context switches per unit ${r.switchesPerUnit.voluntary.toFixed(2)} voluntary, ${r.switchesPerUnit.involuntary.toFixed(2)} involuntary; worker minor page faults per unit ${r.faultsPerUnit.toFixed(2)}; in flight ${r.inflight.toFixed(0)} (mean); Redis commands per unit ${r.redisCallsPerUnit.toFixed(1)} (${r.redisTop}); load ${loadavg()[0]!.toFixed(1)}\n`,
    );
  }
}
const baseline = median(baselines);
console.log(
  `| ${JOBS} jobs, cap ${INFLIGHT} in flight, median of ${ROUNDS} | units/s | ratio to scheduler-alone | machine CPU busy | CPU pressure | worker processes (cores) | worker CPU per unit (ms) | scheduler (cores) | redis-server (cores) | emulation + benchmark (cores) |`,
);
console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
console.log(`| scheduler claim + enqueue only (baseline; process start included) | ${baseline.toFixed(0)} | 1.00 | | | | | | | |`);
for (const { w, key, label } of variants) {
  const rs = runs.get(key)!;
  const m = (f: (r: Run) => number) => median(rs.map(f));
  const u = m((r) => r.unitsPerSec);
  console.log(
    `| end to end, ${w} worker process${w > 1 ? 'es' : ''}${label} | ${u.toFixed(0)} | ${(u / baseline).toFixed(2)} | ${(100 * m((r) => r.machineBusy)).toFixed(0)}% | ${(100 * m((r) => r.cpuPressure)).toFixed(0)}% | ${m((r) => r.workers).toFixed(2)} | ${m((r) => r.workerCpuPerUnitMs).toFixed(2)} | ${m((r) => r.scheduler).toFixed(2)} | ${m((r) => r.redis).toFixed(2)} | ${m((r) => r.bench).toFixed(2)} |`,
  );
}
console.log(`per round: ${JSON.stringify({ baselines, runs: Object.fromEntries(runs) })}`);
