import { openStore } from '@tickfleet/store';
import { runCli, startRedis, tempDir, type TempDir, type TestRedis } from '@tickfleet/testkit';
import { runInProcess } from '../../test/fixtures/in-process-cli.js';

const RAN_AT = Date.UTC(2026, 0, 19, 12, 0, 0);

/**
 * What a connector's jobs say, shown with the connector as the connector design has it
 * (`jobs_count`, `active_jobs_count`, `last_job_run_time`): `connectors list` and `show` run in this
 * process (the command tree main.ts runs, a real SQLite store), `status`, which needs Redis, as the
 * real binary.
 */
describe('tickfleet connectors: job counts and last run', () => {
  let dir: TempDir;
  let store: string;

  /** Runs `tickfleet --store <store> <args>` in this process; what it printed on stdout. */
  async function cli(...args: string[]): Promise<string> {
    const { out, err } = await runInProcess(['--store', store, ...args]);
    if (err) throw err;
    return out;
  }

  beforeAll(async () => {
    dir = tempDir('cli-connectors-');
    store = dir.sqliteUrl('state.db');
    await cli('connectors', 'upsert', 'binance', '--base-url', 'http://127.0.0.1:1', '--limit', '1200');
    await cli('connectors', 'upsert', 'kraken', '--base-url', 'http://127.0.0.1:1', '--limit', '60');
    await cli('jobs', 'add', 'binance', 'ohlcv', 'BTC/USDT', '--timeframe', '1m');
    await cli('jobs', 'add', 'binance', 'ohlcv', 'ETH/USDT', '--timeframe', '1m');
    await cli('jobs', 'add', 'binance', 'ohlcv', 'SOL/USDT', '--timeframe', '1m');
    await cli('jobs', 'disable', 'binance:SOL/USDT:1m:ohlcv');
    // One run ended, as a worker records it (the store's clock stamps it).
    const s = await openStore(store, { clock: { now: () => RAN_AT, monotonic: () => 0 } });
    await s.jobs.complete('binance:ETH/USDT:1m:ohlcv', { nextRunAt: RAN_AT + 60_000 });
    await s.close();
  });
  afterAll(() => dir.remove());

  it('lists each connector with its jobs, enabled jobs and last run, in JSON and in the table', async () => {
    const list = JSON.parse(await cli('connectors', 'list', '--json')) as Array<Record<string, unknown>>;
    expect(list.map((c) => [c.venue, c.jobsCount, c.activeJobsCount, c.lastJobRunAt])).toEqual([
      ['binance', 3, 2, RAN_AT],
      ['kraken', 0, 0, null],
    ]);
    const table = await cli('connectors', 'list');
    expect(table).toMatch(/^VENUE\s+STATUS\s+.*\s+BASE URL\s+JOBS\s+LAST JOB RUN$/m);
    expect(table).toMatch(/^binance\s+active\s+.*\s+2\/3\s+2026-01-19T12:00:00\.000Z$/m);
    expect(table).toMatch(/^kraken\s+active\s+.*\s+0\/0\s+-$/m);
    expect(JSON.parse(await cli('connectors', 'show', 'binance', '--json'))).toMatchObject({
      venue: 'binance',
      rateLimit: { limit: 1200 },
      jobsCount: 3,
      activeJobsCount: 2,
      lastJobRunAt: RAN_AT,
    });
    expect(await cli('connectors', 'show', 'kraken')).toMatch(/^kraken\s+active\s+.*\s+0\/0\s+-$/m);
  });

  describe('with Redis', () => {
    let redis: TestRedis;
    beforeAll(async () => {
      redis = await startRedis();
    });
    afterAll(() => redis.stop());

    it('status shows them per venue, the last run as an age', async () => {
      const env = { REDIS_URL: redis.url, TICKFLEET_PREFIX: redis.namespace() };
      const json = await runCli(['--store', store, 'status', '--json'], { env, cwd: dir.path });
      expect(json.stderr).toBe('');
      const venues = (JSON.parse(json.stdout) as { venues: Array<Record<string, unknown>> }).venues;
      expect(venues.map((v) => [v.venue, v.jobsCount, v.activeJobsCount, v.lastJobRunAt])).toEqual([
        ['binance', 3, 2, RAN_AT],
        ['kraken', 0, 0, null],
      ]);
      const table = await runCli(['--store', store, 'status'], { env, cwd: dir.path });
      expect(table.stdout).toMatch(/^VENUE\s+STATE\s+.*\s+GAPS\s+JOBS\s+LAST RUN\s+WORKERS\s+HEALTH\s+LAST ERROR$/m);
      expect(table.stdout).toMatch(/^binance\s+active\s+.*\s+2\/3\s+\d+\S* ago\s+/m);
      expect(table.stdout).toMatch(/^kraken\s+active\s+.*\s+0\/0\s+-\s+/m);
    });
  });
});

