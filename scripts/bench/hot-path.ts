/**
 * Worker hot-path benchmark (issue 12): units/s of one tickfleet worker process against a minimal
 * hand-made BullMQ worker doing the same units, in one run with interleaved rounds (baseline,
 * tickfleet, baseline, tickfleet, ...). A unit is one 1,000-candle Binance klines page from the
 * venue emulation (limiter off, no latency unless --latency) stored in SQLite.
 *
 *   node --import tsx scripts/bench/hot-path.ts [--units 200] [--rounds 3] [--latency 0] [--quick] [--cpu-prof DIR] [--scenarios single,many,live] [--live-warm 2000] [--node-options FLAGS] [--processes 1,2,4] [--worker-log DIR]
 *
 * Scenarios: `single` = one backfill of N units (BTC/USDT); `many` = 8 backfills of N/8 units, one
 * per symbol; `live` = N live jobs (one symbol each, L000/USDT…) with one incremental unit each,
 * a page of the last few closed candles (`--live-candles`, default 5): the "many small live jobs"
 * case, where the per-unit work around the page (job lock, cursor, job completion) dominates. Baseline: scripts/bench/fixtures/hot-path-baseline-worker.ts in a child process
 * (bullmq Worker, concurrency 4, fetch + one better-sqlite3 transaction of INSERT OR IGNORE per
 * page), fed the same units (same QueuedUnit data and job options through VenueQueues).
 * tickfleet: a fresh FleetHarness (redis-server, emulations, temp SQLite store + sink), one
 * `tickfleet worker` with the Binance connector capped at 4 in flight and a budget that never
 * binds. Each measurement uses fresh processes; both workers are warmed up by 8 discarded units
 * (DOGE/USDT), then the queue is paused, the measured units enqueued, the queue resumed.
 *
 * `--processes 1,2,4` runs both sides as that many worker processes too (see PROCESSES).
 * Measured: units / (last unit done - first unit started). First started = earliest BullMQ
 * `processedOn` of the measured units. Last done: baseline = latest `finishedOn`; tickfleet = latest
 * `updatedAt` of the backfills once the store (polled every 500 ms) reports every one `done`.
 * Worker CPU per unit = utime+stime from /proc/<pid>/stat of the worker process between resume
 * and completion seen (both systems alike). In flight: the queue's active count every 200 ms,
 * counting the samples taken between first unit started and last unit done.
 * Each round also reports the longest stretch in which the emulation served no request, and for
 * tickfleet the worker's warnings, garbage collection per unit by kind and young generation (from
 * its /metrics), to tell a stalled round from a slow one.
 * Before the live scenario both workers also run `--live-warm` (default 2,000) live units of other
 * jobs (W0000/USDT…), so its short window (1,000 units take about a second) compares warm
 * processes, not V8 compiling each system's live path for the first time: the 8 backfill pages
 * never run that path, and tickfleet has more code on it to compile than the baseline.
 * `--live-warm 0` measures the live path cold.
 * `--cpu-prof DIR` preloads fixtures/hot-path-cpu-prof.ts into both workers and profiles exactly
 * the measured window (SIGUSR2 at resume and at completion seen): DIR/<system>-<scenario>-r<round>.cpuprofile
 * (open in Chrome DevTools or speedscope; timings of such a run include the profiler).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startMockVenue } from '@tickfleet/mock-venue';
import { createRedisConnection, queueNameFor, VenueQueues, type QueuedUnit, type RedisClient } from '@tickfleet/queues';
import { freePort, repoRoot, startRedis, tempDir, waitFor } from '@tickfleet/testkit';
import { FleetHarness, warningLines, type FleetProcess } from '@tickfleet/testkit/fleet';
import { intArg, pathArg, positiveIntArg, stringArg } from './fixtures/args.js';
import { procCpuMs } from './fixtures/proc-cpu.js';
import { callsPerUnit, redisCalls, redisCpuMs } from './fixtures/redis-stats.js';
import { workerEnv } from './fixtures/worker-env.js';

const args = process.argv.slice(2);
const QUICK = args.includes('--quick');
const UNITS = intArg(args, 'units', QUICK ? 16 : 200, 8);
const ROUNDS = positiveIntArg(args, 'rounds', QUICK ? 1 : 3);
const LATENCY_MS = intArg(args, 'latency', 0, 0);
const LIVE_CANDLES = positiveIntArg(args, 'live-candles', 5);
const LIVE_WARM = intArg(args, 'live-warm', 2000, 0);
const PROFILE_DIR = pathArg(args, 'cpu-prof');
/** `--worker-log DIR`: each tickfleet worker's whole output of a round, DIR/<round name>.log (with `--node-options "--import F"`, F calling `v8.setFlagsFromString('--trace-gc-nvp')`, one line per collection: NODE_OPTIONS refuses V8's tracing flags). */
const LOG_DIR = pathArg(args, 'worker-log');
if (LOG_DIR) mkdirSync(LOG_DIR, { recursive: true });
/** `--node-options '--max-semi-space-size=64'`: Node/V8 flags of the tickfleet worker process (its NODE_OPTIONS), to try them against the same baseline. */
const WORKER_NODE_OPTIONS = stringArg(args, 'node-options') ?? '';
/**
 * `--processes 1,2,4`: each system runs every scenario with each of these numbers of worker
 * processes (interleaved), each process holding CAP in flight (tickfleet: the venue's fleet-wide
 * cap CAP x processes), so the hand-made worker's own scaling on this machine is measured beside
 * tickfleet's. Default 1.
 */
