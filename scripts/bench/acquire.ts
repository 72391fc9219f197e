/**
 * Budget acquire benchmark: latency (p50/p99) and acquisitions/s with 1 and 4 processes, per
 * budget, each next to a baseline measured in the same run on the same server: the cheapest round
 * trip it has (`store.ping()`: `SELECT 1` on the same SQLite connection, the `ping` command on
 * MongoDB; a Redis PING for the Redis budgets). Ratios say what the budget operation costs on top
 * of a bare round trip. Budgets: SQLite and MongoDB (the store's), Redis (TICKFLEET_BUDGET_URL:
 * rate-limiter-flexible keyed by clock window, connectors read from SQLite), and
 * rate-limiter-flexible used bare (RateLimiterRedis.consume, no alignment, no connector lookup).
 *
 *   node --import tsx scripts/bench/acquire.ts [--duration-ms 3000] [--skip-mongo] [--skip-redis]
 *
 * MongoDB: MONGO_URL if set, else the in-repo wire test server started in this process (it then
 * shares the CPU with the worker processes; its figures are for the test server, not mongod).
 * Redis: REDIS_URL if set, else a private redis-server (from PATH) started for the run.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openStore } from '@tickfleet/store';
import { startRedis } from '@tickfleet/testkit';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..');
const WORKER = join(here, 'fixtures', 'acquire-worker.ts');
const args = process.argv.slice(2);
const durationMs = Number(args[args.indexOf('--duration-ms') + 1] ?? 3000) || 3000;
const skipMongo = args.includes('--skip-mongo');
const skipRedis = args.includes('--skip-redis');
const VENUE = 'benchvenue';

interface WorkerResult {
  ops: number;
  granted: number;
  /** Operations retried after a StoreUnavailableError (SQLite busy past its wait). */
  busy: number;
  p50Us: number;
  p99Us: number;
}

interface Target {
  adapter: string;
  /** Where acquire goes (see fixtures/acquire-worker.ts). */
  budget: 'store' | 'redis' | 'redis-bare';
  /** The state store (for the Redis budgets: where their connectors are read). */
  url: string;
  prefix: string;
  budgetUrl?: string;
}

function runWorkers(target: Target, mode: 'acquire' | 'ping', processes: number): Promise<WorkerResult[]> {
  const children = Array.from({ length: processes }, () =>
    spawn(process.execPath, ['--import', 'tsx', WORKER, mode, target.budget, target.url, VENUE, String(durationMs), target.prefix, target.budgetUrl ?? ''], {
      cwd: root,
      env: { ...process.env, NODE_OPTIONS: '' },
      stdio: ['pipe', 'pipe', 'inherit'],
    }),
  );
  let ready = 0;
  return Promise.all(
    children.map(
      (child) =>
        new Promise<WorkerResult>((resolve, reject) => {
          let buf = '';
          let result: WorkerResult | undefined;
          child.stdout.on('data', (d: Buffer) => {
            buf += d.toString();
            let nl: number;
            while ((nl = buf.indexOf('\n')) >= 0) {
              const line = JSON.parse(buf.slice(0, nl)) as { t: string } & WorkerResult;
              buf = buf.slice(nl + 1);
              if (line.t === 'ready' && ++ready === processes) for (const c of children) c.stdin.end('go\n');
              if (line.t === 'result') result = line;
            }
          });
          child.once('close', (code) => (code === 0 && result ? resolve(result) : reject(new Error(`acquire-worker exited ${code}`))));
        }),
    ),
  );
}

const fmt = (n: number, digits = 0): string => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

interface Row {
  adapter: string;
  processes: number;
  acquire: { perSec: number; p50Us: number; p99Us: number };
  baseline: { perSec: number; p50Us: number; p99Us: number };
  /** Acquires retried after a StoreUnavailableError, all processes together. */
  busy: number;
}

function summarize(results: WorkerResult[]): { perSec: number; p50Us: number; p99Us: number } {
  const ops = results.reduce((s, r) => s + r.ops, 0);
  // Per-process percentiles; the table shows the worst process (honest under contention).
  return { perSec: ops / (durationMs / 1000), p50Us: Math.max(...results.map((r) => r.p50Us)), p99Us: Math.max(...results.map((r) => r.p99Us)) };
}

