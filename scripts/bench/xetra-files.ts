/**
 * Xetra daily files at the real limits: 1,800 post-trade files downloaded and parsed through the
 * Xetra emulation (5 requests per 2 s per market, fixed 2 s windows), by worker-like consumers that
 * spend every request from the per-market fleet-wide budgets exactly as the fleet's workers do
 * (BudgetGate + ScopedBudgets in a private redis-server, connectors in a SQLite store, the adapter
 * with its 2 s / 4 s / 8 s backoff, a 429 after that freezing the venue through FleetVenueControl).
 * Reports the wall time against the proactive-limiter design's ~12 minutes (1,800 files at 150 a
 * minute) and against the ideal for the connector (files x spacing), and the 429 count.
 *
 *   node --import tsx scripts/bench/xetra-files.ts [--markets DETR] [--files 1800] [--scale 1]
 *       [--pacing even|burst] [--headroom 0.95] [--workers 2] [--concurrency 2]
 *
 * --markets  comma-separated; the files are split evenly across them (each market has its own limit,
 *            so four markets take a quarter of the time of one). Default DETR, the design's case.
 * --scale    a fraction of --files to run (0.1: 180 files, ~1.3 minutes) for a quick check; the
 *            full-length figure is for --scale 1 (about 12.6 minutes with one market). Every other
 *            setting stays real: limits, windows, spacing.
 * --headroom the connector's share of the limit: spacing = 2 s / (5 x headroom), 421 ms at 0.95.
 */
import { BudgetGate, FleetVenueControl, freezeEscalationFor, ScopedBudgets } from '@tickfleet/budget';
import { BudgetExhaustedError, type Pacing, RateLimitedError, systemClock } from '@tickfleet/core';
import { DEFAULT_SEED, startMockVenue, xetraFilesBetween, type XetraSource } from '@tickfleet/mock-venue';
import { createRedisConnection, type RedisClient } from '@tickfleet/queues';
import { openStore, type StateStore } from '@tickfleet/store';
import { createRegistry, registerMetric } from '@tickfleet/telemetry';
import { startRedis, tempDir } from '@tickfleet/testkit';
import { type FileRef, XetraAdapter, XETRA_DEFAULTS } from '@tickfleet/venues';

const args = process.argv.slice(2);
function arg(name: string, fallback: string): string {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && args[i + 1] !== undefined ? args[i + 1]! : fallback;
}
const MARKETS = arg('markets', 'DETR').split(',') as XetraSource[];
const FILES = Math.round(Number(arg('files', '1800')) * Number(arg('scale', '1')));
const PACING = arg('pacing', 'even') as Pacing;
const HEADROOM = Number(arg('headroom', '0.95'));
const WORKERS = Number(arg('workers', '2'));
const CONCURRENCY = Number(arg('concurrency', '2'));
if (!(FILES > 0) || !(HEADROOM > 0 && HEADROOM <= 1) || !(WORKERS > 0) || !(CONCURRENCY > 0) || !['even', 'burst'].includes(PACING)) {
  throw new Error(`bad arguments: ${args.join(' ')}`);
}
const DESIGN_MS = 12 * 60_000;
const MINUTE = 60_000;

/**
 * `FILES` file refs split evenly over the markets (each market's latest closed minutes with trades),
 * interleaved market by market, as units of the four markets would be in flight together.
 */
function pickFiles(): FileRef[] {
  const perMarket = Math.ceil(FILES / MARKETS.length);
  const toMs = Math.floor(Date.now() / MINUTE) * MINUTE - MINUTE;
  const byMarket = MARKETS.map((market) => {
    const names: string[] = [];
    for (let end = toMs; names.length < perMarket; end -= 24 * 60 * MINUTE) {
      names.unshift(...xetraFilesBetween(market, end - 24 * 60 * MINUTE, end, DEFAULT_SEED));
    }
    return names.slice(-perMarket).map((name): FileRef => ({ name, market, date: name.slice(market.length + 11, market.length + 21) }));
  });
  return Array.from({ length: perMarket }, (_, i) => byMarket.map((refs) => refs[i]!))
    .flat()
    .slice(0, FILES);
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, Math.max(0, ms)));
}

const redis = await startRedis();
const dir = tempDir('tickfleet-bench-xetra-');
const mock = await startMockVenue();
const prefix = redis.namespace();
const files = pickFiles();
const stores: StateStore[] = [];
const conns: RedisClient[] = [];
let retries429 = 0;
let freezes = 0;
let yields = 0;
let trades = 0;