const PROCESSES = (stringArg(args, 'processes') ?? '1').split(',').map(Number);
if (!PROCESSES.every((n) => Number.isInteger(n) && n >= 1))
  throw new Error(`--processes: positive integers separated by commas, got ${JSON.stringify(stringArg(args, 'processes'))}`);
if (PROFILE_DIR) mkdirSync(PROFILE_DIR, { recursive: true });
const CAP = 4;
const WARM_UNITS = 8;
const PAGE_MS = 1000 * 60_000;
const DAY = 86_400_000;
const TO = Math.floor(Date.now() / DAY) * DAY - DAY;
const MINUTE = 60_000;
const LIVE_SYMBOLS = Array.from({ length: UNITS }, (_, i) => `L${String(i).padStart(3, '0')}/USDT`);
const LIVE_WARM_SYMBOLS = Array.from({ length: LIVE_WARM }, (_, i) => `W${String(i).padStart(4, '0')}/USDT`);
const BACKFILL_SYMBOLS = ['BTC/USDT', 'ETH/USDT', 'BNB/USDT', 'SOL/USDT', 'XRP/USDT', 'ADA/USDT', 'AVAX/USDT', 'DOT/USDT', 'DOGE/USDT'];
const SCENARIO = {
  venues: {
    binance: {
      symbols: [...BACKFILL_SYMBOLS, ...LIVE_SYMBOLS, ...LIVE_WARM_SYMBOLS],
      limit: { enabled: false },
      ...(LATENCY_MS > 0 ? { latencyMs: LATENCY_MS } : {}),
    },
  },
};
const FIXTURES = join(fileURLToPath(new URL('.', import.meta.url)), 'fixtures');
const FIXTURE = join(FIXTURES, 'hot-path-baseline-worker.ts');

interface Series {
  symbol: string;
  fromMs: number;
  toMs: number;
}
interface Scenario {
  name: 'single' | 'many' | 'live';
  series: Series[];
  units: number;
}
const series = (symbol: string, units: number): Series => ({ symbol, fromMs: TO - units * PAGE_MS, toMs: TO });
const MANY_SYMBOLS = ['BTC/USDT', 'ETH/USDT', 'BNB/USDT', 'SOL/USDT', 'XRP/USDT', 'ADA/USDT', 'AVAX/USDT', 'DOT/USDT'];
const perSymbol = Math.max(1, Math.round(UNITS / MANY_SYMBOLS.length));
const ALL_SCENARIOS: Scenario[] = [
  { name: 'single', series: [series('BTC/USDT', UNITS)], units: UNITS },
  { name: 'many', series: MANY_SYMBOLS.map((s) => series(s, perSymbol)), units: perSymbol * MANY_SYMBOLS.length },
  // The series of a live scenario is built when it runs: its range ends at the last closed candle.
  { name: 'live', series: [], units: LIVE_SYMBOLS.length },
];
/** `--scenarios live` or `single,many`: only these (default all three). */
const ONLY = stringArg(args, 'scenarios')?.split(',');
const unknownScenario = ONLY?.find((n) => !ALL_SCENARIOS.some((sc) => sc.name === n));
if (unknownScenario !== undefined) throw new Error(`--scenarios: unknown scenario "${unknownScenario}" (single, many, live)`);
const SCENARIOS = ONLY ? ALL_SCENARIOS.filter((sc) => ONLY.includes(sc.name)) : ALL_SCENARIOS;

/**
 * The live scenario's jobs as of now: each collects from `since` (LIVE_CANDLES minutes before the
 * last candle closed 2 s ago or more, tickfleet's close delay) to that candle, in one unit.
 */
function liveSeries(symbols = LIVE_SYMBOLS): Series[] {
  const toMs = Math.floor((Date.now() - 2000) / MINUTE) * MINUTE;
  return symbols.map((symbol) => ({ symbol, fromMs: toMs - LIVE_CANDLES * MINUTE, toMs }));
}

/**
 * Upserts the live jobs of `live` as `jobs add` makes them (tickfleet reads its range from the
 * job), due at the page's last candle, and claims them as the scheduler does (a lease each, and
 * the job's unit lock handed to the run with that due time), so the units enqueued for them are
 * the scheduler's units in all but who enqueued them; no scheduler runs, so the only units are these.
 */
async function upsertLiveJobs(fleet: FleetHarness, live: Series[]): Promise<void> {
  await fleet.withStore(async (store) => {
    for (const s of live) await store.jobs.upsert({ venue: 'binance', type: 'ohlcv', symbol: s.symbol, timeframe: '1m', since: s.fromMs, nextRunAt: s.toMs });
    const wanted = new Set(live.map((s) => `binance:${s.symbol}:1m:ohlcv`));
    let claimed = 0;
    while (claimed < wanted.size) {
      const batch = await store.jobs.claimDue(Date.now(), 5000, 600_000);
      if (batch.length === 0) throw new Error(`claimed ${claimed} of ${wanted.size} live jobs`);
      claimed += batch.filter((j) => wanted.has(j.id)).length;
    }
  });
}