async function benchTarget(target: Target): Promise<Row[]> {
  const store = await openStore(target.url, { collectionPrefix: target.budget === 'store' ? target.prefix : '' });
  // A limit no run can reach: every acquire takes the grant path, the expensive one.
  await store.connectors.upsert({ venue: VENUE, baseUrl: 'https://bench.example.com', rateLimit: { limit: 2_000_000_000, periodMs: 1000, headroom: 1 } });
  await store.close();
  const rows: Row[] = [];
  for (const processes of [1, 4]) {
    const baseline = summarize(await runWorkers(target, 'ping', processes));
    const acquireResults = await runWorkers(target, 'acquire', processes);
    const refused = acquireResults.reduce((s, r) => s + r.ops - r.granted, 0);
    if (refused > 0) throw new Error(`${refused} acquires were refused; the benchmark limit is too low`);
    rows.push({ adapter: target.adapter, processes, acquire: summarize(acquireResults), baseline, busy: acquireResults.reduce((s, r) => s + r.busy, 0) });
    process.stderr.write(`done: ${target.adapter} x${processes}\n`);
  }
  return rows;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'tickfleet-bench-'));
  const targets: Target[] = [{ adapter: 'sqlite', budget: 'store', url: `sqlite://${join(dir, 'state.db')}`, prefix: '' }];
  let stopMongo: (() => Promise<void>) | undefined;
  if (!skipMongo) {
    let url = process.env.MONGO_URL ?? '';
    let adapter = 'mongodb (MONGO_URL)';
    if (!url) {
      const { startMongoWire } = await import('@tickfleet/mongo-wire');
      const server = await startMongoWire();
      url = server.url;
      stopMongo = () => server.stop();
      adapter = 'mongodb (mongo-wire test server)';
    }
    targets.push({ adapter, budget: 'store', url, prefix: `bench${randomUUID().slice(0, 8)}_` });
  }
  let stopRedis: (() => Promise<void>) | undefined;
  if (!skipRedis) {
    const redis = await startRedis();
    stopRedis = () => redis.stop();
    const url = `sqlite://${join(dir, 'connectors.db')}`;
    targets.push(
      { adapter: 'redis (rate-limiter-flexible, clock windows)', budget: 'redis', url, prefix: redis.namespace(), budgetUrl: redis.url },
      { adapter: 'rate-limiter-flexible bare (consume, no alignment)', budget: 'redis-bare', url, prefix: redis.namespace(), budgetUrl: redis.url },
    );
  }
  const rows: Row[] = [];
  try {
    for (const t of targets) rows.push(...(await benchTarget(t)));
  } finally {
    await stopMongo?.();
    await stopRedis?.();
    rmSync(dir, { recursive: true, force: true });
  }
  const lines = [
    `Budget acquire, ${fmt(durationMs)} ms per run, weight 1, fixed-window, every acquire granted. Baseline: store.ping() (Redis budgets: a Redis PING) in the same processes.`,
    '',
    '| budget | processes | acquire/s | baseline ops/s | throughput ratio | acquire p50 µs | acquire p99 µs | baseline p50 µs | baseline p99 µs | p50 ratio |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...rows.map(
      (r) =>
        `| ${r.adapter} | ${r.processes} | ${fmt(r.acquire.perSec)} | ${fmt(r.baseline.perSec)} | ${fmt(r.acquire.perSec / r.baseline.perSec, 2)} | ${fmt(r.acquire.p50Us, 1)} | ${fmt(r.acquire.p99Us, 1)} | ${fmt(r.baseline.p50Us, 1)} | ${fmt(r.baseline.p99Us, 1)} | ${fmt(r.acquire.p50Us / r.baseline.p50Us, 1)}x |`,
    ),
  ];
  const busy = rows.filter((r) => r.busy > 0).map((r) => `${r.adapter} x${r.processes}: ${fmt(r.busy)}`);
  if (busy.length > 0) lines.push('', `Acquires retried after StoreUnavailableError (SQLite busy past its wait), counted in their sample: ${busy.join('; ')}.`);
  process.stdout.write(`${lines.join('\n')}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
