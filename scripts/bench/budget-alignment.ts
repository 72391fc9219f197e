/**
 * What a venue sees per clock window when 4 processes share one Redis budget: the Redis budget
 * (BudgetGate + rate-limiter-flexible keyed by clock window, the worker's path) against
 * rate-limiter-flexible used bare (RateLimiterRedis.consume on one key per venue: its windows
 * start at the key's first use). Both budget `limit` weight per `periodMs`; the venue emulation is
 * given a limit far above, so it refuses nothing and its per-window counter is the weight that
 * arrived in each of its clock windows.
 *
 *   node --import tsx scripts/bench/budget-alignment.ts [--duration-ms 10000] [--limit 50] [--period-ms 1000] [--pace-ms 0]
 *
 * --pace-ms: each request loop pauses a random 0..pace ms between requests (0: back to back).
 *
 * Redis: REDIS_URL if set, else a private redis-server (from PATH).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startMockVenue } from '@tickfleet/mock-venue';
import { openStore } from '@tickfleet/store';
import { startRedis } from '@tickfleet/testkit';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..');
const HAMMER = join(root, 'packages', 'budget', 'test', 'fixtures', 'redis-budget-hammer.ts');
const args = process.argv.slice(2);
const option = (name: string, fallback: number): number => (args.includes(name) ? Number(args[args.indexOf(name) + 1]) : fallback) || fallback;
const durationMs = option('--duration-ms', 10_000);
const limit = option('--limit', 50);
const periodMs = option('--period-ms', 1000);
const paceMs = args.includes('--pace-ms') ? Number(args[args.indexOf('--pace-ms') + 1]) || 0 : 0;
const PROCESSES = 4;
const LOOPS = 3;

/** Runs the processes; resolves with the weight-1 requests that arrived in a later window than granted (all processes). */
function runProcesses(mode: 'aligned' | 'bare', budgetUrl: string, storeUrl: string, prefix: string, baseUrl: string): Promise<number> {
  const children = Array.from({ length: PROCESSES }, () =>
    spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        HAMMER,
        mode,
        budgetUrl,
        storeUrl,
        prefix,
        baseUrl,
        String(limit),
        String(periodMs),
        String(durationMs),
        String(LOOPS),
        String(paceMs),
      ],
      { cwd: root, env: { ...process.env, NODE_OPTIONS: '' }, stdio: ['pipe', 'pipe', 'inherit'] },
    ),
  );
  let ready = 0;
  return Promise.all(
    children.map(
      (child) =>
        new Promise<number>((resolve, reject) => {
          let crossed = 0;
          child.stdout.on('data', (d: Buffer) => {
            for (const line of d.toString().split('\n').filter(Boolean)) {
              const msg = JSON.parse(line) as { t: string; crossed?: number };
              if (msg.t === 'ready' && ++ready === PROCESSES) for (const c of children) c.stdin.end('go\n');
              if (msg.t === 'done') crossed = msg.crossed ?? 0;
            }
          });
          child.once('close', (code) => (code === 0 ? resolve(crossed) : reject(new Error(`redis-budget-hammer exited ${code}`))));
        }),
    ),
  ).then((counts) => counts.reduce((a, b) => a + b, 0));
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'tickfleet-alignment-'));
  const redis = await startRedis();
  const mock = await startMockVenue({ scenario: { venues: { binance: { limit: { weight: 1_000_000_000, windowMs: periodMs } } } } });
  const rows: string[] = [];
  try {
    const storeUrl = `sqlite://${join(dir, 'state.db')}`;
    const store = await openStore(storeUrl);
    await store.connectors.upsert({ venue: 'binance', baseUrl: mock.baseUrl('binance'), rateLimit: { limit, periodMs, headroom: 1 } });
    await store.close();
    for (const mode of ['aligned', 'bare'] as const) {
      mock.reset();
      const startedAt = Date.now();
      const crossed = await runProcesses(mode, redis.url, storeUrl, redis.namespace(), mock.baseUrl('binance'));
      const endedAt = Date.now();
      const stats = mock.stats().venues.binance;
      // Windows wholly inside the run (the first and last are partial).
      const full = stats.windows.filter((w) => w.startMs >= startedAt && w.startMs + periodMs <= endedAt);
      const over = full.filter((w) => w.weight > limit);
      const max = Math.max(...full.map((w) => w.weight));
      const mean = full.reduce((s, w) => s + w.weight, 0) / full.length;
      const label =
        mode === 'aligned' ? 'Redis budget (BudgetGate + rate-limiter-flexible, clock windows)' : 'rate-limiter-flexible bare (consume, first-use windows)';
      rows.push(`| ${label} | ${full.length} | ${over.length} | ${max} | ${(max / limit).toFixed(2)}x | ${mean.toFixed(1)} | ${crossed} |`);
      process.stderr.write(`done: ${mode}\n`);
    }
  } finally {
    await mock.stop();
    await redis.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  process.stdout.write(
    [
      `${PROCESSES} processes x ${LOOPS} request loops (pause 0..${paceMs} ms between requests), budget ${limit} weight per ${periodMs} ms (weights 1 and 5), ${durationMs} ms per budget; counted by the venue emulation per clock window.`,
      '',
      '| budget | full windows | windows over the limit | max weight in one window | max / limit | mean weight per window | weight-1 requests that arrived a window late |',
      '| --- | ---: | ---: | ---: | ---: | ---: | ---: |',
      ...rows,
      '',
    ].join('\n'),
  );
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