/**
 * Enqueues `units` on the running (not paused) queue and waits until the emulation served a
 * request for each and the queue is empty again (ground truth; BullMQ trims completed units).
 */
async function runThrough(
  queues: VenueQueues,
  mock: { stats(): { venues: Record<string, { requests: number } | undefined> } },
  units: QueuedUnit[],
  what: string,
): Promise<void> {
  const served0 = mock.stats().venues.binance?.requests ?? 0;
  await queues.enqueue(units);
  await waitFor(
    async () => {
      const c = await queues.counts('binance');
      if (c.failed > 0) throw new Error(`${what}: ${c.failed} units failed`);
      return (mock.stats().venues.binance?.requests ?? 0) - served0 >= units.length && c.waiting + c.prioritized + c.delayed + c.active === 0;
    },
    what,
    { timeoutMs: 600_000, intervalMs: 200 },
  );
}

/** One incremental unit per live job (the baseline reads the range from fromMs/toMs; tickfleet from the job's cursor). */
function liveUnits(ss: Series[]): QueuedUnit[] {
  return ss.map((s) => ({
    kind: 'incremental',
    venue: 'binance',
    jobId: `binance:${s.symbol}:1m:ohlcv`,
    fromMs: s.fromMs,
    toMs: s.toMs,
    dueAt: s.toMs,
    nextRunAt: s.toMs + 10 * 365 * 86_400_000,
    priority: 0,
    enqueuedAt: Date.now(),
  }));
}
/** The warm-up backfill of a run with `processes` workers: WARM_UNITS pages per process (BullMQ hands them to whichever process asks first). */
const warmSeries = (processes: number): Series => series('DOGE/USDT', WARM_UNITS * processes);

type System = 'baseline' | 'tickfleet';
interface Result {
  system: System;
  scenario: Scenario['name'];
  round: number;
  /** Worker processes of the run. */
  processes: number;
  units: number;
  seconds: number;
  unitsPerSec: number;
  workerCpuMsPerUnit: number;
  /** Each worker process's CPU over the window, ms: how the units spread over the processes. */
  processCpuMs: number[];
  /** CPU of this process (venue emulation, samplers) per unit. */
  benchCpuMsPerUnit: number;
  /** Samples of the queue's active count: value -> how many samples. */
  inflight: Record<number, number>;
  /** 'processedOn' unless finished units were trimmed from Redis (then the resume time). */
  startFrom: 'processedOn' | 'resume';
  /** The longest stretch of the window, ms (200 ms resolution), in which the emulation served no klines request. */
  servedStillMs: number;
  /**
   * redis-server over the window, per unit: the commands it served (INFO commandstats: every
   * client, the benchmark's own samplers and the commands Lua scripts run included), the five most
   * called, and its CPU, ms.
   */
  redis: { callsPerUnit: number; top: string; cpuMsPerUnit: number };
  /** The worker's warn and error log lines over the round (tickfleet; the baseline logs none). */
  warnings: string[];
  /** The worker's garbage collection over the round, ms per unit, by kind (tickfleet: its /metrics, summed over its processes; none for the baseline). */
  gcMsPerUnit?: Record<string, number>;
  /** The worker's young generation (V8's new space) at the start and end of the round, MiB (tickfleet; summed over its processes). */
  newSpaceMiB?: [number, number];
}

/**
 * From a worker's /metrics: seconds of garbage collection so far by kind (major, minor,
 * incremental, weakcb) and the young generation's size now (V8's new space, MiB).
 */
async function workerHeap(port: number): Promise<{ gcSeconds: Record<string, number>; newSpaceMiB: number }> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const gc = text.matchAll(/^tickfleet_nodejs_gc_duration_seconds_sum\{[^}]*kind="(\w+)"[^}]*\} ([\d.e+-]+)$/gm);
  const newSpace = /^tickfleet_nodejs_heap_space_size_total_bytes\{[^}]*space="new"[^}]*\} ([\d.e+-]+)$/m.exec(text);
  return { gcSeconds: Object.fromEntries([...gc].map((m) => [m[1]!, Number(m[2])])), newSpaceMiB: Number(newSpace?.[1] ?? NaN) / 2 ** 20 };
}

/**
 * Samples a count every 200 ms (never two reads at once); `stop` keeps the samples in [fromMs, toMs]
 * as a histogram, `longestStill` the longest stretch in it over which the count did not change.
 */
function sampler(read: () => Promise<number> | number): {
  stop: (fromMs: number, toMs: number) => Record<number, number>;
  longestStill: (fromMs: number, toMs: number) => number;
} {
  const samples: Array<[number, number]> = [];
  let busy = false;
  const timer = setInterval(() => {
    if (busy) return;
    busy = true;
    const at = Date.now();
    Promise.resolve()
      .then(read)
      .then((n) => samples.push([at, n]))
      .catch(() => undefined)
      .finally(() => (busy = false));
  }, 200);
  return {
    stop: (fromMs, toMs) => {
      clearInterval(timer);
      const hist: Record<number, number> = {};
      for (const [at, n] of samples) if (at >= fromMs && at <= toMs) hist[n] = (hist[n] ?? 0) + 1;
      return hist;
    },
    longestStill: (fromMs, toMs) => {
      clearInterval(timer);
      let longest = 0;
      let since: [number, number] | undefined;
      for (const [at, n] of samples) {
        if (at < fromMs || at > toMs) continue;
        if (since && n === since[1]) longest = Math.max(longest, at - since[0]);
        else since = [at, n];
      }
      return longest;
    },
  };
}

