import { writeFileSync } from 'node:fs';
import { createRedisConnection } from '@tickfleet/queues';
import { openStore } from '@tickfleet/store';
import { freePort, runCli, startRedis, tempDir, type CliResult, type TempDir, type TestRedis } from '@tickfleet/testkit';

/** One fuzzed input: what is run, and how it must end. */
export interface BadInputCase {
  name: string;
  args: string[];
  env?: Record<string, string>;
  code: number;
  /** Fragment the one error line must contain (names the argument or variable). */
  message: RegExp;
}

/**
 * A small fleet state for fuzzing: SQLite store with two connectors and one job, a private
 * Redis namespace, and a file that is not a database. `dump()` is what must not change.
 */
export interface BadInputFleet {
  dir: TempDir;
  redis: TestRedis;
  prefix: string;
  storeUrl: string;
  notADatabase: string;
  /** A loopback port nothing listens on. */
  closedPort: number;
  env: Record<string, string>;
  run(args: string[], env?: Record<string, string>, timeoutMs?: number): Promise<CliResult>;
  dump(): Promise<string>;
  close(): Promise<void>;
}

export async function openBadInputFleet(): Promise<BadInputFleet> {
  const redis = await startRedis();
  const dir = tempDir('tickfleet-bad-input-');
  const prefix = redis.namespace();
  const storeUrl = dir.sqliteUrl('state.db');
  const notADatabase = dir.file('not-a-db.db');
  writeFileSync(notADatabase, 'this is not an SQLite database\n'.repeat(200));
  const closedPort = await freePort();
  const env = {
    REDIS_URL: redis.url,
    TICKFLEET_PREFIX: prefix,
    TICKFLEET_STORE_URL: storeUrl,
    TICKFLEET_SINK_URL: dir.sqliteUrl('data.db'),
    TICKFLEET_SPOOL_DIR: dir.file('spool'),
  };
  const run = (args: string[], extra: Record<string, string> = {}, timeoutMs = 90_000): Promise<CliResult> =>
    runCli(args, { cwd: dir.path, env: { ...env, ...extra }, timeoutMs });
  for (const args of [
    ['connectors', 'upsert', 'binance', '--base-url', 'http://127.0.0.1:1', '--limit', '1200', '--max-inflight', '4'],
    ['connectors', 'upsert', 'polygon', '--base-url', 'http://127.0.0.1:1', '--limit', '5', '--max-inflight', '1'],
    ['jobs', 'add', 'binance', 'ohlcv', 'BTC/USDT', '--timeframe', '1m', '--since', '2024-01-01'],
  ]) {
    const r = await run(args);
    if (r.code !== 0) throw new Error(`seeding ${args.join(' ')} failed: ${r.stderr}`);
  }
  const dump = async (): Promise<string> => {
    const store = await openStore(storeUrl);
    const client = createRedisConnection(redis.url, { blocking: false });
    try {
      const keys = (await client.keys(`${prefix}*`)).sort();
      return JSON.stringify(
        {
          connectors: await store.connectors.list(),
          jobs: await store.jobs.list(),
          backfills: await store.backfills.list(),
          gaps: await store.gaps.list(),
          universes: await store.universes.list(),
          streams: await store.streams.list(),
          redisKeys: keys,
        },
        null,
        1,
      );
    } finally {
      await store.close();
      client.disconnect();
    }
  };
  return {
    dir,
    redis,
    prefix,
    storeUrl,
    notADatabase,
    closedPort,
    env,
    run,
    dump,
    close: async () => {
      await redis.stop();
      dir.remove();
    },
  };
}

/**
 * Runs `fn` over `items` with at most `limit` at a time (the machine has 2 cores), except the
 * items `idle` picks: those wait out a bound doing nothing (an unreachable Redis: 10 s), so they
 * start at once beside the others instead of holding a slot each. Results in the items' order.
 */
export async function inBatches<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>, idle: (item: T) => boolean = () => false): Promise<R[]> {
  const out: R[] = new Array(items.length);
  const run = async (i: number): Promise<void> => {
    out[i] = await fn(items[i]!);
  };
  const indexes = items.map((_, i) => i);
  const pooled = indexes.filter((i) => !idle(items[i]!));
  let next = 0;
  await Promise.all([
    ...indexes.filter((i) => idle(items[i]!)).map(run),
    ...Array.from({ length: Math.min(limit, pooled.length) }, async () => {
      while (next < pooled.length) await run(pooled[next++]!);
    }),
  ]);
  return out;
}

/** The error output is one line (plus commander's usage hint), with no stack trace. */
export function expectOneLine(stderr: string): void {
  const lines = stderr.trim().split('\n');
  expect(lines.length).toBeLessThanOrEqual(2);
  expect(stderr).not.toMatch(/^\s+at /m);
}
