/**
 * Scheduler throughput: claim + enqueue of 10 000 due jobs (10 venues x 1000) from a SQLite state
 * store into the venue queues, in units/s, against a baseline measured in the same run on the
 * same Redis: a bare `queue.addBulk` of the same units with the same options (ids, priorities,
 * trimming), no store and no duplicate check. Also reported: the store claim alone, and a rescan
 * (every lease expired, every unit still queued: all duplicates).
 *
 *   node --import tsx scripts/bench/scheduler.ts [--jobs 10000] [--venues 10] [--batch 500] [--rounds 3]
 *
 * Each round uses a fresh store file and a fresh key prefix; medians over the rounds are printed.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Job } from '@tickfleet/core';
import { createRedisConnection, VenueQueues } from '@tickfleet/queues';
import { openStore, type StateStore } from '@tickfleet/store';
import { createLogger, createRegistry } from '@tickfleet/telemetry';
import { startRedis, ManualClock } from '@tickfleet/testkit';
import { Scheduler } from '@tickfleet/scheduler';

const args = process.argv.slice(2);
const arg = (name: string, fallback: number): number => {
  const i = args.indexOf(`--${name}`);
  const v = i >= 0 ? Number(args[i + 1]) : NaN;
  return Number.isFinite(v) && v > 0 ? v : fallback;
};
const JOBS = arg('jobs', 10_000);
const VENUES = arg('venues', 10);
const BATCH = arg('batch', 500);
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

interface Round {
  schedulerUps: number;
  baselineUps: number;
  claimOnlyUps: number;
  rescanUps: number;
}

async function round(redisUrl: string, n: number): Promise<Round> {
  const dir = mkdtempSync(join(tmpdir(), 'tickfleet-bench-scheduler-'));
  const clock = new ManualClock(Date.UTC(2024, 0, 1, 0, 0, 30));
  const store = await openStore(`sqlite://${join(dir, 'state.db')}`, { clock });
  const conn = createRedisConnection(redisUrl, { blocking: false });
  try {
    await seed(store);
    const logger = createLogger({ role: 'bench', level: 'silent' });
    const scheduler = new Scheduler({
      store,
      redisUrl,
      prefix: `bench${n}s`,
      clock,
      logger,
      registry: createRegistry('bench', { defaultMetrics: false }),
      batchSize: BATCH,
      maxBatchesPerTick: Math.ceil(JOBS / BATCH) + 1,
      leaseMs: LEASE_MS,
    });

    // Scheduler: claim every due job and enqueue its unit, in one leader tick.
    let t0 = performance.now();
    const tick = await scheduler.tick();
    const schedulerMs = performance.now() - t0;
    if (tick.added !== JOBS) throw new Error(`expected ${JOBS} units, got ${JSON.stringify(tick)}`);

    // Rescan: leases expired, units still queued -> every one a duplicate, none added.
    clock.advance(LEASE_MS + 1);
    t0 = performance.now();
    const rescan = await scheduler.tick();
    const rescanMs = performance.now() - t0;
    if (rescan.added !== 0 || rescan.duplicates !== JOBS) throw new Error(`rescan added units: ${JSON.stringify(rescan)}`);

    // Claim only: the store's share of the work.
    clock.advance(LEASE_MS + 1);
    t0 = performance.now();
    let claimed = 0;
    for (;;) {
      const got = await store.jobs.claimDue(clock.now(), BATCH, LEASE_MS);
      claimed += got.length;
      if (got.length < BATCH) break;
    }
    const claimMs = performance.now() - t0;
    if (claimed !== JOBS) throw new Error(`claimed ${claimed}`);

    // Baseline: the same units, the same options, straight into BullMQ with addBulk.
    const jobs: Job[] = await store.jobs.list();
    const units = jobs.map((j) => scheduler.unitFor(j, clock.now()));
    const raw = new VenueQueues(conn, { prefix: `bench${n}b` });
    const byVenue = new Map<string, typeof units>();
    for (const u of units) byVenue.set(u.venue, [...(byVenue.get(u.venue) ?? []), u]);
    t0 = performance.now();
    for (const [venue, list] of byVenue) {
      for (let i = 0; i < list.length; i += BATCH) {
        await raw.queue(venue).addBulk(list.slice(i, i + BATCH).map((u) => ({ name: u.kind, data: u, opts: raw.optionsFor(u) })));
      }
    }
    const baselineMs = performance.now() - t0;

    await scheduler.stop();
    await raw.close();
    return {
      schedulerUps: JOBS / (schedulerMs / 1000),
      baselineUps: JOBS / (baselineMs / 1000),
      claimOnlyUps: JOBS / (claimMs / 1000),
      rescanUps: JOBS / (rescanMs / 1000),
    };
  } finally {
    await conn.quit();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const redis = await startRedis();
try {
  const rounds: Round[] = [];
  for (let n = 0; n < ROUNDS; n++) rounds.push(await round(redis.url, n));
  const base = median(rounds.map((r) => r.baselineUps));
  const rows: Array<[string, number]> = [
    ['baseline: queue.addBulk only', base],
    ['scheduler tick: claim + enqueue', median(rounds.map((r) => r.schedulerUps))],
    ['store claimDue only', median(rounds.map((r) => r.claimOnlyUps))],
    ['rescan: claim + all duplicates', median(rounds.map((r) => r.rescanUps))],
  ];
  console.log(`scheduler benchmark: ${JOBS} jobs, ${VENUES} venues, batch ${BATCH}, median of ${ROUNDS} rounds (node ${process.version})`);
  console.log('| case | units/s | vs baseline |');
  console.log('| --- | ---: | ---: |');
  for (const [name, ups] of rows) console.log(`| ${name} | ${Math.round(ups).toLocaleString('en-US')} | ${(ups / base).toFixed(2)}x |`);
} finally {
  await redis.stop();
}