try {
  for (let w = 0; w < WORKERS; w++) stores.push(await openStore(dir.sqliteUrl()));
  const connector = await stores[0]!.connectors.upsert({
    venue: 'xetra',
    baseUrl: mock.baseUrl('xetra'),
    rateLimit: { limit: XETRA_DEFAULTS.requests, periodMs: XETRA_DEFAULTS.periodMs, headroom: HEADROOM },
    pacing: PACING,
    freezeMs: 30_000,
  });
  const queue = [...files];
  const registry = createRegistry('worker', { defaultMetrics: false });
  const metrics = {
    requestSeconds: registerMetric(registry, 'tickfleet_request_duration_seconds'),
    responses: registerMetric(registry, 'tickfleet_responses_total'),
    budgetUsed: registerMetric(registry, 'tickfleet_budget_used'),
    budgetLimit: registerMetric(registry, 'tickfleet_budget_limit'),
    budgetYields: registerMetric(registry, 'tickfleet_budget_yields_total'),
    budgetWaits: registerMetric(registry, 'tickfleet_budget_waits_total'),
    fallbackActive: registerMetric(registry, 'tickfleet_budget_fallback_active'),
    budgetClockOffset: registerMetric(registry, 'tickfleet_budget_clock_offset_seconds'),
  };
  const gates: Array<{ adapter: XetraAdapter; control: FleetVenueControl }> = [];
  for (const store of stores) {
    const conn = createRedisConnection(redis.url, { connectionName: 'bench-xetra-files' });
    conns.push(conn);
    const control = new FleetVenueControl(conn, { prefix });
    await conn.ping();
    const scopes = new ScopedBudgets(conn, { connectors: store.connectors, prefix });
    const gate = new BudgetGate({ budgets: store.budgets, scopes, freezes: control, clock: systemClock, metrics });
    const adapter = new XetraAdapter({
      baseUrl: connector.baseUrl,
      pacing: 'off',
      hooks: { beforeRequest: (i) => gate.beforeRequest(i), afterResponse: (i) => gate.afterResponse(i) },
      onBackoff: () => void (retries429 += 1),
    });
    gates.push({ adapter, control });
  }
  const consume = async ({ adapter, control }: { adapter: XetraAdapter; control: FleetVenueControl }): Promise<void> => {
    for (let ref = queue.shift(); ref; ref = queue.shift()) {
      for (;;) {
        try {
          trades += (await adapter.fetchFile(ref)).trades.length;
          break;
        } catch (err) {
          if (err instanceof BudgetExhaustedError) {
            // A unit would yield its slot until then; here the consumer waits.
            yields += 1;
            await sleep(err.retryAtMs - Date.now());
          } else if (err instanceof RateLimitedError) {
            freezes += 1;
            const step = await control.onRateLimited('xetra', err.fromVenue ? err.retryAtMs : 0, '429', freezeEscalationFor(connector));
            await sleep(step.frozenUntilMs - Date.now());
          } else {
            throw err;
          }
        }
      }
    }
  };
  const t0 = performance.now();
  await Promise.all(gates.flatMap((g) => Array.from({ length: CONCURRENCY }, () => consume(g))));
  const wallMs = performance.now() - t0;

  const stats = mock.stats().venues.xetra;
  const spacingMs = ScopedBudgets.spacingMs(connector);
  // Even: one file per spacing. Burst: floor(limit x headroom) per period, the last batch at the start of its period.
  const perMarket = Math.ceil(FILES / MARKETS.length);
  const cap = Math.floor(XETRA_DEFAULTS.requests * HEADROOM + 1e-9);
  const idealMs = PACING === 'even' ? perMarket * spacingMs : (Math.ceil(perMarket / cap) - 1) * XETRA_DEFAULTS.periodMs;
  const min = (ms: number): string => `${(ms / 60_000).toFixed(2)} min`;
  console.log(
    `xetra files: ${FILES} files over ${MARKETS.join(',')}, pacing ${PACING}, headroom ${HEADROOM} (spacing ${spacingMs.toFixed(0)} ms), ${WORKERS} workers x ${CONCURRENCY}`,
  );
  console.log(
    '| files | markets | pacing | wall time | design (~12 min for 1,800) | ideal (what the budget allows) | ratio to ideal | 429s | retries after 429 | venue freezes | budget yields | trades |',
  );
  console.log('| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |');
  console.log(
    `| ${FILES} | ${MARKETS.join(', ')} | ${PACING} | ${min(wallMs)} | ${min((DESIGN_MS * FILES) / 1800)} | ${min(idealMs)} | ${(wallMs / idealMs).toFixed(3)} | ${stats.responses429} | ${retries429} | ${freezes} | ${yields} | ${trades} |`,
  );
  console.log('| market | requests | max per 2 s window (limit 5) | 429s (over its limit) |');
  console.log('| --- | --- | --- | --- |');
  for (const [market, s] of Object.entries(stats.scopes ?? {})) console.log(`| ${market} | ${s.requests} | ${s.maxWindowWeight} | ${s.overLimitRequests} |`);
} finally {
  await Promise.all(conns.map((c) => c.quit()));
  for (const s of stores) await s.close();
  await mock.stop();
  await redis.stop();
  dir.remove();
}