/** The units of a series as the CLI makes them (kind backfill, page-sized chunks). */
function unitsOf(s: Series, backfillId: string): QueuedUnit[] {
  const out: QueuedUnit[] = [];
  for (let t = s.fromMs, i = 0; t < s.toMs; t += PAGE_MS, i++) {
    out.push({
      kind: 'backfill',
      venue: 'binance',
      jobId: `binance:${s.symbol}:1m:ohlcv`,
      backfillId,
      fromMs: t,
      toMs: t + PAGE_MS,
      chunkIndex: i,
      priority: 0,
      enqueuedAt: Date.now(),
    });
  }
  return out;
}

/** Earliest processedOn and latest finishedOn of the completed units of `backfillIds` (or, for live units, of these job ids). */
async function jobTimes(queues: VenueQueues, backfillIds: Set<string>, units: number): Promise<{ first?: number; last?: number }> {
  const jobs = await queues.queue('binance').getJobs(['completed'], 0, -1);
  const mine = jobs.filter((j) => j !== undefined && (j.data.backfillId !== undefined ? backfillIds.has(j.data.backfillId) : backfillIds.has(j.data.jobId)));
  const last = mine.length ? Math.max(...mine.map((j) => j.finishedOn ?? 0)) : undefined;
  // BullMQ trims completed units beyond 1000 (UNIT_JOB_OPTIONS): then the first ones are gone.
  if (mine.length < units) return { last };
  return { first: Math.min(...mine.map((j) => j.processedOn ?? Infinity)), last };
}

function result(
  system: System,
  sc: Scenario,
  round: number,
  processes: number,
  startMs: number,
  endMs: number,
  /** CPU of each worker process over the window, ms. */
  cpuMs: number[],
  benchCpu: NodeJS.CpuUsage,
  inflight: Record<number, number>,
  startFrom: Result['startFrom'],
  /** What the round reports beyond rate and CPU: the emulation's longest pause, redis-server's work, and the worker's warnings and heap (tickfleet). */
  observed: Pick<Result, 'servedStillMs' | 'redis'> & Partial<Pick<Result, 'warnings' | 'gcMsPerUnit' | 'newSpaceMiB'>>,
): Result {
  const seconds = (endMs - startMs) / 1000;
  return {
    system,
    scenario: sc.name,
    round,
    processes,
    units: sc.units,
    seconds,
    unitsPerSec: sc.units / seconds,
    workerCpuMsPerUnit: cpuMs.reduce((a, b) => a + b, 0) / sc.units,
    processCpuMs: cpuMs,
    benchCpuMsPerUnit: (benchCpu.user + benchCpu.system) / 1000 / sc.units,
    inflight,
    startFrom,
    warnings: [],
    ...observed,
  };
}

/** Starts a window on redis-server's commands and CPU; the returned function ends it, per unit. */
async function redisWindow(conn: RedisClient): Promise<(units: number) => Promise<Result['redis']>> {
  const [calls0, cpu0] = await Promise.all([redisCalls(conn), redisCpuMs(conn)]);
  return async (units) => {
    const [calls1, cpu1] = await Promise.all([redisCalls(conn), redisCpuMs(conn)]);
    const calls = callsPerUnit(calls0, calls1, units);
    return { callsPerUnit: calls.total, top: calls.top, cpuMsPerUnit: (cpu1 - cpu0) / units };
  };
}

/** Where a worker's profile of the round `name` goes when profiling (`--cpu-prof DIR`). */
const profileFile = (name: string): string | undefined => (PROFILE_DIR ? join(PROFILE_DIR, `${name}.cpuprofile`) : undefined);
/** A round's profile name for worker `i` of `processes`: `<system>-<scenario>-r<round>`, with `-p<processes>-<i>` when more than one process. */
const runName = (system: System, sc: Scenario, round: number, processes: number, i: number): string =>
  `${system}-${sc.name}-r${round}${processes > 1 ? `-p${processes}-${i}` : ''}`;

/** Starts (first call) or stops and writes (second call) the worker's profile when profiling. */
async function toggleProfile(child: ChildProcess, name: string, stop: boolean): Promise<void> {
  if (!PROFILE_DIR) return;
  child.kill('SIGUSR2');
  if (stop) await waitFor(() => existsSync(join(PROFILE_DIR, `${name}.cpuprofile`)), `profile ${name}`, { timeoutMs: 30_000 });
}

