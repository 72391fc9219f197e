import type { RedisClient } from '@tickfleet/queues';
import { UnrecoverableError, Worker } from 'bullmq';
import { FleetVenueControl } from '@tickfleet/budget';
import { createRedisConnection, type QueuedUnit, VenueQueues } from '@tickfleet/queues';
import { openStore, type StateStore } from '@tickfleet/store';
import { runCli, spawnCli, startRedis, tempDir, waitFor, type TempDir, type TestRedis } from '@tickfleet/testkit';

let redis: TestRedis;
let dir: TempDir;
let prefix: string;
let store: StateStore;
let conn: RedisClient;
let queues: VenueQueues;
/** The fixed window the beforeEach spent 40 weight in: status reads it only while that window lasts. */
let grantWindowStartMs: number;

const env = (): Record<string, string | undefined> => ({
  REDIS_URL: redis.url,
  TICKFLEET_PREFIX: prefix,
  TICKFLEET_DASHBOARD_TOKEN: undefined,
  TICKFLEET_DASHBOARD_USER: undefined,
  TICKFLEET_DASHBOARD_PASSWORD: undefined,
});
const cli = (...args: string[]) => runCli(['--store', dir.sqliteUrl(), ...args], { env: env(), cwd: dir.path });

const units = (venue: string, n: number, now: number): QueuedUnit[] =>
  Array.from({ length: n }, (_, i) => ({
    kind: 'incremental',
    venue,
    jobId: `${venue}:X:1m:ohlcv`,
    dueAt: now - i * 60_000,
    nextRunAt: now + 60_000,
    enqueuedAt: now,
  }));

/** Takes one unit off the venue's queue with a real BullMQ worker and fails it. */
async function failOne(venue: string): Promise<string> {
  const connection = createRedisConnection(redis.url);
  const worker = new Worker(queues.queue(venue).name, null, { connection, prefix, autorun: false });
  try {
    const job = await worker.getNextJob('t');
    if (!job?.id) throw new Error('no unit to fail');
    await job.moveToFailed(new UnrecoverableError('no'), 't', false);
    return job.id;
  } finally {
    await worker.close();
    await connection.quit();
  }
}

beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await redis.stop();
});
beforeEach(async () => {
  dir = tempDir();
  prefix = redis.namespace();
  store = await openStore(dir.sqliteUrl());
  conn = createRedisConnection(redis.url, { blocking: false });
  queues = new VenueQueues(conn, { prefix });
  const base = { rateLimit: { policy: 'fixed-window' as const, limit: 100, periodMs: 60_000, headroom: 1 } };
  await store.connectors.upsert({ venue: 'binance', baseUrl: 'http://127.0.0.1:1', maxInflight: 6, ...base });
  await store.connectors.upsert({ venue: 'polygon', baseUrl: 'http://127.0.0.1:1', maxInflight: 2, ...base });
  const now = Date.now();
  await queues.enqueue([...units('binance', 4, now), ...units('polygon', 2, now)]);
  await queues.setGlobalConcurrency('binance', 6);
  const grant = await store.budgets.acquire('binance', 40);
  if (!grant.ok || grant.windowStartMs === undefined) throw new Error(`setup: budget refused ${JSON.stringify(grant)}`);
  grantWindowStartMs = grant.windowStartMs;
});

/**
 * The binance budget the status commands must show: 40 of 100 while the store's current window
 * is the one the 40 were spent in, 0 once it rolled over (a clock-minute boundary can fall
 * between the setup and the read on a busy machine). Derived from the store, not Date.now().
 */
const usedInWindow = (windowStartMs: number | null | undefined): number => (windowStartMs === grantWindowStartMs ? 40 : 0);
afterEach(async () => {
  await queues.close();
  await conn.quit();
  await store.close();
  dir.remove();
});

