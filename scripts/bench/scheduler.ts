/**
 * Scheduler throughput: one leader tick claiming every due job (10 venues, `--jobs` in all) from a
 * SQLite state store and enqueuing its unit, against a baseline measured in the same run on the
 * same Redis: a bare `queue.addBulk` of the same units with the same options (ids, priorities,
 * trimming), `--bulk` units per call, venue after venue — no store and no duplicate check. Also
 * reported: the store claim alone, and a rescan (every lease expired, every unit still queued: all
 * duplicates).
 *
 *   node --import tsx scripts/bench/scheduler.ts [--jobs 100000] [--venues 10] [--batch 5000] [--chunk 500] [--depth 8] [--bulk 500] [--rounds 3]
 *
 * `--batch`, `--chunk` and `--depth` default to the scheduler's own defaults (SCHEDULER_DEFAULTS).
 * Each round uses a fresh store file and fresh key prefixes; rounds alternate whether the baseline
 * or the tick runs first, so a neighbour's load on a shared machine falls on both. Printed: median
 * wall time per case, units/s, the median of the per-round ratios to the baseline, the CPU time of
 * this process and of redis-server per case, and the 1-minute load average before and after; on
 * stderr each round's tick and baseline with their CPU times and the load.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Job } from '@tickfleet/core';
import { createRedisConnection, VenueQueues, type QueuedUnit, type RedisClient } from '@tickfleet/queues';
import { openStore, type StateStore } from '@tickfleet/store';
import { createLogger, createRegistry } from '@tickfleet/telemetry';
import { startRedis, ManualClock } from '@tickfleet/testkit';
import { Scheduler, SCHEDULER_DEFAULTS, type TickResult } from '@tickfleet/scheduler';

const args = process.argv.slice(2);
const arg = (name: string, fallback: number): number => {
  const i = args.indexOf(`--${name}`);
  const v = i >= 0 ? Number(args[i + 1]) : NaN;
  return Number.isFinite(v) && v > 0 ? v : fallback;
};
const JOBS = arg('jobs', 100_000);
const VENUES = arg('venues', 10);
const BATCH = arg('batch', SCHEDULER_DEFAULTS.batchSize);
const CHUNK = arg('chunk', SCHEDULER_DEFAULTS.enqueueChunk);
const DEPTH = arg('depth', SCHEDULER_DEFAULTS.enqueueDepth);
const BULK = arg('bulk', 500);
const ROUNDS = arg('rounds', 3);
const LEASE_MS = 60_000;

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

async function seed(store: StateStore): Promise<void> {
  const perVenue = Math.ceil(JOBS / VENUES);
  for (let v = 0; v < VENUES; v++) {
    const venue = `venue${v}`;
    await store.connectors.upsert({ venue, baseUrl: `https://${venue}.example`, rateLimit: { limit: 1200, periodMs: 60_000 } });
    for (let i = 0; i < perVenue && v * perVenue + i < JOBS; i++) {
      await store.jobs.upsert({ venue, type: 'ohlcv', symbol: `S${i}/USDT`, timeframe: '1m' });
    }
  }
}

type Case = 'baseline' | 'tick' | 'claim' | 'rescan';
/** Wall time, this process's CPU time and redis-server's CPU time of one case, in ms. */
interface Cost {
  wall: number;
  cpu: number;
  redisCpu: number;
}
type Round = Record<Case, Cost>;

/** redis-server's own CPU time so far (INFO cpu), in ms. */
async function redisCpuMs(conn: RedisClient): Promise<number> {
  const info = await conn.info('cpu');
  const field = (name: string): number => Number(new RegExp(`${name}:([\\d.]+)`).exec(info)?.[1] ?? NaN);
  return (field('used_cpu_user') + field('used_cpu_sys')) * 1000;
}

async function measure(conn: RedisClient, fn: () => Promise<unknown>): Promise<Cost> {
  const redis0 = await redisCpuMs(conn);
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await fn();
  const wall = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  return { wall, cpu: (cpu.user + cpu.system) / 1000, redisCpu: (await redisCpuMs(conn)) - redis0 };
}

/**
 * The bare BullMQ cost: the same units and options, `BULK` per addBulk call, venue after venue, with
 * BullMQ's own addBulk (one script call per unit; `batchedAdds: false`).
 */
async function baseline(conn: RedisClient, queues: VenueQueues, units: QueuedUnit[]): Promise<Cost> {
  const byVenue = new Map<string, QueuedUnit[]>();
  for (const u of units) byVenue.set(u.venue, [...(byVenue.get(u.venue) ?? []), u]);
  return measure(conn, async () => {
    for (const [venue, list] of byVenue) {
      for (let i = 0; i < list.length; i += BULK) {
        await queues.queue(venue).addBulk(list.slice(i, i + BULK).map((u) => ({ name: u.kind, data: u, opts: queues.optionsFor(u) })));
      }
    }
  });
}