async function runBaseline(sc: Scenario, round: number, processes: number): Promise<Result> {
  const redis = await startRedis();
  const mock = await startMockVenue({ scenario: SCENARIO as never });
  const dir = tempDir('tickfleet-hot-path-');
  const prefix = redis.namespace();
  const conn = createRedisConnection(redis.url, { blocking: false });
  const queues = new VenueQueues(conn, { prefix });
  const children: ChildProcess[] = [];
  const names = Array.from({ length: processes }, (_, i) => runName('baseline', sc, round, processes, i));
  try {
    let out = '';
    for (const name of names) {
      const child = spawn(
        process.execPath,
        ['--import', 'tsx', FIXTURE, redis.url, prefix, queueNameFor('binance'), mock.baseUrl('binance'), dir.file('data.db'), String(CAP)],
        { cwd: repoRoot(), env: { ...process.env, NODE_OPTIONS: '', ...workerEnv('', profileFile(name)) }, stdio: ['ignore', 'pipe', 'pipe'] },
      );
      children.push(child);
      child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
      child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
    }
    await waitFor(
      () => {
        const exited = children.find((c) => c.exitCode !== null);
        if (exited) throw new Error(`baseline worker exited ${exited.exitCode}: ${out}`);
        return out.split('"t":"ready"').length - 1 === processes;
      },
      'baseline workers ready',
      { timeoutMs: 30_000 },
    );
    const queue = queues.queue('binance');
    const warmUnits = WARM_UNITS * processes;
    await queues.enqueue(unitsOf(warmSeries(processes), 'warm'));
    await waitFor(async () => (await queues.counts('binance')).completed >= warmUnits, 'baseline warm-up', { timeoutMs: 120_000, intervalMs: 100 });
    if (sc.name === 'live' && LIVE_WARM > 0) await runThrough(queues, mock, liveUnits(liveSeries(LIVE_WARM_SYMBOLS)), 'baseline live warm-up');
    await queue.pause();
    const ids = new Set<string>();
    if (sc.name === 'live') {
      const units = liveUnits(liveSeries());
      for (const u of units) ids.add(u.jobId);
      await queues.enqueue(units);
    } else {
      for (const s of sc.series) {
        const id = `base-${s.symbol}`;
        ids.add(id);
        await queues.enqueue(unitsOf(s, id));
      }
    }
    const cpu = (): number[] => children.map((c) => procCpuMs(c.pid));
    const redis0 = await redisWindow(conn);
    const cpu0 = cpu();
    const bench0 = process.cpuUsage();
    const inflight = sampler(async () => (await queues.counts('binance')).active);
    const served = sampler(() => mock.stats().venues.binance?.requests ?? 0);
    for (const [i, c] of children.entries()) await toggleProfile(c, names[i]!, false);
    const resumedAt = Date.now();
    await queue.resume();
    await waitFor(
      async () => {
        const c = await queues.counts('binance');
        if (c.failed > 0) throw new Error(`baseline: ${c.failed} units failed: ${out}`);
        return c.waiting + c.prioritized + c.delayed + c.active === 0 && c.completed >= Math.min(1000, warmUnits + sc.units);
      },
      'baseline units completed',
      { timeoutMs: 1_800_000, intervalMs: 500 },
    );
    const cpuMs = cpu().map((ms, i) => ms - cpu0[i]!);
    const benchCpu = process.cpuUsage(bench0);
    const redisUse = await redis0(sc.units);
    for (const [i, c] of children.entries()) await toggleProfile(c, names[i]!, true);
    const times = await jobTimes(queues, ids, sc.units);
    if (times.last === undefined) throw new Error('baseline: completed units missing from Redis');
    const startMs = times.first ?? resumedAt;
    const hist = inflight.stop(startMs, times.last);
    const still = served.longestStill(startMs, times.last);
    return result('baseline', sc, round, processes, startMs, times.last, cpuMs, benchCpu, hist, times.first === undefined ? 'resume' : 'processedOn', {
      servedStillMs: still,
      redis: redisUse,
    });
  } finally {
    await Promise.all(
      children
        .filter((c) => c.exitCode === null)
        .map((c) => {
          const exited = new Promise((r) => c.once('exit', r));
          c.kill('SIGTERM');
          return exited;
        }),
    );
    await queues.close();
    conn.disconnect();
    await mock.stop();
    await redis.stop();
    dir.remove();
  }
}

/**
 * When the last of the backfills `ids` was done (the latest `updatedAt` of their records), each
 * waited for with FleetHarness.backfillDone (which fails at once on one that failed or was
 * cancelled, naming its counts and the workers' last warnings).
 */
async function backfillsDoneAt(fleet: FleetHarness, ids: string[], timeoutMs: number): Promise<number> {
  let last = 0;
  for (const id of ids) last = Math.max(last, (await fleet.backfillDone(id, `backfill ${id} done`, { timeoutMs, venue: 'binance' })).updatedAt);
  return last;
}

/**
 * Waits until every live unit is done (the queue holds none and each job ran once, its cursor at
 * the page's last candle: every candle stored before the cursor moved) and returns when the last
 * one finished (BullMQ's finishedOn, set after the job was completed in the store).
 */
async function waitLiveDone(fleet: FleetHarness, queues: VenueQueues, live: Series[]): Promise<number> {
  await waitFor(
    async () => {
      const c = await queues.counts('binance');
      if (c.failed > 0) throw new Error(`tickfleet: ${c.failed} live units failed`);
      return c.waiting + c.prioritized + c.delayed + c.active === 0;
    },
    'live units done',
    { timeoutMs: 1_800_000, intervalMs: 500 },
  );
  await fleet.withStore(async (store) => {
    for (const s of live) {
      const job = await store.jobs.get(`binance:${s.symbol}:1m:ohlcv`);
      if (job === null || job.cursor === null || job.cursor < s.toMs - MINUTE || job.stats.runs < 1)
        throw new Error(`tickfleet: ${s.symbol} not collected (cursor ${job?.cursor}, runs ${job?.stats.runs})`);
    }
  });
  const times = await jobTimes(queues, new Set(live.map((s) => `binance:${s.symbol}:1m:ohlcv`)), live.length);
  if (times.last === undefined) throw new Error('tickfleet: completed live units missing from Redis');
  return times.last;
}