describe('tickfleet status / queues / units', () => {
  it('status --json is the collector output; the table shows budget, freeze cause and queue depth', async () => {
    await failOne('binance');
    const until = Date.now() + 600_000;
    await new FleetVenueControl(conn, { prefix }).freeze('polygon', until, '429');

    const res = await cli('status', '--json');
    expect(res.stderr).toBe('');
    expect(res.code).toBe(0);
    const status = JSON.parse(res.stdout) as { venues: Array<Record<string, unknown>>; totals: Record<string, number> };
    expect(status.venues.map((v) => v.venue)).toEqual(['binance', 'polygon']);
    expect(status.venues[0]).toMatchObject({
      status: 'active',
      maxInflight: 6,
      concurrency: { current: 6, min: 1, max: 6 },
      globalConcurrency: 6,
      freeze: null,
      queue: { prioritized: 3, failed: 1, active: 0 },
      runnable: 3,
      blocked: 0,
    });
    const budget = status.venues[0]!.budget as { used: number; limit: number; remaining: number; windowStartMs: number | null };
    const used = usedInWindow(budget.windowStartMs);
    expect(budget).toMatchObject({ used, limit: 100, remaining: 100 - used });
    expect(status.venues[1]).toMatchObject({ freeze: { cause: '429', untilMs: until }, runnable: 0, blocked: 2 });
    expect(status.totals).toMatchObject({ runnable: 3, blocked: 2, failed: 1, frozenVenues: 1 });

    const table = await cli('status');
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/^VENUE\s+STATE\s+BUDGET\s+FREEZE\s+CONC\/CAP/);
    // The table was read at some moment between these two store reads of the window.
    const after = await store.budgets.usage('binance');
    const tableUsed = usedInWindow(after?.windowStartMs) === 40 ? '40' : '(?:40|0)';
    expect(table.stdout).toMatch(new RegExp(`binance\\s+active\\s+${tableUsed}\\/100\\s+-\\s+6\\/6\\s+3\\s+0\\s+0\\s+1\\s+3\\s+0`));
    expect(table.stdout).toMatch(/polygon\s+active\s+0\/100\s+429 (9m\d+s|10m)\s+2\/2\s+2/);
  });

  it('status prints a cursor lag of days with days, as the dashboard does', async () => {
    const minute = 60_000;
    const cursor = Math.floor((Date.now() - 12 * 86_400_000) / minute) * minute;
    await store.jobs.upsert({ venue: 'binance', type: 'ohlcv', symbol: 'BTC/USDT', timeframe: '1m', since: cursor });
    await store.jobs.advanceCursor('binance:BTC/USDT:1m:ohlcv', cursor);
    const table = await cli('status');
    expect(table.code).toBe(0);
    // Lag = now - (cursor + 1m): just under 12 days, never 287h… as before.
    expect(table.stdout).toMatch(/\nbinance .*\s11d23h5\dm(\d+s)?\s/);
  });

  it('status and jobs list say how many jobs a scheduler lease holds and until when', async () => {
    const now = Date.now();
    for (const symbol of ['BTC/USDT', 'ETH/USDT']) await store.jobs.upsert({ venue: 'binance', type: 'ohlcv', symbol, timeframe: '1m', nextRunAt: now - 1000 });
    await store.jobs.upsert({ venue: 'polygon', type: 'ohlcv', symbol: 'AAPL', timeframe: '1d', nextRunAt: now + 3_600_000 });
    const until = now + 3_600_000;
    expect(await store.jobs.claimDue(now, 10, 3_600_000, 'epoch/scheduler-1')).toHaveLength(2);

    const json = JSON.parse((await cli('status', '--json')).stdout) as { venues: Array<{ venue: string; leases: unknown }> };
    expect(json.venues.map((v) => [v.venue, v.leases])).toEqual([
      ['binance', { jobs: 2, untilMs: until }],
      ['polygon', { jobs: 0, untilMs: null }],
    ]);
    const table = await cli('status');
    expect(table.code).toBe(0);
    expect(table.stdout).toContain('jobs held by a scheduler lease');
    expect(table.stdout).toMatch(new RegExp(`\\nbinance\\s+2\\s+${new Date(until).toISOString()} \\(in [0-9dhms]+\\)\\n`));
    expect(table.stdout).not.toMatch(/\npolygon\s+0\s/);

    const jobs = await cli('jobs', 'list');
    expect(jobs.stdout).toMatch(/^ID\s+ENABLED\s+PRIORITY\s+NEXT RUN\s+LEASED UNTIL\s+CURSOR/);
    expect(jobs.stdout).toMatch(new RegExp(`binance:BTC/USDT:1m:ohlcv\\s+yes\\s+0\\s+\\S+\\s+${new Date(until).toISOString()}\\s`));
    expect(jobs.stdout).toMatch(/polygon:AAPL:1d:ohlcv\s+yes\s+0\s+\S+\s+-\s/);
  });

  it('queues lists units by state, the rate-limit TTL and global concurrency per venue', async () => {
    await new FleetVenueControl(conn, { prefix }).freeze('polygon', Date.now() + 60_000, 'manual');
    const res = await cli('queues', '--json');
    expect(res.code).toBe(0);
    const rows = JSON.parse(res.stdout) as Array<Record<string, unknown> & { rateLimitTtlMs: number }>;
    expect(rows[0]).toEqual({
      venue: 'binance',
      queue: '{binance}',
      waiting: 0,
      prioritized: 4,
      active: 0,
      delayed: 0,
      failed: 0,
      completed: 0,
      rateLimitTtlMs: 0,
      globalConcurrency: 6,
    });
    expect(rows[1]).toMatchObject({ venue: 'polygon', prioritized: 2, globalConcurrency: null });
    expect(rows[1]!.rateLimitTtlMs).toBeGreaterThan(50_000);
    const table = await cli('queues');
    expect(table.stdout).toMatch(/^VENUE\s+WAITING\s+PRIORITIZED\s+ACTIVE\s+DELAYED\s+FAILED\s+COMPLETED\s+RATE-LIMIT TTL\s+GLOBAL CONC/);
    expect(table.stdout).toMatch(/binance\s+0\s+4\s+0\s+0\s+0\s+0\s+-\s+6/);
  });

  it('units retry-failed moves failed units back; units clean removes only those older than --older-than', async () => {
    const a = await failOne('binance');
    await failOne('binance');
    const retried = await cli('units', 'retry-failed', 'binance', '--json');
    expect(retried.code).toBe(0);
    expect(JSON.parse(retried.stdout)).toEqual({ venue: 'binance', queue: '{binance}', retried: 2, failedBefore: 2, failedAfter: 0 });
    expect(['waiting', 'prioritized']).toContain(await queues.queue('binance').getJobState(a));

    const failed = await failOne('binance');
    const young = await cli('units', 'clean', 'binance', '--older-than', '1d', '--json');
    expect(JSON.parse(young.stdout)).toMatchObject({ removed: { completed: 0, failed: 0 }, total: 0, olderThanMs: 86_400_000 });
    expect(await queues.queue('binance').getJobState(failed)).toBe('failed');

    await new Promise((r) => setTimeout(r, 20));
    const old = await cli('units', 'clean', 'binance', '--older-than', '10ms', '--state', 'failed', '--json');
    expect(JSON.parse(old.stdout)).toMatchObject({ removed: { failed: 1 }, total: 1 });
    expect(await queues.queue('binance').getJobState(failed)).toBe('unknown');
    // 4 units: 2 failed and retried, 1 failed and cleaned, 1 never taken.
    const left = await queues.counts('binance');
    expect(left.waiting + left.prioritized).toBe(3);
  });

  it('rejects bad arguments with an error naming the argument', async () => {
    const noAge = await cli('units', 'clean', 'binance');
    expect(noAge.code).toBe(2);
    expect(noAge.stderr).toMatch(/invalid --older-than/);
    expect((await cli('units', 'clean', 'binance', '--older-than', 'soon')).stderr).toMatch(/invalid --older-than/);
    expect((await cli('units', 'clean', 'binance', '--older-than', '1d', '--state', 'active')).stderr).toMatch(/invalid --state/);
    const badVenue = await cli('units', 'retry-failed', 'Bin Ance');
    expect(badVenue.code).toBe(2);
    expect(badVenue.stderr).toMatch(/invalid venue/);
    const noRedis = await runCli(['--store', dir.sqliteUrl(), 'queues'], { env: { ...env(), REDIS_URL: undefined }, cwd: dir.path });
    expect(noRedis.code).toBe(2);
    expect(noRedis.stderr).toMatch(/invalid configuration REDIS_URL/);
    const noCreds = await cli('dashboard', '--port', '0', '--allow-actions');
    expect(noCreds.code).toBe(2);
    expect(noCreds.stderr).toMatch(/invalid configuration TICKFLEET_DASHBOARD_TOKEN/);
  });

  it('dashboard serves the fleet status until SIGTERM, then exits 0', async () => {
    const child = spawnCli(['--store', dir.sqliteUrl(), 'dashboard', '--port', '0'], { env: env(), cwd: dir.path });
    let stdout = '';
    child.stdout?.on('data', (d: Buffer) => (stdout += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      const url = await waitFor(() => /dashboard listening on (http:\/\/\S+)/.exec(stdout)?.[1], 'the dashboard address', { timeoutMs: 30_000 });
      const status = (await (await fetch(`${url}/api/status`)).json()) as { venues: Array<{ venue: string; queue: { prioritized: number } }> };
      expect(status.venues.map((v) => [v.venue, v.queue.prioritized])).toEqual([
        ['binance', 4],
        ['polygon', 2],
      ]);
      const board = (await (await fetch(`${url}/queues/api/queues`)).json()) as { queues: Array<{ name: string }> };
      expect(board.queues.map((q) => q.name).sort()).toEqual(['{binance}', '{polygon}']);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
  });
});