async function round(redisUrl: string, n: number): Promise<Round> {
  const dir = mkdtempSync(join(tmpdir(), 'tickfleet-bench-scheduler-'));
  const clock = new ManualClock(Date.UTC(2024, 0, 1, 0, 0, 30));
  const store = await openStore(`sqlite://${join(dir, 'state.db')}`, { clock });
  const conn = createRedisConnection(redisUrl, { blocking: false });
  const raw = new VenueQueues(conn, { prefix: `bench${n}b`, batchedAdds: false });
  try {
    await seed(store);
    const scheduler = new Scheduler({
      store,
      redisUrl,
      prefix: `bench${n}s`,
      clock,
      logger: createLogger({ role: 'bench', level: 'silent' }),
      registry: createRegistry('bench', { defaultMetrics: false }),
      batchSize: BATCH,
      enqueueChunk: CHUNK,
      enqueueDepth: DEPTH,
      maxBatchesPerTick: Math.ceil(JOBS / BATCH) + 1,
      leaseMs: LEASE_MS,
    });
    // The baseline's units are the ones the tick makes from the same jobs at the same time.
    const units = (await store.jobs.list()).map((j: Job) => scheduler.unitFor(j, clock.now()));
    const r: Partial<Round> = {};
    // Even rounds run the baseline first, odd rounds the tick: drift in the machine's load is shared.
    if (n % 2 === 0) r.baseline = await baseline(conn, raw, units);

    // Scheduler: claim every due job and enqueue its unit, in one leader tick.
    let tick: TickResult | undefined;
    r.tick = await measure(conn, async () => (tick = await scheduler.tick()));
    if (tick?.added !== JOBS) throw new Error(`expected ${JOBS} units, got ${JSON.stringify(tick)}`);

    if (n % 2 === 1) r.baseline = await baseline(conn, raw, units);

    // Rescan: leases expired, units still queued -> every one a duplicate, none added.
    clock.advance(LEASE_MS + 1);
    let rescan: TickResult | undefined;
    r.rescan = await measure(conn, async () => (rescan = await scheduler.tick()));
    if (rescan?.added !== 0 || rescan.duplicates !== JOBS) throw new Error(`rescan added units: ${JSON.stringify(rescan)}`);

    // Claim only: the store's share of the work.
    clock.advance(LEASE_MS + 1);
    let claimed = 0;
    r.claim = await measure(conn, async () => {
      for (;;) {
        const got = await store.jobs.claimDue(clock.now(), BATCH, LEASE_MS);
        claimed += got.length;
        if (got.length < BATCH) break;
      }
    });
    if (claimed !== JOBS) throw new Error(`claimed ${claimed}`);

    await scheduler.stop();
    return r as Round;
  } finally {
    await raw.close();
    await conn.quit();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const loadBefore = loadavg()[0]!;
const redis = await startRedis();
try {
  const rounds: Round[] = [];
  for (let n = 0; n < ROUNDS; n++) {
    rounds.push(await round(redis.url, n));
    const r = rounds[n]!;
    console.error(
      `round ${n + 1}: tick ${Math.round(r.tick.wall)} ms (CPU ${Math.round(r.tick.cpu)} + redis ${Math.round(r.tick.redisCpu)}), ` +
        `baseline ${Math.round(r.baseline.wall)} ms (CPU ${Math.round(r.baseline.cpu)} + redis ${Math.round(r.baseline.redisCpu)}), ` +
        `${(r.baseline.wall / r.tick.wall).toFixed(2)}x, ` +
        `1-min load ${loadavg()[0]!.toFixed(2)}`,
    );
  }
  const rows: Array<[string, Case]> = [
    ['baseline: queue.addBulk only', 'baseline'],
    ['scheduler tick: claim + enqueue', 'tick'],
    ['store claimDue only', 'claim'],
    ['rescan: claim + all duplicates', 'rescan'],
  ];
  console.log(
    `scheduler benchmark: ${JOBS} jobs, ${VENUES} venues, batch ${BATCH}, chunk ${CHUNK}, depth ${DEPTH}, baseline ${BULK} per addBulk, ` +
      `median of ${ROUNDS} rounds (node ${process.version}); ` +
      `1-min load ${loadBefore.toFixed(2)} before, ${loadavg()[0]!.toFixed(2)} after`,
  );
  console.log('| case | wall (ms) | units/s | vs baseline | this process CPU (ms) | redis-server CPU (ms) |');
  console.log('| --- | ---: | ---: | ---: | ---: | ---: |');
  const fmt = (x: number): string => Math.round(x).toLocaleString('en-US');
  for (const [name, c] of rows) {
    const ms = median(rounds.map((r) => r[c].wall));
    const ratio = median(rounds.map((r) => r.baseline.wall / r[c].wall));
    const cpu = median(rounds.map((r) => r[c].cpu));
    const redisCpu = median(rounds.map((r) => r[c].redisCpu));
    console.log(`| ${name} | ${fmt(ms)} | ${fmt(JOBS / (ms / 1000))} | ${ratio.toFixed(2)}x | ${fmt(cpu)} | ${fmt(redisCpu)} |`);
  }
} finally {
  await redis.stop();
}