/** A tickfleet worker's share of binance's cap (its local concurrency), from its /healthz. */
async function venueShare(port: number): Promise<number | undefined> {
  const health = (await (await fetch(`http://127.0.0.1:${port}/healthz`)).json()) as { venues?: Array<{ venue: string; localConcurrency: number }> };
  return health.venues?.find((v) => v.venue === 'binance')?.localConcurrency;
}

async function workerReady(proc: FleetProcess, port: number): Promise<void> {
  await waitFor(
    async () => {
      if (proc.child.exitCode !== null) throw new Error(`worker exited ${proc.child.exitCode}: ${proc.output()}`);
      const res = await fetch(`http://127.0.0.1:${port}/readyz`);
      return res.status === 200;
    },
    'tickfleet worker /readyz',
    { timeoutMs: 30_000, intervalMs: 100 },
  );
}

/** The sum over workers of what workerHeap reads (GC seconds by kind; young generations, MiB). */
async function workersHeap(ports: number[]): Promise<{ gcSeconds: Record<string, number>; newSpaceMiB: number }> {
  const heaps = await Promise.all(ports.map(workerHeap));
  const gcSeconds: Record<string, number> = {};
  for (const h of heaps) for (const [kind, sec] of Object.entries(h.gcSeconds)) gcSeconds[kind] = (gcSeconds[kind] ?? 0) + sec;
  return { gcSeconds, newSpaceMiB: heaps.reduce((sum, h) => sum + h.newSpaceMiB, 0) };
}

async function runTickfleet(sc: Scenario, round: number, processes: number): Promise<Result> {
  const fleet = await FleetHarness.start(SCENARIO);
  const conn = createRedisConnection(fleet.redis.url, { blocking: false });
  const queues = new VenueQueues(conn, { prefix: fleet.prefix });
  const names = Array.from({ length: processes }, (_, i) => runName('tickfleet', sc, round, processes, i));
  const workers: FleetProcess[] = [];
  try {
    // An hour's window, so its boundary guard (the last second, no request sent) almost never
    // falls in a measured round; with 10 s windows it stopped every unit for 0.5 s of every 10 s.
    await fleet.upsertConnector('binance', '--limit', '100000000', '--period', '1h', '--max-inflight', String(CAP * processes));
    const ports: number[] = [];
    for (const [i, name] of names.entries()) {
      const port = await freePort();
      ports.push(port);
      workers.push(
        fleet.spawn(`worker-${i}`, ['worker'], {
          LOG_LEVEL: 'warn',
          TICKFLEET_HEALTH_PORT: String(port),
          ...workerEnv(WORKER_NODE_OPTIONS, profileFile(name)),
        }),
      );
    }
    for (const [i, w] of workers.entries()) await workerReady(w, ports[i]!);
    // Each worker's local concurrency is its share of the cap over the venue's live workers,
    // counted at its connector refresh (every 5 s): measure once every one reports CAP in /healthz.
    await waitFor(async () => (await Promise.all(ports.map(venueShare))).every((share) => share === CAP), `every worker's share of the cap at ${CAP}`, {
      timeoutMs: 30_000,
      intervalMs: 200,
    });
    const warmSpan = warmSeries(processes);
    const warm = (JSON.parse(await fleet.backfill('binance', warmSpan.symbol, '1m', warmSpan.fromMs, warmSpan.toMs, '--json')) as { id: string }).id;
    await backfillsDoneAt(fleet, [warm], 120_000);
    if (sc.name === 'live' && LIVE_WARM > 0) {
      const warmLive = liveSeries(LIVE_WARM_SYMBOLS);
      await upsertLiveJobs(fleet, warmLive);
      await runThrough(queues, fleet.mock, liveUnits(warmLive), 'tickfleet live warm-up');
    }
    const queue = queues.queue('binance');
    await queue.pause();
    const ids: string[] = [];
    let live: Series[] = [];
    if (sc.name === 'live') {
      live = liveSeries();
      await upsertLiveJobs(fleet, live);
      const units = liveUnits(live);
      for (const u of units) ids.push(u.jobId);
      await queues.enqueue(units);
    } else {
      for (const s of sc.series) ids.push((JSON.parse(await fleet.backfill('binance', s.symbol, '1m', s.fromMs, s.toMs, '--json')) as { id: string }).id);
    }
    const heap0 = await workersHeap(ports);
    const logged = workers.map((w) => w.output().length);
    const cpu = (): number[] => workers.map((w) => procCpuMs(w.child.pid));
    const redis0 = await redisWindow(conn);
    const cpu0 = cpu();
    const bench0 = process.cpuUsage();
    const inflight = sampler(async () => (await queues.counts('binance')).active);
    const served = sampler(() => fleet.mock.stats().venues.binance?.requests ?? 0);
    for (const [i, w] of workers.entries()) await toggleProfile(w.child, names[i]!, false);
    const resumedAt = Date.now();
    await queue.resume();
    const lastDone = sc.name === 'live' ? await waitLiveDone(fleet, queues, live) : await backfillsDoneAt(fleet, ids, 1_800_000);
    const cpuMs = cpu().map((ms, i) => ms - cpu0[i]!);
    const benchCpu = process.cpuUsage(bench0);
    const redisUse = await redis0(sc.units);
    for (const [i, w] of workers.entries()) await toggleProfile(w.child, names[i]!, true);
    const times = await jobTimes(queues, new Set(ids), sc.units);
    const startMs = times.first ?? resumedAt;
    const hist = inflight.stop(startMs, lastDone);
    const still = served.longestStill(startMs, lastDone);
    const heap1 = await workersHeap(ports);
    const gcMsPerUnit = Object.fromEntries(
      Object.entries(heap1.gcSeconds).map(([kind, sec]) => [kind, ((sec - (heap0.gcSeconds[kind] ?? 0)) * 1000) / sc.units]),
    );
    const warnings = workers.flatMap((w, i) => warningLines(w.output().slice(logged[i])));
    return result('tickfleet', sc, round, processes, startMs, lastDone, cpuMs, benchCpu, hist, times.first === undefined ? 'resume' : 'processedOn', {
      servedStillMs: still,
      redis: redisUse,
      warnings,
      gcMsPerUnit,
      newSpaceMiB: [heap0.newSpaceMiB, heap1.newSpaceMiB],
    });
  } finally {
    await queues.close();
    conn.disconnect();
    await fleet.stop();
    if (LOG_DIR) for (const [i, w] of workers.entries()) writeFileSync(join(LOG_DIR, `${names[i]}.log`), w.output());
  }
}