describe('tickfleet connectors upsert: a venue with a documented limit', () => {
  let dir: TempDir;

  beforeAll(() => {
    dir = tempDir('cli-connectors-defaults-');
  });
  afterAll(() => dir.remove());

  async function upsert(store: string, ...args: string[]): Promise<{ rateLimit: Record<string, unknown> }> {
    const { out, err } = await runInProcess(['--store', store, 'connectors', 'upsert', ...args, '--json']);
    if (err) throw err;
    return JSON.parse(out) as { rateLimit: Record<string, unknown> };
  }

  it('xetra without --period (or --limit) gets its documented 5 per 2 s; other venues a 60 s period', async () => {
    const store = dir.sqliteUrl('defaults.db');
    expect((await upsert(store, 'xetra', '--base-url', 'http://127.0.0.1:1', '--limit', '5')).rateLimit).toMatchObject({ limit: 5, periodMs: 2000 });
    const other = dir.sqliteUrl('defaults-2.db');
    expect((await upsert(other, 'xetra', '--base-url', 'http://127.0.0.1:1')).rateLimit).toMatchObject({ limit: 5, periodMs: 2000 });
    expect((await upsert(other, 'binance', '--base-url', 'http://127.0.0.1:1', '--limit', '1200')).rateLimit).toMatchObject({ limit: 1200, periodMs: 60_000 });
    // An update keeps what the connector has.
    expect((await upsert(other, 'xetra', '--limit', '3')).rateLimit).toMatchObject({ limit: 3, periodMs: 2000 });
    await expect(upsert(other, 'kraken', '--base-url', 'http://127.0.0.1:1')).rejects.toThrow(/--limit/);
  });

  it('polymarket gets its documented sliding window, 1500 per 10 s; --policy still chooses', async () => {
    const store = dir.sqliteUrl('defaults-3.db');
    expect((await upsert(store, 'polymarket', '--base-url', 'http://127.0.0.1:1')).rateLimit).toEqual({
      policy: 'sliding-window',
      limit: 1500,
      periodMs: 10_000,
      headroom: 0.95,
    });
    expect((await upsert(store, 'binance', '--base-url', 'http://127.0.0.1:1', '--limit', '10')).rateLimit).toMatchObject({ policy: 'fixed-window' });
    expect((await upsert(store, 'binance', '--policy', 'sliding-window')).rateLimit).toMatchObject({ policy: 'sliding-window', limit: 10 });
  });

  it('limitless gets its documented pacing (one request per 400 ms, GCRA) and a cap of 2 without --limit', async () => {
    const store = dir.sqliteUrl('defaults-4.db');
    const created = await upsert(store, 'limitless', '--base-url', 'http://127.0.0.1:1');
    expect(created.rateLimit).toEqual({ policy: 'gcra', limit: 1, periodMs: 400, headroom: 1 });
    expect(created).toMatchObject({ maxInflight: 2 });
  });
});