const SCENARIO_LABELS: Record<Scenario['name'], string> = {
  single: '(a) one backfill',
  many: '(b) 8 backfills, 1 per symbol',
  live: `(c) live jobs, ${LIVE_CANDLES}-candle pages, 1 unit each`,
};

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
const fmt = (x: number, digits = 0): string => x.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });

const load0 = loadavg();
process.stderr.write(
  `hot-path: ${UNITS} units (many: ${ALL_SCENARIOS[1]!.units}, live: ${UNITS} jobs), ${ROUNDS} round(s), latency ${LATENCY_MS} ms, cap ${CAP} per process, processes ${PROCESSES.join(', ')}; load average ${load0.map((l) => l.toFixed(2)).join(' ')}\n`,
);
const results: Result[] = [];
for (let r = 1; r <= ROUNDS; r++) {
  for (const sc of SCENARIOS) {
    for (const n of PROCESSES) {
      for (const run of [runBaseline, runTickfleet]) {
        const res = await run(sc, r, n);
        results.push(res);
        process.stderr.write(
          `round ${r} ${sc.name} ${res.system}${n > 1 || PROCESSES.length > 1 ? ` x${n}` : ''}: ${fmt(res.unitsPerSec, 1)} units/s (${res.seconds.toFixed(2)} s), worker CPU ${res.workerCpuMsPerUnit.toFixed(1)} ms/unit` +
            (n > 1 ? ` (by process ${res.processCpuMs.map((ms) => (ms / 1000).toFixed(1)).join(' / ')} s)` : '') +
            ', ' +
            `longest stretch with no request served ${(res.servedStillMs / 1000).toFixed(1)} s, ` +
            `Redis ${res.redis.callsPerUnit.toFixed(1)} commands/unit (${res.redis.top}), redis-server CPU ${res.redis.cpuMsPerUnit.toFixed(2)} ms/unit, load ${loadavg()[0]!.toFixed(2)}` +
            (res.gcMsPerUnit
              ? `; worker GC ms/unit ${Object.entries(res.gcMsPerUnit)
                  .filter(([, ms]) => ms > 0)
                  .map(([kind, ms]) => `${kind} ${ms.toFixed(2)}`)
                  .join(', ')}, young generation ${res.newSpaceMiB?.map((m) => m.toFixed(1)).join(' -> ')} MiB`
              : '') +
            (res.warnings.length ? `; ${res.warnings.length} worker warnings, the last: ${res.warnings.at(-1)!.slice(0, 400)}` : '') +
            '\n',
        );
      }
    }
  }
}
const load1 = loadavg();

const pick = (sc: string, sys: System, n: number): Result[] => results.filter((x) => x.scenario === sc && x.system === sys && x.processes === n);
const summary = SCENARIOS.flatMap((sc) => PROCESSES.map((n) => ({ sc, n }))).map(({ sc, n }) => {
  const base = pick(sc.name, 'baseline', n);
  const tick = pick(sc.name, 'tickfleet', n);
  const ratios = tick.map((t, i) => t.unitsPerSec / base[i]!.unitsPerSec);
  const merge = (rs: Result[]): Record<number, number> => {
    const h: Record<number, number> = {};
    for (const x of rs) for (const [k, v] of Object.entries(x.inflight)) h[Number(k)] = (h[Number(k)] ?? 0) + v;
    return h;
  };
  return {
    scenario: sc.name,
    processes: n,
    units: sc.units,
    baselineUnitsPerSec: median(base.map((x) => x.unitsPerSec)),
    tickfleetUnitsPerSec: median(tick.map((x) => x.unitsPerSec)),
    ratioOfMedians: median(tick.map((x) => x.unitsPerSec)) / median(base.map((x) => x.unitsPerSec)),
    roundRatios: ratios,
    baselineCpuMsPerUnit: median(base.map((x) => x.workerCpuMsPerUnit)),
    tickfleetCpuMsPerUnit: median(tick.map((x) => x.workerCpuMsPerUnit)),
    baselineBenchCpuMsPerUnit: median(base.map((x) => x.benchCpuMsPerUnit)),
    tickfleetBenchCpuMsPerUnit: median(tick.map((x) => x.benchCpuMsPerUnit)),
    baselineInflight: merge(base),
    tickfleetInflight: merge(tick),
    baselineRedisCallsPerUnit: median(base.map((x) => x.redis.callsPerUnit)),
    tickfleetRedisCallsPerUnit: median(tick.map((x) => x.redis.callsPerUnit)),
    baselineRedisCpuMsPerUnit: median(base.map((x) => x.redis.cpuMsPerUnit)),
    tickfleetRedisCpuMsPerUnit: median(tick.map((x) => x.redis.cpuMsPerUnit)),
  };
});

const profile = (h: Record<number, number>): string => {
  const total = Object.values(h).reduce((a, b) => a + b, 0);
  const keys = [...new Set([0, 1, 2, 3, 4, ...Object.keys(h).map(Number)])].sort((a, b) => a - b);
  const mean = Object.entries(h).reduce((a, [k, v]) => a + Number(k) * v, 0) / (total || 1);
  return `${keys.map((k) => `${k}: ${total ? Math.round((100 * (h[k] ?? 0)) / total) : 0}%`).join(', ')} (mean ${mean.toFixed(2)}, ${total} samples)`;
};

console.log(
  `| scenario | processes | units | baseline units/s | tickfleet units/s | ratio tickfleet/baseline (per-round range) | worker CPU ms/unit baseline / tickfleet |`,
);
console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: |');
for (const s of summary) {
  console.log(
    `| ${SCENARIO_LABELS[s.scenario]} | ${s.processes} | ${s.units} | ${fmt(s.baselineUnitsPerSec, 1)} | ${fmt(s.tickfleetUnitsPerSec, 1)} | ${s.ratioOfMedians.toFixed(2)} (${Math.min(...s.roundRatios).toFixed(2)}-${Math.max(...s.roundRatios).toFixed(2)}) | ${s.baselineCpuMsPerUnit.toFixed(1)} / ${s.tickfleetCpuMsPerUnit.toFixed(1)} |`,
  );
}
console.log('');
for (const s of summary) {
  const x = PROCESSES.length > 1 ? ` x${s.processes}` : '';
  console.log(`in flight, ${s.scenario}${x}, baseline:  ${profile(s.baselineInflight)}`);
  console.log(`in flight, ${s.scenario}${x}, tickfleet: ${profile(s.tickfleetInflight)}`);
  console.log(
    `redis-server, ${s.scenario}${x}, baseline / tickfleet: ${s.baselineRedisCallsPerUnit.toFixed(1)} / ${s.tickfleetRedisCallsPerUnit.toFixed(1)} commands per unit, ` +
      `${s.baselineRedisCpuMsPerUnit.toFixed(2)} / ${s.tickfleetRedisCpuMsPerUnit.toFixed(2)} ms of its CPU per unit`,
  );
}
/**
 * With several process counts: each system's processes against the best of its smaller counts,
 * round by round (a round's n processes against the fastest smaller count of the same round), so
 * what this machine does to the hand-made worker as it scales stands beside what it does to tickfleet.
 */
const scaling: Array<{ scenario: string; system: System; processes: number; againstBestOfFewer: number[] }> = [];
if (PROCESSES.length > 1) {
  console.log('');
  for (const sc of SCENARIOS) {
    for (const system of ['baseline', 'tickfleet'] as const) {
      const parts: string[] = [];
      for (const n of PROCESSES) {
        const fewer = PROCESSES.filter((m) => m < n);
        const mine = pick(sc.name, system, n);
        const ratios = fewer.length
          ? mine.map((x) => x.unitsPerSec / Math.max(...fewer.map((m) => pick(sc.name, system, m).find((y) => y.round === x.round)!.unitsPerSec)))
          : [];
        if (ratios.length) scaling.push({ scenario: sc.name, system, processes: n, againstBestOfFewer: ratios });
        parts.push(
          `${n}: ${fmt(median(mine.map((y) => y.unitsPerSec)), 1)} units/s` +
            (ratios.length ? ` (against the best of fewer, by round: ${ratios.map((q) => q.toFixed(2)).join(', ')})` : ''),
        );
      }
      console.log(`processes, ${sc.name}, ${system}: ${parts.join('; ')}`);
    }
  }
}
console.log(
  `bench process CPU ms/unit (emulation + samplers), baseline / tickfleet: ${summary.map((s) => `${s.scenario} ${s.baselineBenchCpuMsPerUnit.toFixed(1)} / ${s.tickfleetBenchCpuMsPerUnit.toFixed(1)}`).join('; ')}`,
);
console.log(`load average at start ${load0.map((l) => l.toFixed(2)).join(' ')}, at end ${load1.map((l) => l.toFixed(2)).join(' ')}`);
console.log(
  JSON.stringify({
    bench: 'hot-path',
    units: UNITS,
    rounds: ROUNDS,
    latencyMs: LATENCY_MS,
    cap: CAP,
    processes: PROCESSES,
    loadavg: { start: load0, end: load1 },
    summary,
    scaling,
    results,
  }),
);
